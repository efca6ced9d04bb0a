package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/arbor-run/arbor/internal/config"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

//go:embed assets
var assets embed.FS

// NewRun is what the new-run form and POST /api/runs ask for.
type NewRun struct {
	Goal      string  `json:"goal"`
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	MaxTokens int64   `json:"max_tokens,omitempty"`
}

// Steerer changes runs the way the command line does; Driver implements
// it with the engine, the run lease and the owner socket. (Seven methods:
// the six actions of the page, and Drives, which says whose events the
// bus carries; each action is one engine call, in whichever process
// drives the run.)
// Its errors wrap tree.ErrNotDriven, tree.ErrBadState,
// tree.ErrUnknownNode, agent.ErrUnknownInteraction,
// agent.ErrWrongResponse, store.ErrNotFound or a *store.LeaseHeldError,
// which the API maps to status codes.
type Steerer interface {
	// Start creates a run and drives it in this process; it returns the
	// run's id once the run is stored.
	Start(ctx context.Context, r NewRun) (string, error)
	// Resume drives an interrupted run in this process.
	Resume(ctx context.Context, runID string) error
	// Answer answers ask node id, as `arbor answer` does.
	Answer(ctx context.Context, runID string, id int64, text string) error
	// Control stops, pauses or resumes node id, in the process that
	// drives the run.
	Control(ctx context.Context, runID string, id int64, op tree.Op) (tree.NodeState, error)
	// Pending lists the run's pending approvals and questions, and
	// Resolve resolves one, in the process that drives the run.
	Pending(ctx context.Context, runID string) ([]agent.Interaction, error)
	Resolve(ctx context.Context, runID, iid string, r agent.Response) error
	// Drives reports whether this process drives run runID now, so its
	// changes come on the bus (else the server follows it through its
	// owner's socket, or in the store).
	Drives(runID string) bool
}

// Interactions are the pending approvals and questions of this process
// (POST /api/interactions/{iid}, and the run pages when there is no
// Steerer); *agent.Broker implements it.
type Interactions interface {
	Pending() []agent.Interaction
	Resolve(id string, r agent.Response) error
}

// Options configure a Server.
type Options struct {
	Store        store.Store
	Bus          *agent.Bus
	Interactions Interactions
	Steer        Steerer
	// Token, when set, is required on every request.
	Token string
	// QueueLen bounds each SSE client's queue of frames (default 256);
	// a client that falls further behind gets a resync frame.
	QueueLen int
}

// Server serves the pages, the API and the event stream. Start it with
// Handler under an http.Server; Close ends its event subscription and
// every stream.
type Server struct {
	o   Options
	hub *hub
	mux *http.ServeMux
}

// New returns a server; its hub subscribes to the bus at once.
func New(o Options) *Server {
	if o.QueueLen <= 0 {
		o.QueueLen = 256
	}
	s := &Server{o: o, mux: http.NewServeMux()}
	s.hub = newHub(o.Bus, o.Store, o.QueueLen, o.Steer)
	s.routes()
	return s
}

// Close stops the event stream: every SSE client is ended and the bus
// subscription closed. Safe to call twice.
func (s *Server) Close() { s.hub.close() }

// Clients is the number of event streams open now.
func (s *Server) Clients() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.hub.clients)
}

// Handler is the server's root handler.
func (s *Server) Handler() http.Handler { return s.withAuth(s.guard(s.mux)) }

func (s *Server) routes() {
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.pageRuns)
	s.mux.HandleFunc("GET /runs/{id}", s.pageRun)
	s.mux.HandleFunc("GET /runs/{id}/graph", s.fragmentGraph)
	s.mux.HandleFunc("GET /runs/{id}/nodes/{node}", s.pageNode)

	s.mux.HandleFunc("GET /api/runs", s.apiRuns)
	s.mux.HandleFunc("POST /api/runs", s.apiStart)
	s.mux.HandleFunc("GET /api/runs/{id}", s.apiRun)
	s.mux.HandleFunc("GET /api/runs/{id}/events", s.apiEvents)
	s.mux.HandleFunc("POST /api/runs/{id}/resume", s.apiResume)
	s.mux.HandleFunc("GET /api/runs/{id}/nodes/{node}", s.apiNode)
	s.mux.HandleFunc("POST /api/runs/{id}/nodes/{node}/answer", s.apiAnswer)
	s.mux.HandleFunc("POST /api/runs/{id}/nodes/{node}/{op}", s.apiControl)
	s.mux.HandleFunc("POST /api/runs/{id}/interactions/{iid}", s.apiResolve)
	s.mux.HandleFunc("POST /api/interactions/{iid}", s.apiResolve)
}

// guard refuses what a browser would send on another site's behalf: a
// POST that is not JSON (a plain form can be posted cross-site without a
// preflight) or whose Origin is not this server, and, without a token, a
// Host that is not loopback (DNS rebinding).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.o.Token == "" {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !Loopback(strings.Trim(host, "[]")) {
				writeError(w, http.StatusForbidden, fmt.Errorf("host %q is not loopback; serve with a token to be reached by name", r.Host))
				return
			}
		}
		if r.Method == http.MethodPost {
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				writeError(w, http.StatusUnsupportedMediaType, errors.New("POST bodies must be application/json"))
				return
			}
			if o := r.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					writeError(w, http.StatusForbidden, fmt.Errorf("origin %q is not this server", o))
					return
				}
			}
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:")
		next.ServeHTTP(w, r)
	})
}

// apiError is the body of every failed API call.
type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, apiError{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// statusOf maps an error of the store or the steerer to an HTTP status.
func statusOf(err error) int {
	var held *store.LeaseHeldError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, tree.ErrUnknownNode):
		return http.StatusNotFound
	case errors.As(err, &held), errors.Is(err, tree.ErrNotDriven), errors.Is(err, tree.ErrBadState),
		errors.Is(err, tree.ErrRunActive), errors.Is(err, tree.ErrHosted), errors.Is(err, agent.ErrUnknownInteraction), errors.Is(err, store.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrStopping),
		// The server's own configuration cannot run models: no request can
		// fix that (arbor serve says so at start).
		errors.Is(err, config.ErrNoModel), errors.Is(err, config.ErrMissingKey):
		return http.StatusServiceUnavailable
	case errors.Is(err, errBadRequest), errors.Is(err, agent.ErrWrongResponse), errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

var (
	errBadRequest = errors.New("bad request")
	errTooLarge   = errors.New("request body too large")
)
