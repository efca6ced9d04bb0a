package tool

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// groupAttr starts a tool process as the leader of a new process group
// that gets SIGKILL when the thread that forked it exits (see runInGroup).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// bootTime returns when the system booted, from /proc/stat.
func bootTime() (time.Time, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(sec, 0), true
		}
	}
	return time.Time{}, false
}

// groupAlive reports whether the process group pgid has a process that
// has not exited. Zombies do not count: where nothing reaps orphans (a
// container whose init does not), a killed group's processes stay as
// zombies, which kill(2) still finds.
func groupAlive(pgid int) bool {
	if !groupExists(pgid) {
		return false
	}
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(paths) == 0 {
		return true // no /proc to tell: it exists
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may contain anything.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			return true
		}
	}
	return false
}
