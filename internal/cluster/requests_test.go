package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// fakeController drives the runs in its set and records what it did.
type fakeController struct {
	mu     sync.Mutex
	drives map[string]bool
	did    []ControlRequest
	fail   error
}

func (f *fakeController) Control(_ context.Context, req ControlRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.drives[req.Run] {
		return "", ErrNotDriven
	}
	f.did = append(f.did, req)
	if f.fail != nil {
		return "", f.fail
	}
	return "cancelled", nil
}

func (f *fakeController) drive(run string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drives[run] = true
}

func (f *fakeController) done() []ControlRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ControlRequest(nil), f.did...)
}

// TestRequestsReachTheDriver: a control request reaches the working
// cluster whose Controller drives the run (not the other one) and its
// outcome comes back; a failure comes back as a *RequestError; a request
// no process drives stays open (ErrNotDelivered) and is carried out once
// by the process that takes the run (ServeOpen).
func TestRequestsReachTheDriver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := &fakeController{drives: map[string]bool{}}
	driver := &fakeController{drives: map[string]bool{}}
	noop := newTakes(func(string, int) error { return nil })
	start(t, openCluster(t, b.st, Options{Queue: "a", Driver: noop, Controller: other, ReapEvery: time.Hour}))
	c := openCluster(t, b.st, Options{Queue: "b", Driver: noop, Controller: driver, ReapEvery: time.Hour})
	start(t, c)
	r, root := clusterRun("run-req", "b")
	must(t, b.st.CreateRun(b.ctx, r))
	must(t, b.st.Commit(b.ctx, nil, root))

	// Nobody drives it: the request stays open.
	// Long enough for the insert on a loaded machine (300 ms was not, in
	// CI at load 7); the wait for an outcome then runs out.
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	_, err := Request(ctx, b.st, ControlRequest{Run: r.ID, Node: 1, Op: OpStop})
	cancel()
	if !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("request nobody drives: %v, want ErrNotDelivered", err)
	}
	// The process that takes the run carries it out, once.
	driver.drive(r.ID)
	must(t, c.ServeOpen(b.ctx, r.ID))
	must(t, c.ServeOpen(b.ctx, r.ID))
	if got := driver.done(); len(got) != 1 || got[0].Op != OpStop || got[0].Node != 1 {
		t.Fatalf("carried out %+v, want the one stop", got)
	}

	// Driven: the answer comes back at once.
	state, err := Request(b.ctx, b.st, ControlRequest{Run: r.ID, Node: 1, Op: OpAnswer, Text: "eu"})
	if err != nil || state != "cancelled" {
		t.Fatalf("request to the driver: %q %v", state, err)
	}
	if got := driver.done(); len(got) != 2 || got[1].Text != "eu" {
		t.Fatalf("carried out %+v", got)
	}
	if len(other.done()) != 0 {
		t.Fatalf("the other process carried out %+v", other.done())
	}

	// A run that has ended refuses a request nobody carried out, at once
	// (a resolve sent as the run completed), instead of leaving it open
	// for a worker that will never take the run.
	ended, endedRoot := clusterRun("run-ended", "b")
	ended.Status = store.RunComplete
	must(t, b.st.CreateRun(b.ctx, ended))
	must(t, b.st.Commit(b.ctx, nil, endedRoot))
	ctx, cancel = context.WithTimeout(b.ctx, RequestWait)
	_, err = Request(ctx, b.st, ControlRequest{Run: ended.ID, Op: OpResolve, Text: "x"})
	cancel()
	var ref *RequestError
	if !errors.As(err, &ref) || ref.Message != "run run-ended has ended (complete): nothing drives it" {
		t.Fatalf("request to an ended run: %v, want it refused as ended", err)
	}

	// A failure is the driver's message.
	driver.mu.Lock()
	driver.fail = errors.New("#1 is not an ask node")
	driver.mu.Unlock()
	_, err = Request(b.ctx, b.st, ControlRequest{Run: r.ID, Node: 1, Op: OpAnswer, Text: "x"})
	var re *RequestError
	if !errors.As(err, &re) || re.Message != "#1 is not an ask node" {
		t.Fatalf("failed request: %v, want the driver's error", err)
	}
}
