// Package driver picks the database/sql driver that arbor's SQLite store
// runs on, so that the store and the programs that measure against it
// (bench/floor) link the same one.
//
// By default arbor links modernc.org/sqlite, SQLite translated to Go: it
// builds with no C compiler, in seconds, for any platform Go targets. A
// build with the sqlite_cgo tag (go build -tags sqlite_cgo, cgo enabled)
// links SQLite's C source through github.com/mattn/go-sqlite3 instead,
// which keeps less memory per session and writes with less CPU but
// needs a C compiler, takes the first build about 45 s longer on two
// cores, and costs about 10 % more CPU per turn when a thousand sessions
// contend for two cores (docs/benchmarks.md, "SQLite through cgo").
// Without cgo the tag is ignored. Both drivers take the data source names
// the store writes (a file: URI with _busy_timeout, _foreign_keys,
// _journal_mode, _synchronous, _txlock and _query_only), and the store's
// tests pass on both (.ci/run runs them with the tag too). On 64-bit
// Linux the pure-Go one writes a commit's WAL frames with one system call
// (walbatch.go; WriterParams sets it up).
package driver
