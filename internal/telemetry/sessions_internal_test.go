package telemetry

// SessionsOf is how many sessions t keeps, for the tests of the external
// package; call it after t.Flush.
func SessionsOf(t *Tracer) int { return len(t.sessions) }
