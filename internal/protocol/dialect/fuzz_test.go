package dialect_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/protocol/dialect"
)

// FuzzClaudeArgv reads an arbitrary argv (one argument per line of argv)
// and stdin as a Claude Code launch, and checks what the package
// promises:
//
//   - Recognize never panics; with both stream-json formats appended it
//     says ClaudeCode, and it says ClaudeCode only when args name both;
//   - ParseClaudeCode never panics and never reads past the first input
//     line (a client that awaits the initialize answer sends nothing
//     more), and the reader it returns serves the whole input;
//   - it refuses with ErrUsage, except a bad first line under
//     --await-initialize, which is not ErrUsage (Claude Code exits 1); an
//     unknown flag added to any argv is refused and named, not ignored;
//   - a launch it accepts is consistent: a UUID session id, a fork only
//     with --resume or --continue, a permission mode arbor knows, usable
//     MCP servers, launch fields from initialize only under
//     --await-initialize, and --tools only when given.
//
// Arguments that could make --mcp-config read a file outside the package
// directory (a path with a '/' that is not JSON) are skipped: the fuzzer
// must not read /dev/zero or wait on /dev/stdin.
func FuzzClaudeArgv(f *testing.F) {
	const init = `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","disallowedTools":["Bash"],"mcpServers":{"x":{"command":"true"}}}}`
	for _, s := range [][2]string{
		{"--input-format\nstream-json\n--output-format\nstream-json\n--verbose", ""},
		{"--output-format=stream-json\n--input-format=stream-json\n--model\nclaude-sonnet-4-5\n--max-turns\n3\n--permission-mode\nacceptEdits", ""},
		{"--allowedTools\nBash(git log *),Read\n--disallowedTools=Write\n--tools\n\n--include-partial-messages", ""},
		{"--resume\nabc\n--fork-session\n--session-id\n123e4567-e89b-12d3-a456-426614174000", ""},
		{"--await-initialize\n--initialize-fields=disallowedTools,mcpServers", init + "\n" + `{"type":"user"}` + "\n"},
		{"--await-initialize", `{"type":"user"}`},
		{"--await-initialize", init[:40]},
		{"--await-initialize", `{"type":"control_request","request":{"subtype":"initialize","settings":{"a":1}}}`},
		{"--mcp-config\n{\"mcpServers\":{\"a\":{\"type\":\"http\",\"url\":\"http://h/mcp\"}}}\n--strict-mcp-config", ""},
		{"--mcp-config=nofile.json", ""},
		{"--setting-sources\nuser\n--permission-prompt-tool\nmcp__x__y", ""},
		{"--frobnicate\n--\n--also", ""},
		{"--max-budget-usd\nNaN\n--max-turns\nx", ""},
		{"-p\nhello\n--debug\n--debug-file=x", ""},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, argv string, stdin []byte) {
		var args []string
		if argv != "" {
			args = strings.Split(argv, "\n")
		}
		for _, a := range args {
			v := a
			if _, after, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
				v = after
			}
			if strings.Contains(v, "/") && !strings.HasPrefix(strings.TrimSpace(v), "{") {
				t.Skip("may name a file outside the package directory")
			}
		}
		checkRecognize(t, args)

		in := &firstLine{data: stdin}
		l, rest, err := dialect.ParseClaudeCode(args, in)
		if in.past {
			t.Fatalf("ParseClaudeCode read past the first input line\nargs %q\nstdin %q", args, stdin)
		}
		awaits := false
		for _, a := range args {
			if a == "--" {
				break
			}
			awaits = awaits || a == "--await-initialize" || strings.HasPrefix(a, "--await-initialize=")
		}
		switch {
		case err != nil && !errors.Is(err, dialect.ErrUsage):
			if !awaits || !strings.HasPrefix(err.Error(), "--await-initialize: ") {
				t.Fatalf("%v is not ErrUsage nor an --await-initialize error\nargs %q", err, args)
			}
		case err == nil:
			in.open = true
			got, rerr := io.ReadAll(rest)
			if rerr != nil || !bytes.Equal(got, stdin) {
				t.Fatalf("the input handed back is %q (%v), want %q\nargs %q", got, rerr, stdin, args)
			}
			checkLaunch(t, args, l, awaits)
		}

		// An option arbor does not implement is refused, never ignored,
		// and named unless the argv has another fault (a bad value).
		usage := errors.Is(err, dialect.ErrUsage)
		_, _, err = dialect.ParseClaudeCode(append([]string{"--zz-not-a-claude-flag"}, args...), bytes.NewReader(stdin))
		if !errors.Is(err, dialect.ErrUsage) || !usage && !strings.Contains(err.Error(), "--zz-not-a-claude-flag") {
			t.Fatalf("an unknown flag is not refused by name: %v\nargs %q", err, args)
		}
	})
}

