//go:build linux && (amd64 || arm64) && !(cgo && sqlite_cgo)

package driver

import (
	"encoding/binary"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// WAL write batching (the pure-Go SQLite on 64-bit Linux: the replaced
// calls below have its C types).
//
// SQLite's unix VFS writes a WAL frame as two pwrite calls, its 24-byte
// header and its page: a commit of 16 pages was 32 system calls, about a
// fifth of the store's serial writer (docs/benchmarks.md, "Seventeenth
// round"). SQLite lets a program replace the system calls of its unix VFS
// (sqlite3_vfs.xSetSystemCall); installWALBatching replaces pwrite, and the
// calls that must see what it wrote, so that the frames a connection
// writes to a WAL file collect in a buffer and go to the file in one
// pwrite when the commit frame (the one whose header holds the database
// size) is complete: before the write call of that frame returns, so
// before SQLite publishes the commit in the WAL index and before COMMIT
// returns. A commit is thus in the file exactly when it was before, and a
// write error still fails the write of the commit that caused it.
//
// The buffer never outlives what SQLite expects to be written:
//   - a write that does not continue the buffer (a frame rewritten in
//     place, a new transaction after a rollback) writes it out first, and
//     the WAL header (offset 0) goes through at once, as SQLite syncs it
//     right after;
//   - a read, fstat, ftruncate or close of the file writes it out first;
//   - any fcntl of the process (the WAL index's locks are fcntl locks)
//     writes out every buffer first, so no frame is written after its
//     transaction released the write lock, when another connection or
//     process may be writing there;
//   - more than walBufferMax bytes are written out.
//
// A buffer written out by another call than its connection's own write
// (a read, an fcntl of another connection) may fail there: its frames are
// then dropped, and the connection's next write fails with that error,
// so a transaction missing frames never commits. Frames written before
// their commit (a transaction whose dirty pages outgrow the page cache
// spills them) wait in the buffer longer; WriterParams turns spilling off
// on the writer connection (cache_spill), so its buffer only ever holds
// frames of the commit being written.

// walBufferMax bounds a buffer: 256 frames of 4 KiB pages.
const walBufferMax = 1 << 20

// walFile is the buffer of one open WAL file descriptor.
type walFile struct {
	mu      sync.Mutex // guards the fields below
	buf     []byte     // frames not yet written, from offset off
	off     int64
	commit  bool // buf holds a commit frame's header: write out after its page
	pending bool // counted in walPending
	// failed is why frames were dropped since the last write: the next
	// write fails with it.
	failed syscall.Errno
}

var (
	walOnce    sync.Once
	walFiles   sync.Map     // fd (int32) → *walFile, for every WAL file open
	walPending atomic.Int32 // buffers holding data
	walWrites  atomic.Int64 // system calls that wrote buffers out, for tests

	// The system calls replaced, as SQLite's unix VFS had them.
	sysOpen, sysClose, sysPread, sysPwrite, sysFstat, sysFtruncate, sysFcntl uintptr
)

// The C signatures of the replaced calls, as the translated SQLite calls
// them (open and fcntl take their optional argument as SQLite passes it).
type (
	openFunc     = func(*libc.TLS, uintptr, int32, int32) int32
	closeFunc    = func(*libc.TLS, int32) int32
	rwFunc       = func(*libc.TLS, int32, uintptr, uint64, int64) int64
	fstatFunc    = func(*libc.TLS, int32, uintptr) int32
	ftruncFunc   = func(*libc.TLS, int32, int64) int32
	fcntlFunc    = func(*libc.TLS, int32, int32, uintptr) int32
	getCallFunc  = func(*libc.TLS, uintptr, uintptr) uintptr
	setCallFunc  = func(*libc.TLS, uintptr, uintptr, uintptr) int32
	cFuncPointer = uintptr
)

// WriterParams adds to params what the store's writer connection needs.
func WriterParams(params url.Values) {
	params.Add("_pragma", "cache_spill(0)")
}

// prepare makes SQLite batch WAL writes (above), once, before the
// process's first connection is opened (Name's driver calls it): the
// replacement writes the VFS's table of system calls, which every
// connection reads.
func prepare() { walOnce.Do(installWALBatching) }

// installWALBatching replaces the unix VFS's system calls. Connections
// opened before keep theirs: a WAL file they opened is not buffered.
func installWALBatching() {
	tls := libc.NewTLS()
	defer tls.Close()
	vfs := sqlite3.Xsqlite3_vfs_find(tls, 0)
	if vfs == 0 {
		return
	}
	v := (*sqlite3.Tsqlite3_vfs)(cMem(vfs))
	if v.FiVersion < 3 || v.FxSetSystemCall == 0 {
		return
	}
	get, set := fromC[getCallFunc](&v.FxGetSystemCall), fromC[setCallFunc](&v.FxSetSystemCall)
	hooks := []struct {
		name string
		orig *uintptr
		with cFuncPointer
	}{
		{"open", &sysOpen, toC(walOpen)},
		{"close", &sysClose, toC(walClose)},
		{"pread", &sysPread, toC(walPread)},
		{"pwrite", &sysPwrite, toC(walPwrite)},
		{"fstat", &sysFstat, toC(walFstat)},
		{"ftruncate", &sysFtruncate, toC(walFtruncate)},
		{"fcntl", &sysFcntl, toC(walFcntl)},
	}
	names := make([]uintptr, len(hooks))
	for i, h := range hooks {
		z, err := libc.CString(h.name)
		if err != nil {
			return
		}
		defer libc.Xfree(tls, z)
		if names[i], *h.orig = z, get(tls, vfs, z); *h.orig == 0 {
			return // a VFS without one of them: replace none
		}
	}
	// open last: no WAL file is buffered before every other call sees
	// the buffers.
	for i := len(hooks) - 1; i >= 0; i-- {
		if set(tls, vfs, names[i], hooks[i].with) != 0 {
			return // open is not replaced yet: nothing is buffered
		}
	}
}

// cMem is the address p of the C library's memory as a pointer.
func cMem(p uintptr) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(nil), p) }

