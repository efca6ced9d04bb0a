package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Server is a running scripted model server.
type Server struct {
	// URL is "http://127.0.0.1:PORT", without a trailing slash.
	URL string

	hs *httptest.Server
	fn func(Request) Turn
	// done is closed by Close; it releases stalled and slow handlers.
	done      chan struct{}
	closeOnce sync.Once

	// fnMu serializes calls of fn (and the recording that precedes them), so
	// fn sees requests one at a time and in recorded order.
	fnMu sync.Mutex

	mu       sync.Mutex // guards the fields below
	turns    []Turn     // unconsumed scripted turns
	requests []Request  // every model request, in arrival order (unless forget)
	count    int        // model requests received
	// forget is set for Serve's servers, which live as long as the arbor
	// process using them: they count requests but do not keep them.
	forget    bool
	arrived   chan struct{} // closed and replaced whenever a request is recorded
	stopWatch func() bool   // stops Serve's context watch; nil otherwise
}

// NewServer starts a server on 127.0.0.1 that answers with turns, in order.
func NewServer(turns ...Turn) *Server {
	return start(nil, nil, turns)
}

// NewServerFunc starts a server that answers each request with fn(req).
// Turns added with Push are served first. fn is called one request at a
// time, in the order the requests are recorded.
func NewServerFunc(fn func(Request) Turn) *Server {
	return start(nil, fn, nil)
}

// Serve validates script and serves it on addr (e.g. "127.0.0.1:0") until
// ctx ends or Close is called. The app uses it for --model script:FILE.
func Serve(ctx context.Context, addr string, script Script) (*Server, error) {
	if err := script.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("llmtest: listening on %s: %w", addr, err)
	}
	s := start(ln, nil, script.Turns)
	stop := context.AfterFunc(ctx, s.Close)
	s.mu.Lock()
	s.stopWatch = stop
	s.forget = true
	s.mu.Unlock()
	return s, nil
}

func start(ln net.Listener, fn func(Request) Turn, turns []Turn) *Server {
	s := &Server{fn: fn, done: make(chan struct{}), turns: slices.Clone(turns), arrived: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.handleModel(anthropic{}))
	mux.HandleFunc("POST /v1/chat/completions", s.handleModel(openai{}))
	mux.HandleFunc("POST /chat/completions", s.handleModel(openai{}))
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /models", s.handleModels)
	mux.HandleFunc("/", s.handleUnknown)
	s.hs = httptest.NewUnstartedServer(mux)
	if ln != nil {
		_ = s.hs.Listener.Close() // the default loopback listener is replaced
		s.hs.Listener = ln
	}
	s.hs.Start()
	s.URL = s.hs.URL
	return s
}

// Close stops the server. It does not wait for stalled or slow streams: it
// releases them and closes every client connection first. Safe to call
// more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		stop := s.stopWatch
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
		close(s.done)
		s.hs.CloseClientConnections()
		s.hs.Close()
	})
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Requests returns every model request received, in order (none for a
// server started by Serve, which does not keep them).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Remaining returns the number of unconsumed scripted turns.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

// record appends req and returns its 1-based number.
func (s *Server) record(req Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recordLocked(req)
}

// recordLocked appends req, wakes WaitRequests and returns req's number.
// s.mu must be held.
func (s *Server) recordLocked(req Request) int {
	s.count++
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	close(s.arrived)
	s.arrived = make(chan struct{})
	return s.count
}

// WaitRequests blocks until at least n model requests have been recorded
// (the n-th is then being answered) or the server is closed. Tests use it
// to act while a client is inside a model call, without sleeping.
func (s *Server) WaitRequests(n int) {
	for {
		s.mu.Lock()
		if s.count >= n {
			s.mu.Unlock()
			return
		}
		ch := s.arrived
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.done:
			return
		}
	}
}

// take records req and returns the turn that answers it and the request's
// 1-based number; ok is false when the script is exhausted.
func (s *Server) take(req Request) (t Turn, n int, ok bool) {
	if s.fn != nil {
		s.fnMu.Lock()
		defer s.fnMu.Unlock()
	}
	s.mu.Lock()
	n = s.recordLocked(req)
	if len(s.turns) > 0 {
		t = s.turns[0]
		s.turns = s.turns[1:]
		s.mu.Unlock()
		return t, n, true
	}
	s.mu.Unlock()
	if s.fn == nil {
		return Turn{}, n, false
	}
	return s.fn(req), n, true
}

// wireFormat is one of the two API dialects the server speaks. It has more
// methods than a seam usually should because it is a closed, internal set
// of two encoders, not a point of extension.
type wireFormat interface {
	name() string
	decode(body []byte, r *Request) error
	resolve(t Turn, r Request) (answer, error)
	message(a answer) []byte
	events(a answer) []sseEvent
	malformed() sseEvent
	errorBody(status int, msg string) []byte
	requestIDHeader() string
}

