package telemetry

// Handled waits until the Tracer has made the spans of every event
// published so far (not until they are exported).
func (t *Tracer) Handled() { t.sub.Flush() }
