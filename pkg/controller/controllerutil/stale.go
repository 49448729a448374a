package controllerutil

import (
	"sync"
	"time"
)

// StaleVersionTTL bounds how long a cached object is distrusted after a write of ours; the
// informer normally shows the write within milliseconds.
const StaleVersionTTL = 5 * time.Second

// StaleVersions remembers, per key, the resourceVersion of a cached object that a write of
// ours replaced. Until the informer delivers the write, a sync of the key would work from the
// old object: its status write would fail with a conflict, and worse, it could repeat an
// action the write recorded. The zero value is ready to use.
type StaleVersions struct {
	m sync.Map // key → staleVersion
}

type staleVersion struct {
	resourceVersion string
	at              time.Time
}

// Replaced records that a write at now replaced the cached object of key at resourceVersion.
func (s *StaleVersions) Replaced(key, resourceVersion string, now time.Time) {
	s.m.Store(key, staleVersion{resourceVersion: resourceVersion, at: now})
}

// Stale reports whether the cached object of key, at resourceVersion, predates a write of ours
// made less than StaleVersionTTL before now. A newer version or an old record is forgotten.
func (s *StaleVersions) Stale(key, resourceVersion string, now time.Time) bool {
	v, ok := s.m.Load(key)
	if !ok {
		return false
	}
	stale := v.(staleVersion)
	if stale.resourceVersion == resourceVersion && now.Sub(stale.at) < StaleVersionTTL {
		return true
	}
	s.m.CompareAndDelete(key, v)
	return false
}

// Forget drops what is known about key (the object is gone).
func (s *StaleVersions) Forget(key string) { s.m.Delete(key) }
