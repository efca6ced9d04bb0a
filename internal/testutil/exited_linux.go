package testutil

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RequireExited waits for process pid to exit and fails t if it has not
// within limit. It waits on a pidfd, so no polling loop is needed; limit
// only bounds a failing test.
func RequireExited(t testing.TB, pid int, limit time.Duration) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(limit.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd of %d: %v", pid, err)
		}
		if n == 0 {
			t.Fatalf("process %d is still running after %v", pid, limit)
		}
		return
	}
}
