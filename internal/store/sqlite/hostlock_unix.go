//go:build unix

package sqlite

import (
	"errors"
	"syscall"
)

// lock waits for the host write lock. It reports false when the lock
// could not be taken (the write then goes without it).
func (l hostLock) lock() bool {
	if l.f == nil {
		return false
	}
	for {
		err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}

// unlock releases the host write lock.
func (l hostLock) unlock() { _ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }
