// Package memtrim gives the memory of a process that waits for input back
// to the system: the Go heap's free pages, and the pages of the program's
// own executable that are mapped but no longer in use.
//
// A Go program's start maps far more of its executable than it later
// runs: every package's initialiser, type descriptors, tables. Those
// pages stay mapped, and counted in the process's resident set, for the
// rest of its life. They are clean pages of the file in the page cache,
// shared by every process of the program, so unmapping them frees
// nothing by itself; but it leaves the kernel free to reclaim them, ends
// their page-table cost, and makes the resident set say what the process
// uses. Pages used afterwards come back on their next access as minor
// faults from the page cache, with no I/O.
package memtrim

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// Trim runs a garbage collection and returns the free heap to the
// system (debug.FreeOSMemory), then unmaps the executable's pages
// (Unmap). It costs a collection: call it when the process waits.
func Trim() (int, error) {
	debug.FreeOSMemory()
	return Unmap()
}

// Unmap unmaps the executable's read-only pages (its code and read-only
// data; never its writable data, which would lose what was written) and
// reports how many bytes of mappings it covered. It takes a system call
// per mapping and leaves the pages in the page cache. On systems without
// /proc it does nothing.
func Unmap() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, nil
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		lo, hi, ok := readOnlyOf(sc.Text(), exe)
		if !ok {
			continue
		}
		if err := madvise(lo, hi-lo, syscall.MADV_DONTNEED); err != nil {
			return total, err
		}
		total += int(hi - lo)
	}
	return total, sc.Err()
}

// readOnlyOf parses one line of /proc/self/maps and reports the range of
// a mapping of exe that is neither writable nor shared.
func readOnlyOf(line, exe string) (lo, hi uintptr, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || f[5] != exe {
		return 0, 0, false
	}
	perm := f[1]
	if len(perm) != 4 || perm[1] == 'w' || perm[3] != 'p' || perm[0] != 'r' {
		return 0, 0, false
	}
	a, b, found := strings.Cut(f[0], "-")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || y <= x {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}

func madvise(addr, n uintptr, advice int) error {
	_, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, n, uintptr(advice))
	if e != 0 {
		return e
	}
	return nil
}
