package worker_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/worker"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// lockedBuffer is a worker's log, read by the test while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openApp opens an App on storeURL ("" is SQLite in a temporary state
// dir) whose model is a one-turn script answering answer.
func openApp(t *testing.T, storeURL, answer string) *app.App {
	t.Helper()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(home, "script.yaml")
	if err := os.WriteFile(script, []byte("turns:\n  - text: "+answer+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "script:" + script, Mode: "trust", Store: storeURL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestNewRefuses: options a worker cannot serve with are the caller's
// mistake (app.ErrUsage), before anything starts.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	lite := openApp(t, "", "x")
	if _, err := worker.New(lite, worker.Options{Concurrency: 1}); !errors.Is(err, app.ErrUsage) || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("New on SQLite: %v; want a usage error naming PostgreSQL", err)
	}
	pg := openApp(t, pgtest.DSN(t), "x")
	for name, o := range map[string]worker.Options{
		"no-concurrency":     {Concurrency: 0},
		"negative-turns":     {Concurrency: 1, Turns: -1},
		"missing-workspace":  {Concurrency: 1, Workspaces: []string{filepath.Join(t.TempDir(), "absent")}},
		"workspace-is-afile": {Concurrency: 1, Workspaces: []string{aFile(t)}},
	} {
		if _, err := worker.New(pg, o); !errors.Is(err, app.ErrUsage) {
			t.Errorf("%s: New: %v; want app.ErrUsage", name, err)
		}
	}
}

// aFile is a regular file's path.
func aFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWorkerDrivesASubmittedRun starts a Worker as arbor worker does,
// submits a run as arbor run --cluster does, follows it to its end, and
// stops the worker: once with the turns run by the driving worker itself
// (--local-turns), once with turn slots, where the driver runs the root's
// turn in one of its own (cluster.Remote.RunHere; the handed-out path is
// internal/cli's TestControlReachesATurnOnAnotherWorker).
func TestWorkerDrivesASubmittedRun(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]worker.Options{
		"local-turns": {Concurrency: 2, LocalTurns: true},
		"turn-slots":  {Concurrency: 2, Turns: 2, Listen: "127.0.0.1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := openApp(t, pgtest.DSN(t), "the tree is done")
			log := &lockedBuffer{}
			o.Diag = log
			w, err := worker.New(a, o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(t.Context())
			served := make(chan error, 1)
			go func() { served <- w.Serve(ctx) }()

			st := a.Store.(*postgres.Store)
			e, m, err := a.EngineWith(app.EngineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r, root := e.NewRun(tree.RunOptions{ID: app.NewID(), Goal: "finish the tree", Model: m.Ref.Ref,
				Workspace: a.Workspace, Mode: "trust", Queue: "default"})
			c, err := cluster.Open(ctx, st, cluster.Options{Queue: "default"})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Submit(ctx, r, root); err != nil {
				t.Fatal(err)
			}
			// A bound that a working worker never reaches: a run no one
			// drives ends the follow (a StoppedError) instead of the test.
			fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			fin, err := worker.Follow(fctx, st, r.ID, worker.FollowOptions{Goal: r.Goal, Diag: io.Discard, Quiet: true})
			if err != nil {
				t.Fatalf("follow: %v\nworker log:\n%s", err, log)
			}
			if fin.Status != store.RunComplete || !strings.Contains(fin.Result, "the tree is done") {
				t.Fatalf("run ended %s with %q; want complete with the script's answer\nworker log:\n%s", fin.Status, fin.Result, log)
			}
			stop()
			if err := <-served; err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if !strings.Contains(log.String(), "driving run "+r.ID) {
				t.Fatalf("worker log lacks the drive:\n%s", log)
			}
		})
	}
}
