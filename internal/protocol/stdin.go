package protocol

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Pollable returns what a session reads its input from. For a pipe (what
// a client that launched arbor writes to) that is a non-blocking
// duplicate of in, which the Go runtime waits on with its network poller:
// a line then wakes the reader on the processor that was idle. A plain
// *os.File for fd 0 is read in blocking read(2) calls instead, and the
// thread blocked in one holds the session's only processor until the
// runtime's monitor takes it back, which delayed the start of every turn
// by about 0.1 ms (docs/benchmarks.md). Anything else is returned as it
// is: a terminal, a file, a reader that is not a file, and a socket, which
// may be stdout's open file too (a non-blocking stdout would fail writes
// with EAGAIN).
//
// O_NONBLOCK belongs to the pipe's read end, which in shares with whoever
// gave it to arbor, so restore sets it back to blocking; call it once the
// input is no longer read. The duplicate stays open until the process
// exits: a read of it may still be pending.
func Pollable(in io.Reader) (r io.Reader, restore func()) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return in, func() {}
	}
	dup := -1
	_ = raw.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		if d, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); err == nil {
			dup = d
		}
	})
	if dup < 0 {
		return in, func() {}
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		_ = unix.Close(dup)
		return in, func() {}
	}
	// NewFile sees O_NONBLOCK and registers the descriptor with the
	// poller.
	return os.NewFile(uintptr(dup), f.Name()), func() {
		_ = raw.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
	}
}
