//go:build linux && (amd64 || arm64) && !(cgo && sqlite_cgo)

package driver

import (
	"context"
	"database/sql"
	"encoding/binary"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"modernc.org/libc"
)

// openWAL opens a one-connection pool on path in WAL mode with the
// given extra parameters (WriterParams' among them when writer is set).
func openWAL(t *testing.T, path string, writer bool, extra ...string) *sql.DB {
	t.Helper()
	params := url.Values{"_journal_mode": {"WAL"}, "_synchronous": {"NORMAL"}, "_busy_timeout": {"5000"}}
	if writer {
		WriterParams(params)
	}
	for _, p := range extra {
		params.Add("_pragma", p)
	}
	db, err := sql.Open(Name, (&url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: params.Encode()}).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	return db
}

// rows prefixes a statement with n(k), the k rows 1…k.
const rows = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) "

func exec(t *testing.T, db *sql.DB, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func count(t *testing.T, db *sql.DB, query string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestWALCommitIsOneWrite: a commit of many pages goes to the WAL in one
// write, and is in the file when COMMIT returns: a copy of the files taken
// then (what a crash of the process leaves) holds it.
func TestWALCommitIsOneWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	db := openWAL(t, path, true)
	if got := count(t, db, "PRAGMA cache_spill"); got != 0 {
		t.Fatalf("the writer's cache_spill is %d, want 0", got)
	}
	exec(t, db, "CREATE TABLE t (x TEXT)")
	before := walWrites.Load()
	exec(t, db, rows+"INSERT INTO t SELECT printf('%.1000c', 'x') FROM n")
	// About 30 pages, each a header and a page: 60 writes unbatched.
	if n := walWrites.Load() - before; n != 1 {
		t.Fatalf("the commit took %d writes to the WAL, want 1", n)
	}

	copyDir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, "a.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cp := openWAL(t, filepath.Join(copyDir, "a.db"), false)
	if n := count(t, cp, "SELECT count(*) FROM t"); n != 100 {
		t.Fatalf("a copy of the files after COMMIT returned holds %d rows, want 100", n)
	}
}

// TestWALSpillRolledBack: frames a connection spilled (its transaction
// outgrew its page cache) and then rolled back are written before its
// write lock is released, never over what another connection committed
// after it.
func TestWALSpillRolledBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	a := openWAL(t, path, false, "cache_size(10)") // spills after 10 pages
	b := openWAL(t, path, true)
	// The pages the rollback reads back come from the database file, not
	// the WAL (a read of the WAL would write the buffer out first).
	exec(t, a, "CREATE TABLE t (x TEXT)", "CREATE TABLE u (x TEXT)", "PRAGMA wal_checkpoint(TRUNCATE)")

	ctx := context.Background()
	tx, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, rows+"INSERT INTO t SELECT printf('%.1000c', 'a') FROM n WHERE i <= 60"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	exec(t, b, rows+"INSERT INTO u SELECT printf('%.1000c', 'b') FROM n WHERE i <= 60")
	exec(t, a, "INSERT INTO t VALUES ('after')") // a writes to the WAL again

	for _, db := range []*sql.DB{a, b, openWAL(t, path, false)} {
		var ok string
		if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("integrity_check: %q, %v", ok, err)
		}
		if n := count(t, db, "SELECT count(*) FROM u WHERE x = printf('%.1000c', 'b')"); n != 60 {
			t.Fatalf("%d of b's 60 rows read back", n)
		}
		if n := count(t, db, "SELECT count(*) FROM t"); n != 1 {
			t.Fatalf("t holds %d rows, want the 1 committed", n)
		}
	}
}

