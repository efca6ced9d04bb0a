//go:build !(linux && (amd64 || arm64)) && !(cgo && sqlite_cgo)

package driver

import "net/url"

// WriterParams adds to params what the store's writer connection needs:
// nothing here (on 64-bit Linux the pure-Go SQLite batches WAL writes,
// walbatch.go).
func WriterParams(url.Values) {}

// prepare does nothing here: there is no WAL batching to install.
func prepare() {}
