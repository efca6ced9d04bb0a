package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/arbor-run/arbor/internal/tree"
)

// Stream timing.
const (
	// writeTimeout drops a client whose connection takes no bytes for
	// this long (it stopped reading): its handler returns.
	writeTimeout = 10 * time.Second
	// keepAlive is how often an idle stream gets a comment line, so
	// proxies and the client see it is alive.
	keepAlive = 15 * time.Second
	// batchBytes bounds one write of queued frames.
	batchBytes = 64 << 10
	// flushEvery is the least time between two writes of a stream: frames
	// that come sooner wait for the next write, so a busy run costs each
	// client one write and flush per interval instead of one per frame
	// (the page shows them a few milliseconds later).
	flushEvery = 25 * time.Millisecond
)

// apiEvents streams a run's frames ("/api/runs/-/events": every run's).
// Activity frames come only with ?activity=all or ?activity=NODE. It
// writes only on the request's goroutine; the hub never waits for it.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	run := r.PathValue("id")
	var activity int64
	switch a := r.URL.Query().Get("activity"); a {
	case "", "none":
	case "all":
		activity = -1
	default:
		id, err := tree.ParseID(a)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("activity %q: want all, none or a node id", a))
			return
		}
		activity = id
	}
	if run == "-" {
		run = ""
	} else if _, err := s.o.Store.GetRun(r.Context(), run); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	c := s.hub.join(run, activity)
	if c == nil {
		writeError(w, http.StatusServiceUnavailable, errors.New("server is shutting down"))
		return
	}
	defer s.hub.leave(c)
	if run != "" {
		defer s.hub.watch(r.Context(), c)()
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	s.pump(r.Context().Done(), c, write)
}

// pump writes c's frames with write until done, the hub closes or a
// write fails: first a hello, then each frame in order; when c fell
// behind, a resync instead of what it missed.
func (s *Server) pump(done <-chan struct{}, c *client, write func([]byte) bool) {
	if !write(encodeFrame(s.o.Bus.Seq(), "hello", HelloFrame{Seq: s.o.Bus.Seq()})) {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	hold := time.NewTimer(flushEvery)
	defer hold.Stop()
	var buf []byte
	var last time.Time // of the last write of frames
	for {
		// A lag is handled before the frames queued after it, so the
		// client rereads the run before it applies newer frames.
		if c.takeLag() {
			drain(c.ch)
			seq := s.o.Bus.Seq()
			if !write(encodeFrame(seq, "resync", ResyncFrame{Seq: seq})) {
				return
			}
		}
		select {
		case <-done:
			return
		case <-s.hub.done:
			return
		case <-tick.C:
			if !write([]byte(": keep-alive\n\n")) {
				return
			}
		case <-c.kick:
		case f := <-c.ch:
			// Frames queued behind it, and those that come until
			// flushEvery after the last write, go out in the same write:
			// a burst costs one write and flush, not one per frame. The
			// queue is drained meanwhile, so holding never makes it lag.
			buf = append(buf[:0], f.data...)
			if wait := time.Until(last.Add(flushEvery)); wait > 0 {
				hold.Reset(wait)
			collect:
				for len(buf) < batchBytes {
					select {
					case f := <-c.ch:
						buf = append(buf, f.data...)
					case <-hold.C:
						break collect
					case <-done:
						return
					case <-s.hub.done:
						return
					}
				}
				hold.Stop()
			}
			for more := true; more && len(buf) < batchBytes; {
				select {
				case f := <-c.ch:
					buf = append(buf, f.data...)
				default:
					more = false
				}
			}
			if !write(buf) {
				return
			}
			last = time.Now()
		}
	}
}

// drain empties ch: what the client missed is replaced by a resync.
func drain(ch chan frame) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