// TestWALCommitFrameIsWrittenAtOnce: frames wait in the buffer until the
// write that completes a commit frame, which writes them all before it
// returns (SQLite publishes the commit to other connections right after).
func TestWALCommitFrameIsWrittenAtOnce(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "a.db-wal"))
	if err != nil {
		t.Fatal(err)
	}
	fd, tls := bufferedWAL(t, file)
	const pageSize = 512
	frame := func(commit uint32, fill byte) (header, page uintptr) {
		header, page = libc.Xmalloc(tls, frameHeaderSize), libc.Xmalloc(tls, pageSize)
		h := unsafe.Slice((*byte)(cMem(header)), frameHeaderSize)
		clear(h)
		binary.BigEndian.PutUint32(h[4:8], commit)
		p := unsafe.Slice((*byte)(cMem(page)), pageSize)
		for i := range p {
			p[i] = fill
		}
		return header, page
	}
	size := func() int64 {
		st, err := file.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	off := int64(32)
	for i, commit := range []uint32{0, 0, 7} {
		header, page := frame(commit, byte('a'+i))
		if n := walPwrite(tls, fd, header, frameHeaderSize, off); n != frameHeaderSize {
			t.Fatalf("header write: %d", n)
		}
		if n := walPwrite(tls, fd, page, pageSize, off+frameHeaderSize); n != pageSize {
			t.Fatalf("page write: %d", n)
		}
		off += frameHeaderSize + pageSize
		libc.Xfree(tls, header)
		libc.Xfree(tls, page)
		want := int64(0) // buffered
		if commit != 0 {
			want = off // all three frames
		}
		if got := size(); got != want {
			t.Fatalf("after frame %d (commit %d) the file holds %d bytes, want %d", i+1, commit, got, want)
		}
	}
	b, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	if b[32+frameHeaderSize] != 'a' || b[off-1] != 'c' {
		t.Fatal("the frames were written out of place")
	}
}

// TestWALDroppedFramesFailTheNextWrite: frames that another call than
// their connection's write failed to write out are dropped, and that
// connection's next write fails with the error, so the transaction that
// lost them does not commit; the other call goes on.
func TestWALDroppedFramesFailTheNextWrite(t *testing.T) {
	WriterParams(url.Values{}) // the original fcntl, for walFcntl
	path := filepath.Join(t.TempDir(), "a.db-wal")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path) // read-only: every write of it fails
	if err != nil {
		t.Fatal(err)
	}
	fd, tls := bufferedWAL(t, file)
	header := libc.Xmalloc(tls, frameHeaderSize)
	defer libc.Xfree(tls, header)
	clear(unsafe.Slice((*byte)(cMem(header)), frameHeaderSize)) // not a commit frame

	if n := walPwrite(tls, fd, header, frameHeaderSize, 32); n != frameHeaderSize {
		t.Fatalf("a buffered write returned %d", n)
	}
	if rc := walFcntl(tls, fd, int32(syscall.F_GETFD), 0); rc < 0 {
		t.Fatalf("fcntl failed (%d) for another file's buffer", rc)
	}
	if n := walPwrite(tls, fd, header, frameHeaderSize, 56); n != -1 {
		t.Fatalf("the write after its frames were dropped returned %d, want -1", n)
	}
	if e := syscall.Errno(*(*int32)(cMem(libc.X__errno_location(tls)))); e != syscall.EBADF {
		t.Fatalf("errno %v, want the dropped write's EBADF", e)
	}
	if n := walPwrite(tls, fd, header, frameHeaderSize, 32); n != frameHeaderSize {
		t.Fatalf("the write after the failed one returned %d", n)
	}
}

// bufferedWAL registers file as a WAL file whose writes are buffered, for
// the test, and gives a C thread to call the replaced calls with. The
// file is closed after the test, once unregistered: its descriptor, free
// before, could be another connection's WAL meanwhile.
func bufferedWAL(t *testing.T, file *os.File) (int32, *libc.TLS) {
	t.Cleanup(func() { _ = file.Close() })
	fd := int32(file.Fd())
	walFiles.Store(fd, &walFile{})
	t.Cleanup(func() { walFiles.Delete(fd) })
	tls := libc.NewTLS()
	t.Cleanup(tls.Close)
	return fd, tls
}
