package controllerutil

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStaleVersions(t *testing.T) {
	var s StaleVersions
	now := time.Now()
	assert.False(t, s.Stale("ns/a", "1", now), "nothing written")

	s.Replaced("ns/a", "1", now)
	assert.True(t, s.Stale("ns/a", "1", now.Add(time.Second)), "the cache still shows the replaced version")
	assert.False(t, s.Stale("ns/b", "1", now), "per key")
	assert.False(t, s.Stale("ns/a", "2", now.Add(time.Second)), "the write arrived")
	assert.False(t, s.Stale("ns/a", "1", now.Add(time.Second)), "and the record is gone")

	s.Replaced("ns/a", "3", now)
	assert.False(t, s.Stale("ns/a", "3", now.Add(StaleVersionTTL)), "distrust expires: a write that changed nothing never arrives")

	s.Replaced("ns/a", "4", now)
	s.Forget("ns/a")
	assert.False(t, s.Stale("ns/a", "4", now))
}
