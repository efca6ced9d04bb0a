package memtrim

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// table lives in the executable's initialised, writable data: a
// mapping of the file that Unmap must leave alone, or what the program
// wrote there would turn back into the file's bytes.
var table = [3 * 4096]byte{0: 1, 4096: 2, 2 * 4096: 3}

// exeResident is the resident KiB of the test binary's mappings of its
// executable file with perms (e.g. "r-xp"), from /proc/self/smaps.
func exeResident(t *testing.T, perms string) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	total, in := 0, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = len(f) >= 6 && f[5] == exe && f[1] == perms
			continue
		}
		if in && len(f) >= 2 && f[0] == "Rss:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
	}
	return total
}

func TestUnmapKeepsWrittenData(t *testing.T) {
	for i := range table {
		table[i] = byte(i*7 + 5)
	}
	if _, err := Unmap(); err != nil {
		t.Fatal(err)
	}
	for i := range table {
		if table[i] != byte(i*7+5) {
			t.Fatalf("table[%d] = %d after Unmap, want %d: writable data was dropped", i, table[i], byte(i*7+5))
		}
	}
}

// touchReadOnly reads a byte of every page of the executable's
// read-only mappings, as a large program's start does.
func touchReadOnly(t *testing.T) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	sum := byte(0)
	for l := range strings.Lines(string(maps)) {
		lo, hi, ok := readOnlyOf(strings.TrimSpace(l), exe)
		if !ok {
			continue
		}
		for a := lo; a < hi; a += 4096 {
			p := *(*unsafe.Pointer)(unsafe.Pointer(&a)) // the mapped address itself
			sum += *(*byte)(p)
		}
	}
	_ = sum
}

func TestUnmapReleasesTheExecutablesPages(t *testing.T) {
	touchReadOnly(t)
	before := exeResident(t, "r-xp") + exeResident(t, "r--p")
	if before == 0 {
		t.Fatal("no resident pages of the executable: smaps not read")
	}
	n, err := Unmap()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("Unmap covered no mapping of the executable")
	}
	after := exeResident(t, "r-xp") + exeResident(t, "r--p")
	// Every page was resident; what the measuring touches since comes
	// back (with the kernel's fault-around, 64 KiB or a whole folio a
	// fault), the rest does not.
	if after >= before {
		t.Fatalf("resident KiB of the executable: %d with every page touched, %d after Unmap; want fewer", before, after)
	}
	// The program still runs: code and read-only data come back from the
	// page cache on use.
	if got := strconv.Itoa(12345) + strings.Repeat("x", 2); got != "12345xx" {
		t.Fatalf("after Unmap: %q", got)
	}
}

func TestTrimReturnsTheFreeHeap(t *testing.T) {
	garbage := make([][]byte, 0, 256)
	for range 256 {
		garbage = append(garbage, make([]byte, 64<<10))
	}
	garbage[0][0] = 1
	garbage = nil
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	kept := ms.HeapIdle - ms.HeapReleased // free, still resident
	if _, err := Trim(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	if left := ms.HeapIdle - ms.HeapReleased; left >= 1<<20 || left >= kept {
		t.Fatalf("free heap kept by the process: %d KiB after a collection, %d KiB after Trim; want under 1 MiB and less", kept>>10, left>>10)
	}
	_ = garbage
}

func TestReadOnlyOf(t *testing.T) {
	const exe = "/usr/bin/arbor"
	cases := []struct {
		line   string
		lo, hi uintptr
		ok     bool
	}{
		{"00400000-01f3c000 r-xp 00000000 fe:00 123 /usr/bin/arbor", 0x400000, 0x1f3c000, true},
		{"01f3c000-041ff000 r--p 01b3c000 fe:00 123 /usr/bin/arbor", 0x1f3c000, 0x41ff000, true},
		{"041ff000-043d2000 rw-p 03dff000 fe:00 123 /usr/bin/arbor", 0, 0, false}, // writable data
		{"7f00-8f00 r--s 00000000 fe:00 124 /usr/bin/arbor", 0, 0, false},         // shared mapping
		{"7f00-8f00 r-xp 00000000 fe:00 125 /usr/lib/libc.so.6", 0, 0, false},     // another file
		{"7f00-8f00 r-xp 00000000 00:00 0", 0, 0, false},                          // anonymous
		{"7f00-8f00 ---p 00000000 fe:00 123 /usr/bin/arbor", 0, 0, false},         // no access
		{"zz-8f00 r-xp 00000000 fe:00 123 /usr/bin/arbor", 0, 0, false},           // malformed
		{"9000-8f00 r-xp 00000000 fe:00 123 /usr/bin/arbor", 0, 0, false},         // empty range
		{"", 0, 0, false},
	}
	for _, c := range cases {
		lo, hi, ok := readOnlyOf(c.line, exe)
		if lo != c.lo || hi != c.hi || ok != c.ok {
			t.Errorf("readOnlyOf(%q) = %#x, %#x, %v; want %#x, %#x, %v", c.line, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
}
