package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
	"github.com/arbor-run/arbor/internal/web"
)

var (
	call     = treetest.Call
	calls    = treetest.Calls
	complete = treetest.Complete
)

// TestMain stops the throwaway PostgreSQL the postgres tests started.
func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	t      testing.TB
	ctx    context.Context
	llm    *llmtest.Server
	app    *app.App
	driver *web.Driver
	web    *web.Server
	http   *httptest.Server
	token  string
	ws     string
	env    map[string]string
}

type setupOpts struct {
	mode     string // permission mode (default trust)
	token    string
	queueLen int
	respond  func(llmtest.Request) llmtest.Turn
	store    string // ARBOR_STORE of the app and otherProcess; "" = a SQLite file
}

// setup opens an app on a fresh SQLite file (or o.store) with the scripted model
// server answering from s, and serves it over real HTTP.
func setup(t testing.TB, s treetest.Script, opts ...setupOpts) *bundle {
	t.Helper()
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.mode == "" {
		o.mode = "trust"
	}
	respond := o.respond
	if respond == nil {
		respond = treetest.Responder(s)
	}
	srv := llmtest.NewServerFunc(respond)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "test-key-123",
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home,
	}
	if o.store != "" {
		env["ARBOR_STORE"] = o.store
	}
	a, err := app.Open(context.Background(), app.Options{
		Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test", Mode: o.mode},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	d := web.NewDriver(web.DriverOptions{App: a})
	w := web.New(web.Options{Store: a.Store, Bus: a.Bus, Interactions: a.Broker, Steer: d, Token: o.token, QueueLen: o.queueLen})
	hs := httptest.NewServer(w.Handler())
	t.Cleanup(func() {
		d.Stop()
		w.Close()
		hs.Close()
	})
	return &bundle{t: t, ctx: context.Background(), llm: srv, app: a, driver: d, web: w, http: hs, token: o.token, ws: ws, env: env}
}

// otherProcess opens a second app on the same database and workspace,
// as another arbor process would.
func (b *bundle) otherProcess() *app.App {
	b.t.Helper()
	a, err := app.Open(context.Background(), app.Options{
		Workspace: b.ws, Getenv: func(k string) string { return b.env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test", Mode: "trust"},
	})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(a.Close)
	return a
}

// do sends a request with the bundle's token and decodes a JSON reply
// into out (when non-nil); it returns the status.
func (b *bundle) do(method, path string, body any, out any) int {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = strings.NewReader(string(j))
	}
	req, err := http.NewRequest(method, b.http.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("%s %s: %d %v\n%s", method, path, res.StatusCode, err, raw)
		}
	}
	return res.StatusCode
}

func (b *bundle) mustDo(method, path string, body, out any) {
	b.t.Helper()
	var raw json.RawMessage
	if code := b.do(method, path, body, &raw); code/100 != 2 {
		b.t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatal(err)
		}
	}
}

func (b *bundle) get(path string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.http.URL+path, nil)
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// sseFrame is one frame as a client reads it.
type sseFrame struct {
	ID    string
	Event string
	Data  string
}

// stream is a reading SSE client.
type stream struct {
	frames chan sseFrame
	body   io.Closer
	// seen holds the last frames next returned (read by the test's
	// goroutine only), for the message of a hang.
	seen []sseFrame
}

func (b *bundle) stream(run string) *stream {
	b.t.Helper()
	return b.streamQuery(run, "")
}

// streamQuery opens run's stream with a query string ("activity=all").
func (b *bundle) streamQuery(run, query string) *stream {
	b.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", b.http.URL+"/api/runs/"+run+"/events?"+query, nil)
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b.t.Fatalf("events: %d", res.StatusCode)
	}
	s := &stream{frames: make(chan sseFrame, 100000), body: res.Body}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.frames)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.Event != "" {
					s.frames <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, "id: "):
				f.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.Data = line[6:]
			}
		}
	}()
	b.t.Cleanup(func() { cancel(); res.Body.Close(); <-done })
	if f := s.next(b.t); f.Event != "hello" {
		b.t.Fatalf("first frame %+v, want hello", f)
	}
	return s
}

func (s *stream) next(t testing.TB) sseFrame {
	t.Helper()
	return s.nextFor(t, "a frame")
}

// nextFor is next; what names the frame awaited in the message of a hang,
// which also lists the last frames seen.
func (s *stream) nextFor(t testing.TB, what string) sseFrame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			t.Fatalf("stream ended waiting for %s; last frames:%s", what, s.last())
		}
		s.seen = append(s.seen, f)
		if len(s.seen) > 20 {
			s.seen = s.seen[1:]
		}
		return f
	case <-time.After(30 * time.Second): // hang guard
		t.Fatalf("no frame in 30s waiting for %s; last frames:%s", what, s.last())
	}
	return sseFrame{}
}

func (s *stream) last() string {
	var b strings.Builder
	for _, f := range s.seen {
		fmt.Fprintf(&b, "\n  %s %.300s", f.Event, f.Data)
	}
	return b.String()
}

// until reads frames until match accepts one and returns it.
func (s *stream) until(t testing.TB, what string, match func(sseFrame) bool) sseFrame {
	t.Helper()
	for {
		if f := s.nextFor(t, what); match(f) {
			return f
		}
	}
}

// nodeFrame reports whether f is a node frame of node id in state.
func nodeFrame(f sseFrame, id int64, state string) bool {
	if f.Event != "node" {
		return false
	}
	var nf web.NodeFrame
	if err := json.Unmarshal([]byte(f.Data), &nf); err != nil {
		return false
	}
	return nf.Node.ID == id && string(nf.Node.State) == state
}

func (b *bundle) run(id string) web.RunDetail {
	b.t.Helper()
	var d web.RunDetail
	b.mustDo("GET", "/api/runs/"+id, nil, &d)
	return d
}

func nodeOf(d web.RunDetail, id int64) web.NodeInfo {
	for _, n := range d.Nodes {
		if n.ID == id {
			return n
		}
	}
	return web.NodeInfo{}
}

// waitNode waits until node id of run is in state: already (read from the
// API after the stream opened) or on the stream.
// waitRunEnded returns once run has ended: at once when it had before
// s opened (its frame then never comes: a stream starts with a hello),
// else at its run frame.
func (b *bundle) waitRunEnded(s *stream, run string) {
	b.t.Helper()
	if store.RunStatus(b.run(run).Status).Terminal() {
		return
	}
	s.until(b.t, "run frame", func(f sseFrame) bool { return f.Event == "run" })
}

func (b *bundle) waitNode(s *stream, run string, id int64, state string) {
	b.t.Helper()
	if string(nodeOf(b.run(run), id).State) == state {
		return
	}
	s.until(b.t, fmt.Sprintf("#%d %s", id, state), func(f sseFrame) bool { return nodeFrame(f, id, state) })
}
