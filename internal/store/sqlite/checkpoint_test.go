package sqlite

import (
	"encoding/binary"
	"fmt"
	"io"
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

// walRestarts reads the checkpoint sequence number from the header of
// the WAL at path: SQLite adds one every time it restarts the WAL from
// its beginning.
func walRestarts(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	var hdr [32]byte
	_, err = io.ReadFull(f, hdr[:])
	must(t, err)
	return binary.BigEndian.Uint32(hdr[12:16])
}

// TestBackgroundCheckpoint: committed pages reach the database file from
// the store's checkpointer long before the writer's own autocheckpoint
// would copy them, and the WAL still restarts from its beginning about
// every restartFrames frames (the checkpointer hands that over to the
// writer), so it does not grow without bound.
func TestBackgroundCheckpoint(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	ran := make(chan error, 1000)
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
	if wal := fileSize(t, path+"-wal"); wal >= restartFrames*walFrameBytes {
		t.Fatalf("the WAL has %d frames: the writer may have checkpointed", wal/walFrameBytes)
	}
	if after := fileSize(t, path); after <= before {
		t.Fatalf("database file %d bytes after the checkpoint, %d before: nothing was copied", after, before)
	}

	// Ten times restartFrames frames (a step writes three): the WAL
	// restarts several times. Without the hand-over the writer's
	// checkpoint kept losing to the background one and the WAL grew.
	restarts := walRestarts(t, path+"-wal")
	const steps = 10 * restartFrames / 3
	for i := range steps {
		step(i)
	}
	if n := walRestarts(t, path+"-wal") - restarts; n < 4 {
		t.Fatalf("the WAL restarted %d times in %d frames", n, 3*steps)
	}
	recs, err := st.Messages(ctx, "s1", 0)
	must(t, err)
	if want := checkpointEvery - 1 + steps; len(recs) != want {
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