func checkRecognize(t *testing.T, args []string) {
	t.Helper()
	both := append(append([]string(nil), args...), "--input-format", "stream-json", "--output-format=stream-json")
	own := len(args) > 0 && args[0] != "headless" && !strings.HasPrefix(args[0], "-") // a subcommand of arbor's
	if got := dialect.Recognize(both); own && got != dialect.Spec || !own && got != dialect.ClaudeCode {
		t.Fatalf("Recognize(%q) = %s; a subcommand of arbor's %v", both, got, own)
	}
	if dialect.Recognize(args) == dialect.ClaudeCode {
		joined := "\n" + strings.Join(args, "\n") + "\n"
		for _, flag := range []string{"--input-format", "--output-format"} {
			if !strings.Contains(joined, "\n"+flag+"\nstream-json\n") && !strings.Contains(joined, "\n"+flag+"=stream-json\n") {
				t.Fatalf("Recognize(%q) is Claude Code without %s stream-json", args, flag)
			}
		}
	}
}

func checkLaunch(t *testing.T, args []string, l dialect.Launch, awaits bool) {
	t.Helper()
	fail := func(what string) { t.Helper(); t.Fatalf("%s\nargs %q\nlaunch %+v", what, args, l) }
	if l.SessionID != "" && (len(l.SessionID) != 36 || strings.Count(l.SessionID, "-") != 4) {
		fail("the session id is not a UUID")
	}
	if l.ForkSession && l.Resume == "" && !l.Continue {
		fail("a fork without --resume or --continue")
	}
	if l.PermissionMode != "" {
		if _, err := permission.ParseMode(l.PermissionMode); err != nil {
			fail("a permission mode arbor does not know")
		}
	}
	for name, s := range l.MCPServers {
		if _, err := config.ParseMCPJSON([]byte(`{"mcpServers":` + mustJSON(t, map[string]config.MCPServer{name: s}) + `}`)); err != nil {
			fail("an MCP server that cannot be used: " + err.Error())
		}
	}
	if (l.FromInit.DisallowedTools || l.FromInit.MCPServers) && !awaits {
		fail("launch fields from an initialize request that was not awaited")
	}
	if l.Tools != nil && !strings.Contains(strings.Join(args, "\n"), "--tools") {
		fail("tools without --tools")
	}
}

// firstLine is stdin as a client that waits for the answer to its first
// line writes it: reads get at most up to the first newline, then nothing
// until open (a read past the line is recorded); then the rest.
type firstLine struct {
	data []byte
	n    int
	// past: a read came after the first line and before open.
	past, open bool
}

func (r *firstLine) Read(p []byte) (int, error) {
	rest := r.data[r.n:]
	if !r.open {
		// After the first line a client's pipe has nothing more to give,
		// not even its end: the read would block.
		if i := bytes.IndexByte(r.data, '\n'); i >= 0 && r.n > i {
			r.past = true
			return 0, errors.New("read past the first line")
		}
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i+1]
		}
	}
	if len(rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, rest)
	r.n += n
	return n, nil
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
