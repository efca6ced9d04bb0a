package cli_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestServeWithoutAModel: arbor serve with no model configured says at
// start that runs can be watched but not started, and starting one is
// 503 with the reason; before, it started in silence and the start was a
// 500.
func TestServeWithoutAModel(t *testing.T) {
	t.Parallel()
	web := startServe(t, newEnv(t))
	if code := web.post("/api/runs", `{"goal":"hi"}`, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("start without a model: %d, want 503", code)
	}
	if s := web.stop(); !strings.Contains(s, "no model configured") || !strings.Contains(s, "not started or resumed") {
		t.Fatalf("stderr should say runs cannot be started:\n%s", s)
	}
}
