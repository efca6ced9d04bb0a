package sqlite

import "os"

// The host write lock.
//
// SQLite makes a writer that finds the write lock taken poll for it:
// sleep, try, sleep longer (up to 100 ms), until busy_timeout. With many
// processes writing one file (a gateway's thousand headless sessions, all
// answering at once) the lock then sits free while its waiters sleep,
// and writes fail with SQLITE_BUSY after the timeout: at 1,000 sessions
// most turns did. So every write transaction of an arbor process first
// takes an exclusive flock on a file beside the database (<db>-wlock),
// which the kernel hands to the next waiter the moment it is released,
// and holds it until its COMMIT or ROLLBACK. SQLite's own lock stays what
// keeps the file consistent; busy_timeout still bounds a wait for a
// process that does not take the flock (an older arbor, the sqlite3
// shell). A wait for the flock has no timeout, as a transaction holds it
// only while it runs; it is a plain blocking system call, and costs no
// CPU while it waits. Where flock is missing, or the file cannot be
// opened, writes go without it, as before.

// hostLock is one open description of the lock file; its zero value (nil
// f) locks nothing.
type hostLock struct{ f *os.File }

// openHostLock opens the host lock of the database at path.
func openHostLock(path string) hostLock {
	f, err := os.OpenFile(path+"-wlock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return hostLock{}
	}
	return hostLock{f: f}
}

// close closes the lock file (releasing the lock if held).
func (l hostLock) close() {
	if l.f != nil {
		_ = l.f.Close()
	}
}