func (s *Server) handleModel(f wireFormat) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := Request{Format: f.name(), Path: r.URL.Path, Header: r.Header.Clone()}
		body, err := io.ReadAll(r.Body)
		req.Body = body
		if err == nil {
			err = f.decode(body, &req)
		}
		if err != nil {
			req.DecodeErr = err
			n := s.record(req)
			s.fail(w, f, n, http.StatusBadRequest, fmt.Sprintf("llmtest: request %d: cannot decode %s request body: %v", n, f.name(), err), 0)
			return
		}
		if msg, param, code := refusal(req); msg != "" {
			// The API refuses it before any model sees it: no turn.
			n := s.record(req)
			s.refuse(w, f, n, msg, param, code)
			return
		}
		turn, n, ok := s.take(req)
		if !ok {
			// A script's mistakes are not worth a retry: "x-should-retry:
			// false", which the official SDKs and arbor honour.
			w.Header().Set("x-should-retry", "false")
			s.fail(w, f, n, http.StatusInternalServerError, fmt.Sprintf("llmtest: script exhausted after %d requests", n-1), 0)
			return
		}
		if err := turn.Validate(); err != nil {
			w.Header().Set("x-should-retry", "false")
			s.fail(w, f, n, http.StatusInternalServerError, fmt.Sprintf("llmtest: request %d: %v", n, err), 0)
			return
		}
		if turn.Expect != "" {
			if last := req.LastUserText(); !strings.Contains(last, turn.Expect) {
				s.fail(w, f, n, http.StatusBadRequest, fmt.Sprintf("llmtest: request %d: expected the last user message to contain %q, but it was %q", n, turn.Expect, clip(last, 500)), 0)
				return
			}
		}
		if fl := turn.Fault; fl != nil {
			switch fl.Kind {
			case FaultRateLimit:
				s.fail(w, f, n, cmp(fl.Status, http.StatusTooManyRequests), fmt.Sprintf("llmtest: request %d: scripted rate limit", n), cmp(fl.RetryAfter, 1))
				return
			case FaultServer:
				s.fail(w, f, n, cmp(fl.Status, http.StatusInternalServerError), fmt.Sprintf("llmtest: request %d: scripted server error", n), fl.RetryAfter)
				return
			}
		}
		a, err := f.resolve(turn, req)
		if err != nil {
			s.fail(w, f, n, http.StatusInternalServerError, fmt.Sprintf("llmtest: request %d: %v", n, err), 0)
			return
		}
		w.Header().Set(f.requestIDHeader(), requestID(n))
		if req.Stream {
			s.stream(w, r, f, a, turn.Fault)
		} else {
			s.reply(w, r, f, a, turn.Fault)
		}
	}
}

// fail answers with an error body in f's format; retryAfter > 0 adds a
// Retry-After header (seconds).
func (s *Server) fail(w http.ResponseWriter, f wireFormat, n, status int, msg string, retryAfter int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(f.requestIDHeader(), requestID(n))
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(f.errorBody(status, msg))
}

// refuse answers 400 with the body the real API sends for a request
// past one of its limits (limits.go).
func (s *Server) refuse(w http.ResponseWriter, f wireFormat, n int, msg, param, code string) {
	var e any
	if f.name() == FormatOpenAI {
		var oe oaError
		oe.Error.Message, oe.Error.Type = msg, "invalid_request_error"
		if param != "" {
			oe.Error.Param = ptr(param)
		}
		if code != "" {
			oe.Error.Code = ptr(code)
		}
		e = oe
	} else {
		var ae antError
		ae.Type, ae.Error.Type, ae.Error.Message = "error", "invalid_request_error", msg
		e = ae
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(f.requestIDHeader(), requestID(n))
	w.WriteHeader(http.StatusBadRequest)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "> 100", as the API writes it
	_ = enc.Encode(e)
}

func (s *Server) handleUnknown(w http.ResponseWriter, r *http.Request) {
	var f wireFormat = openai{}
	if isAnthropic(r) {
		f = anthropic{}
	}
	s.fail(w, f, 0, http.StatusNotFound, fmt.Sprintf("llmtest: no route for %s %s (serves POST /v1/messages, POST /v1/chat/completions, GET /v1/models)", r.Method, r.URL.Path), 0)
}

// isAnthropic tells the Anthropic SDK's requests apart on shared paths.
func isAnthropic(r *http.Request) bool {
	return r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != ""
}

func requestID(n int) string { return "req_llmtest_" + strconv.Itoa(n) }

// cmp returns v, or def when v is zero.
func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
