//go:build !(cgo && sqlite_cgo)

package driver

import (
	"database/sql"
	"errors"

	_ "modernc.org/sqlite" // registers "sqlite"
)

// Name is the database/sql driver name to open a store's file with.
const Name = "sqlite"

// Kind says which SQLite this build links.
const Kind = "pure Go, modernc.org/sqlite"

// Busy reports SQLite's SQLITE_BUSY, in its primary or an extended code.
func Busy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// Version is the linked SQLite's version, such as "3.50.4", or "unknown"
// when it cannot be read.
func Version() string {
	db, err := sql.Open(Name, ":memory:")
	if err != nil {
		return "unknown"
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("select sqlite_version()").Scan(&v); err != nil {
		return "unknown"
	}
	return v
}
