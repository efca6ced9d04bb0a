package envelope_test

// The golden transcripts' server, model, normalization and transcript
// files; the format and the replay are in golden_test.go, the cases in
// golden_cases_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/protocol/golden"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// goldenServer is one envelope server over pipes, with its raw output
// lines, in workspace ws under home.
type goldenServer struct {
	*testutil.Conn[string]
	home, ws string
}

// startGolden starts a server on a, the app of workspace ws under home.
func startGolden(t *testing.T, a *app.App, home, ws string) *goldenServer {
	t.Helper()
	serve := func(in io.Reader, out, diag io.Writer) error {
		return envelope.Serve(context.Background(), a, in, out, diag, envelope.Options{})
	}
	raw := func(line string) (string, error) { return line, nil }
	return &goldenServer{Conn: testutil.Serve(t, serve, raw), home: home, ws: ws}
}

// openGolden opens an app on a fresh home whose workspace holds files
// (path relative to the workspace → content), with its model at modelURL.
func openGolden(t *testing.T, modelURL string, files map[string]string) (a *app.App, home, ws string) {
	t.Helper()
	home = t.TempDir()
	ws = writeWorkspace(t, home, files)
	return reopenApp(t, modelURL, home, ws), home, ws
}

// homeLen is the length of a golden run's home (see fixedHome).
const homeLen = 120

// fixedHome returns a fresh directory whose path is homeLen characters
// long, so that the length of the system prompt, which names the
// workspace, is the same in every run (unless the temporary directory
// alone is longer).
func fixedHome(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	home := filepath.Join(base, strings.Repeat("h", max(1, homeLen-len(base)-1)))
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}

// writeWorkspace writes files (path relative to the workspace → content)
// into the workspace of home and returns its path.
func writeWorkspace(t *testing.T, home string, files map[string]string) string {
	t.Helper()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// treeResponder answers the main agent's model requests with main, in
// order, and node N's with nodes[N] as treetest.Responder does.
func treeResponder(main []llmtest.Turn, nodes treetest.Script) func(llmtest.Request) llmtest.Turn {
	node := treetest.Responder(nodes)
	next := 0 // the server calls its responder one request at a time
	return func(req llmtest.Request) llmtest.Turn {
		if treetest.NodeOf(req) != 0 {
			return node(req)
		}
		if next == len(main) {
			return llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: http.StatusBadRequest}}
		}
		next++
		return main[next-1]
	}
}

// hold keeps one model request from the model server until an output
// line matching until has arrived: the request of node (0: the main
// agent) that follows its turn-th assistant message, counted over its
// whole conversation (0: its first request).
type hold struct {
	node  int64
	turn  int
	until func(line) bool
}

// modelGate is an HTTP front of the model server. It passes every request
// on as it is, but one that a hold names only once the hold's line has
// arrived. A held request waits before the model server sees it, so it
// never delays another (the server answers one request at a time).
type modelGate struct {
	url     string
	holds   []hold
	open    []chan struct{}
	done    []bool // touched only by see, on the test goroutine
	matched []atomic.Bool
}

// startGate starts a gate in front of the model server at target.
func startGate(t *testing.T, target string, holds []hold) *modelGate {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &modelGate{holds: holds, done: make([]bool, len(holds)), matched: make([]atomic.Bool, len(holds))}
	for range holds {
		g.open = append(g.open, make(chan struct{}))
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	// A cancelled call is not the gate's failure: the app reports it.
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		node, turn := requestTurn(body)
		for i, h := range g.holds {
			if h.node != node || h.turn != turn {
				continue
			}
			g.matched[i].Store(true)
			select {
			case <-g.open[i]:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections() // held requests end with their connection
		hs.Close()
	})
	g.url = hs.URL
	return g
}

// see releases the requests whose hold waits for l. A nil gate holds
// nothing.
func (g *modelGate) see(l line) {
	if g == nil {
		return
	}
	for i, h := range g.holds {
		if !g.done[i] && h.until(l) {
			g.done[i] = true
			close(g.open[i])
		}
	}
}

// checkUsed fails for a hold that no request matched: the script no
// longer makes that request, and the hold orders nothing.
func (g *modelGate) checkUsed(t *testing.T) {
	t.Helper()
	if g == nil {
		return
	}
	for i, h := range g.holds {
		if !g.matched[i].Load() {
			t.Errorf("no model request of node %d after %d assistant messages came to be held", h.node, h.turn)
		}
	}
}

// requestTurn returns the node a model request body (the Anthropic API's)
// belongs to, found as treetest.NodeOf finds it (0: the main agent), and
// how many assistant messages its conversation holds; -1, -1 for a body
// that is no model request.
func requestTurn(body []byte) (node int64, turn int) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return -1, -1
	}
	first := llmtest.Request{Messages: []llm.Message{llm.UserText(string(req.Messages[0].Content))}}
	for _, m := range req.Messages {
		if m.Role == string(llm.RoleAssistant) {
			turn++
		}
	}
	return treetest.NodeOf(first), turn
}

// normalizer maps varying values to stable placeholders and back.
type normalizer struct {
	*golden.Placeholders
	sessions []string // real session ids, replaced inside any string
}

func newNormalizer(home string) *normalizer {
	return &normalizer{Placeholders: golden.NewPlaceholders(home)}
}

// idPattern matches the tool call ids the model server mints.
var idPattern = regexp.MustCompile(`^(toolu|call)_[A-Za-z0-9_-]{8,}$`)

// id is Placeholders.ID that also remembers session ids, which other
// strings (the /stats text) may contain.
func (n *normalizer) id(kind, v string) string {
	if kind == "session" && !n.Known(v) {
		n.sessions = append(n.sessions, v)
	}
	return n.ID(kind, v)
}

// normalize returns v (a decoded line, or part of one under key) with its
// varying values replaced.
func (n *normalizer) normalize(key string, v any) any {
	switch v := v.(type) {
	case golden.Object:
		o := make(golden.Object, len(v))
		for i, m := range v {
			o[i] = golden.Member{Key: m.Key, Value: n.normalize(m.Key, m.Value)}
		}
		return o
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = n.normalize("", x)
		}
		return a
	case string:
		switch {
		case v == "":
		case key == "updated_at" || key == "deadline":
			return "<time>"
		case key == "session_id":
			return n.id("session", v)
		case idPattern.MatchString(v):
			return n.id(idPattern.FindStringSubmatch(v)[1], v)
		default:
			for _, s := range n.sessions {
				v = strings.ReplaceAll(v, s, n.ID("session", s))
			}
			return n.HomeOut(v)
		}
	}
	return v
}

// anySeq replaces the seq of an envelope by "<seq>".
func anySeq(v any) any {
	if o, ok := v.(golden.Object); ok {
		for i, m := range o {
			if m.Key == "seq" {
				o[i].Value = "<seq>"
			}
		}
	}
	return v
}

// rawLine is the text of an in_raw entry: a string as it is, or an object
// {"prefix", "repeat", "count", "suffix"} standing for prefix, repeat
// count times and suffix, so that a line over the 1 MiB limit does not
// make a 1 MiB file.
func rawLine(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case golden.Object:
		var r struct {
			Prefix, Repeat, Suffix string
			Count                  int
		}
		b, err := golden.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			return "", err
		}
		return r.Prefix + strings.Repeat(r.Repeat, r.Count) + r.Suffix, nil
	}
	return "", fmt.Errorf("in_raw must be a string or a repeat object, got %s", golden.Show(v))
}
