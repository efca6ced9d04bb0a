//go:build cgo && sqlite_cgo

package driver

import (
	"errors"
	"net/url"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Name is the database/sql driver name to open a store's file with.
const Name = "sqlite3"

// Kind says which SQLite this build links.
const Kind = "cgo, github.com/mattn/go-sqlite3"

// Busy reports SQLite's SQLITE_BUSY, in its primary or an extended code.
func Busy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrBusy
}

// Version is the linked SQLite's version, such as "3.50.4".
func Version() string {
	v, _, _ := sqlite3.Version()
	return v
}

// WriterParams adds to params what the store's writer connection needs:
// nothing with this driver (the pure-Go one batches WAL writes,
// walbatch.go).
func WriterParams(url.Values) {}
