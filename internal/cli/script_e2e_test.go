package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptedFaultIsRetried: a scripted model's rate limit is retried as
// a provider's is (retry.max_attempts, Retry-After honoured), so the
// script "429, then success" that docs/llmtest.md shows answers the turn.
// The scripted model once made one attempt only, and the turn failed.
func TestScriptedFaultIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := filepath.Join(e.home, "faults.yaml")
	if err := os.WriteFile(script, []byte("turns:\n  - fault: {kind: rate_limit, retry_after: 1}\n  - text: after the limit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, stdin, stdout := e.startPiped(t, "headless", "--model", "script:"+script)
	sc := bufio.NewScanner(stdout)
	var idle struct {
		Type string `json:"type"`
		Data struct {
			LastOutcome string `json:"last_outcome"`
			LastError   string `json:"last_error"`
		} `json:"payload"`
	}
	var said []string
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
			Data struct {
				Text string `json:"text"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		switch line.Type {
		case "ready":
			fmt.Fprintln(stdin, `{"type":"send","content":"hello"}`)
		case "assistant_message":
			said = append(said, line.Data.Text)
		case "idle":
			if err := json.Unmarshal(sc.Bytes(), &idle); err != nil {
				t.Fatal(err)
			}
			stdin.Close()
		}
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if idle.Data.LastOutcome != "completed" || !strings.Contains(strings.Join(said, ""), "after the limit") {
		t.Fatalf("idle %+v, said %q; want the turn answered after the retry", idle.Data, said)
	}
}
