// Package driver picks the database/sql driver that arbor's SQLite store
// runs on, so that the store and the programs that measure against it
// (bench/floor) link the same one.
//
// A build with cgo (the default wherever a C compiler is on PATH) links
// SQLite's own C source through github.com/mattn/go-sqlite3; a build
// without (CGO_ENABLED=0, or no C compiler) links modernc.org/sqlite, the
// same SQLite translated to Go. Both take the data source names the store
// writes (a file: URI with _busy_timeout, _foreign_keys, _journal_mode,
// _synchronous, _txlock and _query_only), and the store's tests pass on
// both (.ci/run runs them without cgo too). The C build starts a session
// in about two thirds of the CPU time and writes faster
// (docs/benchmarks.md, "SQLite through cgo"); the Go build needs no C
// compiler and cross-compiles.
package driver
