package llmtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// sseEvent is one server-sent event; name is empty for OpenAI's data-only
// events.
type sseEvent struct {
	name string
	data []byte
}

func (e sseEvent) write(w io.Writer) error {
	var b bytes.Buffer
	if e.name != "" {
		b.WriteString("event: " + e.name + "\n")
	}
	b.WriteString("data: ")
	b.Write(e.data)
	b.WriteString("\n\n")
	_, err := w.Write(b.Bytes())
	return err
}

// stream sends a's events, flushing each, and applies fault. A stream
// fault (cut, malformed, stall) fires before event AfterEvents, clamped so
// that the final event is never sent first.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, f wireFormat, a answer, fault *Fault) {
	events := f.events(a)
	at, delay := -1, time.Duration(0)
	if fault != nil {
		switch fault.Kind {
		case FaultCut, FaultMalformed, FaultStall:
			at = min(fault.AfterEvents, len(events)-1)
		case FaultSlow:
			delay = fault.Delay.Std()
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	ctx := r.Context()
	for i, ev := range events {
		if i == at {
			switch fault.Kind {
			case FaultCut:
				cut(rc)
				return
			case FaultMalformed:
				_ = f.malformed().write(w)
				_ = rc.Flush()
				return
			case FaultStall:
				if !s.pause(ctx, fault.Stall.Std()) {
					cut(rc)
					return
				}
			}
		}
		if i > 0 && delay > 0 && !s.pause(ctx, delay) {
			cut(rc)
			return
		}
		if ev.write(w) != nil || rc.Flush() != nil {
			return
		}
	}
}

// reply sends a as one JSON body; faults apply to the whole body.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, f wireFormat, a answer, fault *Fault) {
	if fault != nil {
		rc := http.NewResponseController(w)
		switch fault.Kind {
		case FaultCut:
			cut(rc)
			return
		case FaultStall:
			if !s.pause(r.Context(), fault.Stall.Std()) {
				cut(rc)
				return
			}
		case FaultSlow:
			if !s.pause(r.Context(), fault.Delay.Std()) {
				cut(rc)
				return
			}
		case FaultMalformed:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"id":"broken","content":[`))
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.message(a))
}

// cut closes the client's connection abruptly: whatever was flushed has
// been sent, the rest of the response never comes.
func cut(rc *http.ResponseController) {
	conn, _, err := rc.Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the response instead.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// pause waits for d (forever when d <= 0) and reports whether it elapsed;
// it returns false as soon as the client goes away or the server closes,
// and the caller then cuts the connection so that an interrupted stream
// never looks complete.
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	var elapsed <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		elapsed = t.C
	}
	select {
	case <-elapsed:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}
