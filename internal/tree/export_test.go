package tree

import (
	"slices"
	"time"
)

// IsLive reports whether e has published run id in its live map.
func IsLive(e *Engine, id string) bool {
	_, ok := e.live.Load(id)
	return ok
}

// SetHeartbeat sets e's lease heartbeat and expiry; call it before the
// engine drives anything.
func SetHeartbeat(e *Engine, every time.Duration) {
	e.o.Heartbeat, e.o.LeaseTTL = every, ttlBeats*every
}

// AgentsHeld returns the node ids whose agents the live run id keeps.
func AgentsHeld(e *Engine, id string) []int64 {
	v, ok := e.live.Load(id)
	if !ok {
		return nil
	}
	r := v.(*run)
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int64, 0, len(r.agents))
	for id := range r.agents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// SetIdleLeaseTTL sets how long an idle hosted run's lease lasts; call it
// before the engine hosts anything.
func SetIdleLeaseTTL(e *Engine, ttl time.Duration) { e.o.IdleLeaseTTL = ttl }
