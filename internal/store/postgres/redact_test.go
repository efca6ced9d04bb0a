package postgres

import (
	"strings"
	"testing"
)

// TestRedactHidesEveryPassword: a connection string in an error message
// keeps its host and database and loses its passwords, the user's and the
// password and sslpassword parameters.
func TestRedactHidesEveryPassword(t *testing.T) {
	t.Parallel()
	for dsn, keep := range map[string]string{
		"postgres://bob:FAKE-PW-1@db.example/arbor":                                  "db.example/arbor",
		"postgres://bob@db.example/arbor?password=FAKE-PW-2&sslmode=disable":         "sslmode=disable",
		"postgresql://db.example:5433/arbor?sslpassword=FAKE-PW-3&user=bob":          "user=bob",
		"postgres://bob:FAKE-PW-4@db.example/arbor?password=FAKE-PW-5&application=a": "application=a",
	} {
		got := redact(dsn)
		if strings.Contains(got, "FAKE-PW") || !strings.Contains(got, keep) {
			t.Fatalf("redact(%q) = %q: a password kept, or %q lost", dsn, got, keep)
		}
	}
	if got := redact("not a url"); got != "(connection string)" {
		t.Fatalf("redact of no URL = %q", got)
	}
}
