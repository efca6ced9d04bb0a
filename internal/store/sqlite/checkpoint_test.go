package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// walFrameBytes is the size of one WAL frame: a 24-byte header and a page.
const walFrameBytes = 24 + 4096

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	return fi.Size()
}

// TestBackgroundCheckpoint: committed pages reach the database file from
// the store's checkpointer long before the writer's autocheckpoint
// (1,000 frames) would copy them, and the WAL still restarts from its
// beginning, so it stays as short as it was without the checkpointer.
func TestBackgroundCheckpoint(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	ran := make(chan error, 100)
	st, err := open(t.Context(), path, ran)
	must(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ctx := t.Context()
	must(t, st.CreateSession(ctx, store.Session{ID: "s1"}))
	step := func(i int) {
		t.Helper()
		_, err := st.SaveStep(ctx, store.Step{SessionID: "s1", Messages: []llm.Message{llm.UserText(fmt.Sprint("message ", i))}, Status: store.SessionIdle})
		must(t, err)
	}

	before := fileSize(t, path)
	for i := range checkpointEvery - 1 { // with CreateSession: checkpointEvery commits
		step(i)
	}
	if err := <-ran; err != nil {
		t.Fatalf("background checkpoint: %v", err)
	}
	if wal := fileSize(t, path+"-wal"); wal >= 1000*walFrameBytes {
		t.Fatalf("the WAL has %d frames: the writer's autocheckpoint may have run", wal/walFrameBytes)
	}
	if after := fileSize(t, path); after <= before {
		t.Fatalf("database file %d bytes after the checkpoint, %d before: nothing was copied", after, before)
	}

	// Ten times the autocheckpoint's frames: the WAL file is reused from
	// its start, not grown.
	for i := range 10 * 1000 / 3 {
		step(i)
	}
	if wal := fileSize(t, path+"-wal"); wal > 2*1000*walFrameBytes {
		t.Fatalf("the WAL grew to %d frames", wal/walFrameBytes)
	}
	recs, err := st.Messages(ctx, "s1", 0)
	must(t, err)
	if want := checkpointEvery - 1 + 10*1000/3; len(recs) != want {
		t.Fatalf("%d messages, want %d", len(recs), want)
	}
}

func TestCloseStopsTheCheckpointer(t *testing.T) {
	t.Parallel()
	ran := make(chan error, 1)
	st, err := open(t.Context(), filepath.Join(t.TempDir(), "arbor.db"), ran)
	must(t, err)
	st.ckpt.request()
	if err := <-ran; err != nil {
		t.Fatalf("background checkpoint: %v", err)
	}
	must(t, st.Close())
	must(t, st.Close())
	if err := st.ckpt.db.Ping(); err == nil {
		t.Fatal("the checkpointer's connection is open after Close")
	}
}
