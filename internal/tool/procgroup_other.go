//go:build !linux

package tool

import (
	"syscall"
	"time"
)

// groupAttr starts a tool process as the leader of a new process group.
// There is no Pdeathsig outside Linux: the reaper, and the recorded group
// killed on resume, make the group die with arbor.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// bootTime is unknown here.
func bootTime() (time.Time, bool) { return time.Time{}, false }

// groupAlive reports whether the process group pgid has a process
// (zombies included: there is no portable way to tell them apart).
func groupAlive(pgid int) bool { return groupExists(pgid) }
