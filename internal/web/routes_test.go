package web

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/tree"
)

// TestRoutesForgetFinishedRuns: the hub learns a route per node session
// from the events and forgets a run's routes when the run finishes, so a
// server that has shown many runs keeps none of the finished ones' (it
// kept every one before).
func TestRoutesForgetFinishedRuns(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	bus := agent.NewBus()
	h := newHub(bus, st, 16, nil)
	defer h.close()
	for r := range 50 {
		run := fmt.Sprintf("run-%d", r)
		for n := int64(1); n <= 10; n++ {
			bus.Publish(&tree.NodeChanged{RunID: run, Node: tree.NodeView{ID: n, SessionID: fmt.Sprintf("%s.%d", run, n), State: tree.StateComplete}})
		}
		if r < 45 {
			bus.Publish(&tree.RunFinished{RunID: run, Outcome: store.RunComplete})
		}
	}
	h.sub.Flush()
	if got := len(h.routes.m); got != 50 { // the five runs still running
		t.Fatalf("%d routes after 45 of 50 runs of 10 nodes finished, want 50", got)
	}
	if got := len(h.routes.byRun); got != 5 {
		t.Fatalf("routes of %d runs kept, want the 5 running", got)
	}
	if rt := h.routes.lookup("run-47.3"); rt != (route{"run-47", 3}) {
		t.Fatalf("route of a running node's session = %+v", rt)
	}
}

// TestRoutesLookUpTheStore: a session no event named is looked up in the
// store: a node's session gets its run and node, a run's id (an ask's
// question) its run, any other id no route, which is remembered up to a
// bound (maxRouteMisses; 16 here); a lookup the store failed is not remembered, so the
// session's next event finds its route (before, it was sent nowhere for
// good).
func TestRoutesLookUpTheStore(t *testing.T) {
	t.Parallel()
	st := &flakyStore{Store: openStore(t)}
	ctx := context.Background()
	if err := st.CreateRun(ctx, store.Run{ID: "r1", Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []store.Session{{ID: "r1.4", RunID: "r1", NodeID: 4}, {ID: "chat"}} {
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	r := newRoutes(st)
	st.fail = true
	if rt := r.lookup("r1.4"); rt != (route{}) {
		t.Fatalf("a failed lookup gave %+v", rt)
	}
	st.fail = false
	for session, want := range map[string]route{"r1.4": {"r1", 4}, "r1": {run: "r1"}, "chat": {}, "nothing": {}} {
		if rt := r.lookup(session); rt != want {
			t.Fatalf("route of %s = %+v, want %+v", session, rt, want)
		}
	}
	st.fail = true // remembered now: the store is not asked
	if rt := r.lookup("r1.4"); rt != (route{"r1", 4}) {
		t.Fatalf("a learned route was asked of the store again: %+v", rt)
	}
	st.fail = false
	r.most = 16
	for i := range 100 {
		r.lookup(fmt.Sprint("no-such-session-", i))
	}
	if r.misses > r.most || len(r.m) > r.most+2 {
		t.Fatalf("%d routes, %d misses after 100 sessions of no run, want at most %d misses", len(r.m), r.misses, r.most)
	}
	if rt := r.lookup("r1.4"); rt != (route{"r1", 4}) {
		t.Fatalf("dropping misses dropped a run's route: %+v", rt)
	}
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// flakyStore fails its lookups while fail is set.
type flakyStore struct {
	store.Store
	fail bool
}

var errFlaky = errors.New("the store is busy")

func (f *flakyStore) GetSession(ctx context.Context, id string) (store.Session, error) {
	if f.fail {
		return store.Session{}, errFlaky
	}
	return f.Store.GetSession(ctx, id)
}

func (f *flakyStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if f.fail {
		return store.Run{}, errFlaky
	}
	return f.Store.GetRun(ctx, id)
}
