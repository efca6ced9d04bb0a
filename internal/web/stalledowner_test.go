package web_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/testutil"
)

// TestStreamOfAStalledOwnersRunEndsWithItsClient: a run whose owner
// accepts connections and never answers (a process stopped with SIGSTOP,
// or hung) keeps a client's event stream waiting for the owner; when the
// client gives up, its request ends and it is forgotten. Before, the
// handler waited on the owner for good, and every retry of the browser
// left one more behind.
func TestStreamOfAStalledOwnersRunEndsWithItsClient(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	sock := testutil.SilentListener(t)
	st := b.app.Store
	if err := st.CreateRun(b.ctx, store.Run{ID: "stalled", Goal: "g", Status: store.RunRunning, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLease(b.ctx, store.LeaseRequest{Key: store.RunLeaseKey("stalled"),
		Owner: store.Owner{ID: "stopped-owner", PID: os.Getpid(), Host: store.Hostname()}, Addr: sock,
		Now: time.Now(), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // a browser's retries
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", b.http.URL+"/api/runs/stalled/events", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
		cancel()
	}
	for deadline := time.Now().Add(30 * time.Second); b.web.Clients() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams of the stalled owner's run are still held after their clients went away", b.web.Clients())
		}
	}
}
