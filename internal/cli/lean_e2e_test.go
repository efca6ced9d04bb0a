package cli_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// TestLeanBuild builds arbor as docs/headless-envelope.md ("A lean
// build") says, CGO_ENABLED=0 go build -tags lean, and uses it as a gateway
// would: a headless turn is answered; the commands it leaves out are
// unknown; what it cannot do (OpenTelemetry, a PostgreSQL store) is
// refused naming the tag; its link has none of the packages it exists to
// leave out; and it is linked statically (no program interpreter), which
// is what makes its starts cheaper.
func TestLeanBuild(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "arbor-lean")
	build := exec.Command("go", "build", "-tags", "lean", "-o", bin, "../../cmd/arbor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build -tags lean: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the lean build has a program interpreter: it is linked dynamically")
		}
	}
	f.Close()
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "a lean reply"} })
	t.Cleanup(srv.Close)
	e := newEnv(t)
	model := e.useProvider("anthropic", srv.URL)
	e.bin = bin
	// run is e.run with extra variables set.
	run := func(extra []string, args ...string) outcome {
		t.Helper()
		with := *e
		with.vars = append(slices.Clip(e.vars), extra...)
		return with.run(args...)
	}

	if o := run(nil, "headless", "--protocol", "stream-json", "--model", model, "say hello"); o.code != 0 || !strings.Contains(o.stdout, "a lean reply") {
		t.Fatalf("a headless turn: exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	if o := run(nil, "run", "a goal"); o.code == 0 || !strings.Contains(o.stderr, `unknown command "run"`) {
		t.Errorf("run in a lean build: exit %d, stderr:\n%s", o.code, o.stderr)
	}
	for what, c := range map[string]struct{ env, args []string }{
		"OpenTelemetry": {env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"}, args: []string{"headless", "--protocol", "stream-json", "--model", model, "say hello"}},
		"PostgreSQL":    {args: []string{"--store", "postgres://arbor@127.0.0.1:1/arbor", "headless", "--protocol", "stream-json", "--model", model, "say hello"}},
	} {
		if o := run(c.env, c.args...); o.code == 0 || !strings.Contains(o.stderr, "built with -tags lean, without") {
			t.Errorf("%s asked of a lean build: exit %d, stderr:\n%s", what, o.code, o.stderr)
		}
	}

	for _, p := range testutil.Deps(t, "../../cmd/arbor", "lean") {
		for _, left := range []string{"google.golang.org/grpc", "github.com/jackc/pgx", "github.com/riverqueue/river",
			"go.opentelemetry.io/otel/sdk", "github.com/arbor-run/arbor/internal/tui", "github.com/arbor-run/arbor/internal/worker",
			"github.com/arbor-run/arbor/internal/mcpserver", "github.com/arbor-run/arbor/internal/telemetry"} {
			if p == left || strings.HasPrefix(p, left+"/") {
				t.Errorf("a lean build links %s", p)
			}
		}
	}
}
