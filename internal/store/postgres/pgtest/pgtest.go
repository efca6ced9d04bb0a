// Package pgtest gives tests a real PostgreSQL and isolates each test in
// its own schema, so tests of the postgres dialect (and end-to-end tests
// running arbor on it) run in parallel against one server.
//
// Where the server comes from is ARBOR_TEST_POSTGRES:
//
//   - a DSN (postgres://…): that server; each test gets a fresh schema in
//     its database, dropped when the test ends;
//   - "skip": tests that need PostgreSQL skip, saying so;
//   - unset: the first test that needs one starts a throwaway server
//     (initdb into a temporary directory, a free loopback port, the unix
//     socket in that directory, as a non-root user when running as root),
//     shared by the package's tests and stopped by Main. When the
//     PostgreSQL binaries are missing, those tests fail and say to run
//     scripts/test.sh, which installs them; they never skip silently.
//
// A package using it calls Main from its TestMain.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvVar names the variable that says which server tests use.
const EnvVar = "ARBOR_TEST_POSTGRES"

var (
	startOnce sync.Once
	shared    *Server
	startErr  error
	adminOnce sync.Once
	admin     *pgxpool.Pool
	adminErr  error
)

// Main runs the package's tests, stops the server they started (if any)
// and exits. Call it from TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the throwaway server, if a test started one. A TestMain that
// does more than Main calls it after m.Run.
func Stop() {
	if admin != nil {
		admin.Close()
	}
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop the test server: %v\n", err)
		}
	}
}

// ServerDSN returns the DSN of the server tests use, starting the
// throwaway one on first use. It skips t when ARBOR_TEST_POSTGRES=skip and
// fails it when no server can be had.
func ServerDSN(t testing.TB) string {
	t.Helper()
	switch v := os.Getenv(EnvVar); v {
	case "skip":
		t.Skipf("%s=skip: PostgreSQL tests are skipped", EnvVar)
		return ""
	case "":
		startOnce.Do(func() { shared, startErr = Start(context.Background()) })
		if errors.Is(startErr, errNotInstalled) {
			t.Fatalf("no PostgreSQL for the tests: %v: run `bash scripts/test.sh`, which installs them (or apt-get install postgresql), or set %s to a postgres:// DSN, or to skip", startErr, EnvVar)
		}
		if startErr != nil {
			t.Fatalf("no PostgreSQL for the tests: %v\n(set %s to a postgres:// DSN to use another server, or to skip)", startErr, EnvVar)
		}
		return shared.DSN
	default:
		return v
	}
}

// DSN returns a DSN whose search_path is a new, empty schema of the test
// server, dropped (with everything in it) when t ends.
func DSN(t testing.TB) string {
	t.Helper()
	base := ServerDSN(t)
	adminOnce.Do(func() { admin, adminErr = pgxpool.New(context.Background(), base) })
	if adminErr != nil {
		t.Fatalf("connect to the test PostgreSQL: %v", adminErr)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "arbor_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	dsn, err := WithSearchPath(base, schema)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// WithSearchPath returns dsn (a postgres:// URL) with its search_path set
// to schema.
func WithSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s is not a postgres:// URL", EnvVar)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
