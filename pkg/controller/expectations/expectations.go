// Package expectations remembers the writes a controller made that its informers have not
// shown yet, so a worker acting on a stale cache neither creates twice nor mistakes an object
// it just deleted for one still running. The idea is kube-controller-manager's
// ControllerExpectations, reduced to what Hangar's controllers need.
package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// DefaultTTL is how long an expectation is trusted. An informer that has not delivered an
// event after this long has missed it (a watch that was re-listed, a write that failed after
// the server accepted it), and the controller falls back to its cache.
const DefaultTTL = 5 * time.Minute

type record struct {
	adds      int
	deletes   sets.Set[string]
	timestamp time.Time
}

// Expectations tracks, per controller key, the creations and deletions not yet observed.
type Expectations struct {
	mu      sync.Mutex
	records map[string]*record
	clock   clock.PassiveClock
	ttl     time.Duration
}

// New returns an empty set of expectations with DefaultTTL.
func New() *Expectations {
	return NewWithClock(clock.RealClock{}, DefaultTTL)
}

// NewWithClock is New with a clock and a time-to-live, for tests.
func NewWithClock(c clock.PassiveClock, ttl time.Duration) *Expectations {
	return &Expectations{records: map[string]*record{}, clock: c, ttl: ttl}
}

func (e *Expectations) get(key string) *record {
	r := e.records[key]
	if r == nil || e.clock.Since(r.timestamp) > e.ttl {
		r = &record{deletes: sets.New[string]()}
		e.records[key] = r
	}
	return r
}

// ExpectCreations records that n objects are about to be created for key.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.get(key)
	r.adds += n
	r.timestamp = e.clock.Now()
}

// CreationObserved records that the informer showed one created object, or that a create
// failed and will never be shown.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil && r.adds > 0 {
		r.adds--
	}
}

// ExpectDeletions records that the objects with the given keys are about to be deleted.
func (e *Expectations) ExpectDeletions(key string, objectKeys ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.get(key)
	r.deletes.Insert(objectKeys...)
	r.timestamp = e.clock.Now()
}

// DeletionObserved records that an object is gone (or going: marked for deletion), or that
// its delete failed.
func (e *Expectations) DeletionObserved(key, objectKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		r.deletes.Delete(objectKey)
	}
}

// Pending reports the creations and deletions still expected for key; expired expectations
// count as none.
func (e *Expectations) Pending(key string) (adds, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil || e.clock.Since(r.timestamp) > e.ttl {
		return 0, 0
	}
	return r.adds, r.deletes.Len()
}

// Satisfied reports whether the cache shows every write made for key.
func (e *Expectations) Satisfied(key string) bool {
	adds, deletes := e.Pending(key)
	return adds <= 0 && deletes == 0
}

// Delete forgets key, when its controller object is gone.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}
