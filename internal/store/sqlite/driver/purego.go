//go:build !(cgo && sqlite_cgo)

package driver

import (
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// Name is the database/sql driver name to open a store's file with:
// modernc's driver behind one that prepares SQLite (prepare) before it
// opens the process's first connection.
const Name = "arbor-sqlite"

func init() { sql.Register(Name, preparing{&sqlite.Driver{}}) }

// preparing opens connections with its Driver once SQLite is prepared:
// the unix VFS's system calls are replaced (walbatch.go) before any
// connection can read them, whichever goroutine opens the first one.
type preparing struct{ sqldriver.Driver }

func (d preparing) Open(dsn string) (sqldriver.Conn, error) {
	prepare()
	return d.Driver.Open(dsn)
}

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
