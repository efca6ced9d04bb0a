package tree

import "time"

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

// SetIdleLeaseTTL sets how long an idle hosted run's lease lasts; call it
// before the engine hosts anything.
func SetIdleLeaseTTL(e *Engine, ttl time.Duration) { e.o.IdleLeaseTTL = ttl }
