package protocol_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/arbor-run/arbor/internal/protocol"
)

// nonblocking reports whether f's open file has O_NONBLOCK.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if err := raw.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// TestPollablePipe: a pipe is read through a non-blocking duplicate that
// the runtime polls, which reads every line, and SetReadDeadline works on
// it (only a polled file has deadlines); restore puts the pipe back in
// blocking mode for whoever shares it.
func TestPollablePipe(t *testing.T) {
	// A blocking pipe, as a client's pipe is when it becomes fd 0 (os.Pipe
	// would make a non-blocking one).
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "client")
	defer r.Close()
	defer w.Close()
	if nonblocking(t, r) {
		t.Fatal("the pipe is non-blocking before Pollable")
	}
	in, restore := protocol.Pollable(r)
	f, ok := in.(*os.File)
	if !ok || f == r {
		t.Fatalf("Pollable(pipe) = %T %v, want a new *os.File", in, in)
	}
	defer f.Close()
	if !nonblocking(t, r) {
		t.Fatal("the pipe is not in non-blocking mode")
	}
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		t.Fatalf("SetReadDeadline: %v (the duplicate is not polled)", err)
	}
	go func() {
		_, _ = io.WriteString(w, `{"type":"a"}`+"\n"+`{"type":"b"}`+"\n")
		w.Close()
	}()
	lines := protocol.NewReader(in, 0)
	var got []string
	for {
		l, err := lines.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Type)
	}
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("read %q, want a,b", got)
	}
	restore()
	if nonblocking(t, r) {
		t.Fatal("restore left the pipe non-blocking")
	}
}

// TestPollableLeavesOthers: a regular file, a socket and a reader that is
// not a file are returned as they are, unchanged.
func TestPollableLeavesOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(`{"type":"a"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, peer := os.NewFile(uintptr(fds[0]), "sock"), os.NewFile(uintptr(fds[1]), "peer")
	defer sock.Close()
	defer peer.Close()
	for _, in := range []io.Reader{file, sock, bytes.NewReader(nil)} {
		got, restore := protocol.Pollable(in)
		restore()
		if got != in {
			t.Errorf("Pollable(%T) = %v, want it unchanged", in, got)
		}
	}
	if nonblocking(t, file) {
		t.Error("the file was made non-blocking")
	}
}
