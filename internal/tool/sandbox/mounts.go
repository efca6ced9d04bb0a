package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The directories a call makes as mount points (an empty .arbor, .claude
// or .git/hooks, protect.go) are removed, if still empty, when the
// sandbox's last call ends. Two things make that harder than it looks:
//
//   - another sandbox (another arbor process in the same workspace, or
//     another view in this one whose writable roots overlap) may have
//     bound the same directory in a call that still runs. Removing it on
//     the host would undo that bind in the other call's mount namespace,
//     and its command could then make the directory and write in it;
//   - a process killed during a call (SIGKILL) leaves its directories.
//
// So every sandbox of the user shares one lock file: a sandbox holds it
// shared while it has calls running, appends each directory it makes to
// the file, and removes directories only while it holds the lock
// exclusively, that is while no other sandbox has a call running: the
// last one out (or the next one in, after a kill) removes every recorded
// directory that is still an empty directory, and empties the record.
// Where the lock file cannot be had, a sandbox removes its own
// directories, as before.

// mountsFile is the lock and record file, per user, outside every
// workspace: $XDG_RUNTIME_DIR/arbor-sandbox-mounts, or the user's cache
// directory's arbor/sandbox-mounts.
func mountsFile() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return filepath.Join(d, "arbor-sandbox-mounts")
		}
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "arbor", "sandbox-mounts")
}

// enter takes the lock shared as the sandbox's first running call
// starts, tidying first when no other sandbox has a call running. s.mu is
// held.
func (s *Sandbox) enter() {
	s.locked = false
	if s.lock == nil {
		p := s.mounts
		if p == "" || os.MkdirAll(filepath.Dir(p), 0o700) != nil {
			return
		}
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return
		}
		s.lock = f
	}
	fd := int(s.lock.Fd())
	if flock(fd, syscall.LOCK_EX) == nil {
		s.tidy()
	}
	// An exclusive holder is another sandbox tidying, which takes
	// moments; the lock file is outside every workspace, but should a
	// confined command hold it (a writable root over the cache
	// directory), the call goes on without it, and removes nothing.
	for range 200 {
		if flock(fd, syscall.LOCK_SH) == nil {
			s.locked = true
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// flock takes how (LOCK_EX or LOCK_SH) of fd's lock without waiting.
func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// record adds the directories a call made to the record. s.mu is held.
func (s *Sandbox) record(made []string) {
	if len(made) == 0 || !s.locked {
		return
	}
	_, _ = s.lock.WriteString(strings.Join(made, "\n") + "\n") // O_APPEND: one write, not interleaved
}

// leave drops the lock as the sandbox's last running call ends, removing
// the recorded directories first when no other sandbox has a call
// running. s.mu is held.
func (s *Sandbox) leave() {
	made := s.made
	s.made = nil
	if !s.locked {
		if s.lock == nil { // no lock file here: remove this sandbox's own
			for _, d := range made {
				_ = syscall.Rmdir(d) // only an empty directory goes
			}
		}
		return
	}
	fd := int(s.lock.Fd())
	if flock(fd, syscall.LOCK_EX) == nil {
		s.tidy()
	}
	_ = syscall.Flock(fd, syscall.LOCK_UN)
	s.locked = false
}

// tidy removes the recorded directories that are still empty directories
// and empties the record; the lock is held exclusively.
func (s *Sandbox) tidy() {
	b, err := io.ReadAll(io.NewSectionReader(s.lock, 0, 1<<20))
	if err != nil || len(b) == 0 {
		return
	}
	for _, d := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if filepath.IsAbs(d) {
			_ = syscall.Rmdir(d) // not a file, not a symlink, not a directory with anything in it
		}
	}
	_ = s.lock.Truncate(0)
}

// closeLock releases the lock file of a closed sandbox.
func (s *Sandbox) closeLock() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock, s.locked = nil, false
	}
}
