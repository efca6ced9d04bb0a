package config

import (
	"strings"
	"testing"
)

// TestBadStoreURLKeepsItsPasswordOut: a store URL that does not parse is
// refused with an error that does not repeat the URL (Go's parse error
// quotes it whole, password included).
func TestBadStoreURLKeepsItsPasswordOut(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"postgres://bob:p@ss[w]rd@db.example:5432/arbor", "postgres://bob:FAKE%zzPASS@db/arbor"} {
		b := setup(t)
		b.env["ARBOR_STORE"] = dsn
		_, err := b.load(Overrides{})
		if err == nil || !strings.Contains(err.Error(), "store") || !strings.Contains(err.Error(), "not a valid URL") {
			t.Fatalf("%s: %v, want the store refused", dsn, err)
		}
		if strings.Contains(err.Error(), "ss[w]rd") || strings.Contains(err.Error(), "PASS") {
			t.Fatalf("the error repeats the password: %v", err)
		}
	}
}
