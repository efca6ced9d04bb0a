//go:build unix

package store

import (
	"errors"
	"syscall"
)

// processGone reports whether no process with pid exists on this machine.
// EPERM means one exists that we may not signal.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