// fromC is the C function pointer at p as the Go function it is (the
// translated C keeps function pointers as Go function values).
func fromC[F any](p *uintptr) F { return *(*F)(unsafe.Pointer(p)) }

// toC is f as a C function pointer; f must be a top-level function.
func toC[F any](f F) cFuncPointer { return *(*uintptr)(unsafe.Pointer(&f)) }

// setErrno sets the C library's errno of tls.
func setErrno(tls *libc.TLS, e syscall.Errno) {
	*(*int32)(cMem(libc.X__errno_location(tls))) = int32(e)
}

// flushLocked writes out f's buffer. On an error the buffer is dropped:
// its frames are not committed (a commit frame is written out in its own
// write call, which then fails), so they are garbage to SQLite.
func (f *walFile) flushLocked(fd int32) syscall.Errno {
	var errno syscall.Errno
	for done := 0; done < len(f.buf); {
		walWrites.Add(1)
		n, err := syscall.Pwrite(int(fd), f.buf[done:], f.off+int64(done))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			errno = err.(syscall.Errno)
			break
		}
		if n == 0 {
			errno = syscall.EIO
			break
		}
		done += n
	}
	if cap(f.buf) > walBufferMax {
		f.buf = nil
	}
	f.buf, f.commit = f.buf[:0], false
	if f.pending {
		f.pending = false
		walPending.Add(-1)
	}
	return errno
}

// flushFd writes out the buffer of fd, if it has one, for another call
// than its write; false (errno set) when that failed, and then the
// file's next write fails too.
func flushFd(tls *libc.TLS, fd int32) bool {
	v, ok := walFiles.Load(fd)
	if !ok {
		return true
	}
	f := v.(*walFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.flushLocked(fd); e != 0 {
		f.failed = e
		setErrno(tls, e)
		return false
	}
	return true
}

func walOpen(tls *libc.TLS, path uintptr, flags, mode int32) int32 {
	fd := fromC[openFunc](&sysOpen)(tls, path, flags, mode)
	if fd >= 0 && strings.HasSuffix(libc.GoString(path), "-wal") {
		walFiles.Store(fd, &walFile{})
	}
	return fd
}

func walClose(tls *libc.TLS, fd int32) int32 {
	ok := flushFd(tls, fd)
	walFiles.Delete(fd)
	if rc := fromC[closeFunc](&sysClose)(tls, fd); rc != 0 || ok {
		return rc
	}
	return -1
}

func walPread(tls *libc.TLS, fd int32, buf uintptr, n uint64, off int64) int64 {
	if !flushFd(tls, fd) {
		return -1
	}
	return fromC[rwFunc](&sysPread)(tls, fd, buf, n, off)
}

func walFstat(tls *libc.TLS, fd int32, st uintptr) int32 {
	if !flushFd(tls, fd) {
		return -1
	}
	return fromC[fstatFunc](&sysFstat)(tls, fd, st)
}

func walFtruncate(tls *libc.TLS, fd int32, size int64) int32 {
	if !flushFd(tls, fd) {
		return -1
	}
	return fromC[ftruncFunc](&sysFtruncate)(tls, fd, size)
}

// walFcntl writes out every buffer before any fcntl: the locks of the
// WAL index are fcntl locks, and a frame must be in the file before its
// transaction's lock is released. A buffer that fails to write is its
// connection's error (flushFd), not this call's.
func walFcntl(tls *libc.TLS, fd, cmd int32, arg uintptr) int32 {
	if walPending.Load() > 0 {
		walFiles.Range(func(k, _ any) bool {
			flushFd(tls, k.(int32))
			return true
		})
	}
	return fromC[fcntlFunc](&sysFcntl)(tls, fd, cmd, arg)
}

// frameHeaderSize is the size of a WAL frame's header; SQLite writes a
// header, and only a header, with a write of this size.
const frameHeaderSize = 24

func walPwrite(tls *libc.TLS, fd int32, buf uintptr, n uint64, off int64) int64 {
	v, ok := walFiles.Load(fd)
	if !ok || n == 0 {
		return fromC[rwFunc](&sysPwrite)(tls, fd, buf, n, off)
	}
	f := v.(*walFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.failed; e != 0 {
		f.failed = 0
		setErrno(tls, e)
		return -1
	}
	header := off < 32 // the WAL's own header: written and synced at once
	if len(f.buf) > 0 && (header || f.off+int64(len(f.buf)) != off) {
		if e := f.flushLocked(fd); e != 0 {
			setErrno(tls, e)
			return -1
		}
	}
	if header {
		return fromC[rwFunc](&sysPwrite)(tls, fd, buf, n, off)
	}
	if len(f.buf) == 0 {
		f.off = off
	}
	data := unsafe.Slice((*byte)(cMem(buf)), n)
	last := f.commit // the write after a commit frame's header: its page
	if n == frameHeaderSize && binary.BigEndian.Uint32(data[4:8]) != 0 {
		f.commit = true
	}
	f.buf = append(f.buf, data...)
	if !f.pending {
		f.pending = true
		walPending.Add(1)
	}
	if last || len(f.buf) >= walBufferMax {
		if e := f.flushLocked(fd); e != 0 {
			setErrno(tls, e)
			return -1
		}
	}
	return int64(n)
}
