//go:build !unix

package sqlite

// lock takes no lock on a system without flock: writes rely on SQLite's
// busy_timeout alone.
func (l hostLock) lock() bool { return false }

func (l hostLock) unlock() {}
