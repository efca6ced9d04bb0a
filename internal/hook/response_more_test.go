package hook_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tool"
)

// ccMoreRecord is testdata/claude-code-post-tool-use-more.json: what the
// real Claude Code CLI gave a settings file's PostToolUse command hook
// for its Glob, Grep, TodoWrite and WebFetch calls.
type ccMoreRecord struct {
	Files map[string]string `json:"files"`
	// Mtimes are the files' modification times, in seconds after
	// 2026-01-01T00:00:00Z: Glob lists the oldest first.
	Mtimes map[string]int `json:"mtimes"`
	// Pages are what the web server served, by path.
	Pages map[string]string `json:"pages"`
	Calls []struct {
		ToolName     string          `json:"tool_name"`
		ToolInput    json.RawMessage `json:"tool_input"`
		ToolResponse map[string]any  `json:"tool_response"`
	} `json:"calls"`
}

// ccByType are the fields of a tool's tool_response compared by JSON type
// only, with why they differ: a duration, and WebFetch's result, which is
// a small model's answer to the prompt in Claude Code and the page's text
// in arbor.
var ccByType = map[string][]string{
	"Glob":     {"durationMs"},
	"WebFetch": {"durationMs", "result"},
}

// replayable is the call's input for arbor's tool, false when arbor's
// tool cannot make the call: arbor's grep has one mode, Claude Code's
// content mode with line numbers, so a Grep call in another mode
// (files_with_matches is Claude Code's default, count) is left out, and
// one in content mode loses the arguments that ask for it.
func replayable(name string, input json.RawMessage) (json.RawMessage, bool) {
	if name != "Grep" {
		return input, true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(input, &m); err != nil {
		return input, true
	}
	if string(m["output_mode"]) != `"content"` {
		return nil, false
	}
	delete(m, "output_mode")
	delete(m, "-n")
	out, _ := json.Marshal(m)
	return out, true
}

// TestPostToolUseResponseOfSearchToolsLikeClaudeCode makes the Glob,
// Grep, TodoWrite and WebFetch calls Claude Code made with arbor's glob,
// grep, todo_write and web_fetch on the same files (their modification
// times too) and the same page, with a real PostToolUse command hook
// that keeps its stdin, and checks the hook read the tool_response Claude
// Code gave it, whether the tools are presented by Claude Code's names or
// by arbor's.
func TestPostToolUseResponseOfSearchToolsLikeClaudeCode(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "claude-code-post-tool-use-more.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec ccMoreRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := rec.Pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(site.Close)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, named := range []string{"claude-code", "arbor"} {
		t.Run(named, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			for name, text := range rec.Files {
				p := filepath.Join(ws, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				at := epoch.Add(time.Duration(rec.Mtimes[name]) * time.Second)
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
			}
			// web_fetch reaches the local site by a rule, as a private
			// address needs.
			policy, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			rule, err := permission.ParseRule("web_fetch(domain:127.0.0.1)", permission.Allow, permission.ScopeSession)
			if err != nil {
				t.Fatal(err)
			}
			if err := policy.AddRule(rule); err != nil {
				t.Fatal(err)
			}
			rp := newReplay(t, named, ws, tool.BuiltinOptions{Workspace: ws, Policy: policy})
			dump := rp.dump
			fill := strings.NewReplacer("<ws>", ws, "<site>", site.URL)
			var replayed []int
			for i, c := range rec.Calls {
				input, ok := replayable(c.ToolName, json.RawMessage(fill.Replace(string(c.ToolInput))))
				if !ok {
					continue
				}
				rp.call(t, i, c.ToolName, input)
				replayed = append(replayed, i)
			}
			seen := readInputs(t, dump)
			if len(seen) != len(replayed) {
				t.Fatalf("the hook ran %d times; want %d", len(seen), len(replayed))
			}
			unfill := strings.NewReplacer(ws, "<ws>", site.URL, "<site>")
			for k, i := range replayed {
				c := rec.Calls[i]
				var got map[string]any
				if err := json.Unmarshal([]byte(unfill.Replace(string(seen[k].ToolResponse))), &got); err != nil {
					t.Fatalf("call %d: tool_response %s is no object: %v", i, seen[k].ToolResponse, err)
				}
				want := map[string]any{}
				for f, v := range c.ToolResponse {
					want[f] = v
				}
				for _, f := range ccByType[c.ToolName] {
					if testutil.JSONType(got[f]) != testutil.JSONType(want[f]) {
						t.Errorf("call %d (%s): %s is %v; Claude Code gave a %s", i, c.ToolName, f, got[f], testutil.JSONType(want[f]))
					}
					delete(got, f)
					delete(want, f)
				}
				if seen[k].ToolName != c.ToolName || !reflect.DeepEqual(got, want) {
					gb, _ := json.Marshal(got)
					wb, _ := json.Marshal(want)
					t.Errorf("call %d: the hook read %s\n%s\nClaude Code gave %s\n%s", i, seen[k].ToolName, gb, c.ToolName, wb)
				}
			}
		})
	}
}
