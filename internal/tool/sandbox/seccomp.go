package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A confined command has a network namespace of its own, but a Unix
// socket with a path is a file: the read-only view of the file system
// still lets a command connect to one, and what listens there runs
// outside (Docker's socket is root on the machine, the user's D-Bus bus
// starts programs, an ssh-agent signs with the user's keys, an arbor run's
// answer socket takes approvals). So confined commands cannot make Unix
// sockets at all: a seccomp filter makes socket(AF_UNIX, …) fail with
// EPERM, as Claude Code's sandbox runtime does. socketpair, which makes a
// connected pair and reaches nothing, still works; abstract sockets are
// the network namespace's own anyway.
//
// A call without network gets the filter from bubblewrap (--seccomp).
// A call with an allow-list has a relay inside that reaches the proxy
// through a Unix socket, so the filter goes on the command alone: arbor's
// binary, run as seccompArg, installs it and then execs the command.

// seccompArg is argv[1] of arbor's binary installing the filter before it
// execs the command that follows "--".
const seccompArg = "__arbor_sandbox_seccomp"

// Classic BPF as seccomp reads it.
const (
	bpfLoadAbs     = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJumpEq      = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfReturn      = 0x06 // BPF_RET | BPF_K
	retAllow       = 0x7fff0000
	retErrno       = 0x00050000
	afUnix         = 1
	offNr          = 0  // seccomp_data.nr
	offArch        = 4  // seccomp_data.arch
	offArg0        = 16 // seccomp_data.args[0], its low half on a little-endian machine
	x32Bit         = 0x40000000
	archX86_64     = 0xc000003e
	archI386       = 0x40000003
	archAArch64    = 0xc00000b7
	i386Socketcall = 102
	i386Socket     = 359
)

// bpf is a program being written: instructions with jumps to labels.
type bpf struct {
	ins    []unix.SockFilter
	labels map[string]int
	jumps  map[int][2]string // instruction → labels of jt and jf ("" next)
}

func (b *bpf) label(name string) { b.labels[name] = len(b.ins) }

func (b *bpf) load(off uint32) {
	b.ins = append(b.ins, unix.SockFilter{Code: bpfLoadAbs, K: off})
}

func (b *bpf) jeq(k uint32, jt, jf string) {
	b.jumps[len(b.ins)] = [2]string{jt, jf}
	b.ins = append(b.ins, unix.SockFilter{Code: bpfJumpEq, K: k})
}

func (b *bpf) ret(k uint32) { b.ins = append(b.ins, unix.SockFilter{Code: bpfReturn, K: k}) }

// resolve fills in the jumps, which go forward only.
func (b *bpf) resolve() []unix.SockFilter {
	for i, j := range b.jumps {
		for n, l := range j {
			off := 0
			if l != "" {
				off = b.labels[l] - i - 1
			}
			if n == 0 {
				b.ins[i].Jt = uint8(off)
			} else {
				b.ins[i].Jf = uint8(off)
			}
		}
	}
	return b.ins
}

// unixSocketFilter is the filter for this machine's architecture, nil
// where arbor has none (then Unix sockets stay reachable).
func unixSocketFilter() []unix.SockFilter {
	b := &bpf{labels: map[string]int{}, jumps: map[int][2]string{}}
	eperm := retErrno | uint32(syscall.EPERM)
	switch runtime.GOARCH {
	case "amd64":
		b.load(offArch)
		b.jeq(archX86_64, "", "i386")
		b.load(offNr)
		b.jeq(uint32(unix.SYS_SOCKET), "family", "")
		b.jeq(uint32(unix.SYS_SOCKET)|x32Bit, "family", "allow")
		// A 32-bit program: socketcall hides its call's arguments, so it
		// is refused whole; socket is judged as the native one.
		b.label("i386")
		b.jeq(archI386, "", "deny")
		b.load(offNr)
		b.jeq(i386Socketcall, "deny", "")
		b.jeq(i386Socket, "family", "allow")
	case "arm64":
		b.load(offArch)
		b.jeq(archAArch64, "", "deny") // no 32-bit programs
		b.load(offNr)
		b.jeq(uint32(unix.SYS_SOCKET), "family", "allow")
	default:
		return nil
	}
	b.label("family")
	b.load(offArg0)
	b.jeq(afUnix, "deny", "allow")
	b.label("allow")
	b.ret(retAllow)
	b.label("deny")
	b.ret(eperm)
	return b.resolve()
}

// filterBytes is prog as bubblewrap's --seccomp reads it: struct
// sock_filter after struct sock_filter, in the machine's byte order.
func filterBytes(prog []unix.SockFilter) []byte {
	out := make([]byte, 0, 8*len(prog))
	for _, f := range prog {
		out = binary.NativeEndian.AppendUint16(out, f.Code)
		out = append(out, f.Jt, f.Jf)
		out = binary.NativeEndian.AppendUint32(out, f.K)
	}
	return out
}

// filterFile is a pipe holding the filter for bubblewrap to read: its read
// end, nil where there is no filter.
func filterFile() (*os.File, error) {
	prog := unixSocketFilter()
	if prog == nil {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp pipe: %w", err)
	}
	_, err = w.Write(filterBytes(prog)) // a few hundred bytes: the pipe holds them
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("sandbox: seccomp pipe: %w", err)
	}
	return r, nil
}

// runSeccomp installs the filter on this process (every thread) and execs
// argv in its place; it returns only when that fails.
func runSeccomp(argv []string) int {
	if len(argv) < 2 || argv[0] != "--" {
		fmt.Fprintln(os.Stderr, "arbor sandbox seccomp: bad arguments")
		return 125
	}
	argv = argv[1:]
	if prog := unixSocketFilter(); prog != nil {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Fprintf(os.Stderr, "arbor sandbox seccomp: no_new_privs: %v\n", err)
			return 125
		}
		fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		const setModeFilter, flagTsync = 1, 1
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, setModeFilter, flagTsync, uintptr(unsafe.Pointer(&fprog))); e != 0 {
			fmt.Fprintf(os.Stderr, "arbor sandbox seccomp: %v\n", e)
			return 125
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "arbor sandbox: %v\n", err)
		return 127
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "arbor sandbox: %s: %v\n", argv[0], err)
	return 126
}
