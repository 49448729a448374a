package expectations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	tests := []struct {
		name        string
		run         func(e *Expectations, c *clocktesting.FakePassiveClock)
		wantAdds    int
		wantDeletes int
	}{
		{name: "nothing expected", run: func(*Expectations, *clocktesting.FakePassiveClock) {}},
		{
			name: "creation pending",
			run: func(e *Expectations, _ *clocktesting.FakePassiveClock) {
				e.ExpectCreations("ns/a", 2)
				e.CreationObserved("ns/a")
			},
			wantAdds: 1,
		},
		{
			name: "creations observed, never below zero",
			run: func(e *Expectations, _ *clocktesting.FakePassiveClock) {
				e.ExpectCreations("ns/a", 1)
				e.CreationObserved("ns/a")
				e.CreationObserved("ns/a")
			},
		},
		{
			name: "deletion observed once per object",
			run: func(e *Expectations, _ *clocktesting.FakePassiveClock) {
				e.ExpectDeletions("ns/a", "ns/x", "ns/y")
				e.DeletionObserved("ns/a", "ns/x")
				e.DeletionObserved("ns/a", "ns/x")
			},
			wantDeletes: 1,
		},
		{
			name: "expired expectations count as none",
			run: func(e *Expectations, c *clocktesting.FakePassiveClock) {
				e.ExpectCreations("ns/a", 1)
				c.SetTime(c.Now().Add(time.Hour))
			},
		},
		{
			name: "a new expectation after expiry starts from zero",
			run: func(e *Expectations, c *clocktesting.FakePassiveClock) {
				e.ExpectCreations("ns/a", 3)
				c.SetTime(c.Now().Add(time.Hour))
				e.ExpectCreations("ns/a", 1)
			},
			wantAdds: 1,
		},
		{
			name: "deleted key",
			run: func(e *Expectations, _ *clocktesting.FakePassiveClock) {
				e.ExpectCreations("ns/a", 1)
				e.Delete("ns/a")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clocktesting.NewFakePassiveClock(time.Now())
			e := NewWithClock(c, time.Minute)
			tt.run(e, c)
			adds, deletes := e.Pending("ns/a")
			assert.Equal(t, tt.wantAdds, adds)
			assert.Equal(t, tt.wantDeletes, deletes)
			assert.Equal(t, tt.wantAdds == 0 && tt.wantDeletes == 0, e.Satisfied("ns/a"))
		})
	}
}
