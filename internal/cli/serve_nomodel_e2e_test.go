package cli_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeWithoutAModel: arbor serve with no model configured says at
// start that runs can be watched but not started, and starting one is
// 503 with the reason; before, it started in silence and the start was a
// 500.
func TestServeWithoutAModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	c := e.cmd(ctx, "serve", "--addr", "127.0.0.1:0")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no link printed: %v %s", err, errb.String())
	}
	link, _ := strings.CutPrefix(strings.TrimSpace(line), "arbor: serving on ")
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+u.Host+"/api/runs", strings.NewReader(`{"goal":"hi"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("start without a model: %d, want 503", res.StatusCode)
	}
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if s := errb.String(); !strings.Contains(s, "no model configured") || !strings.Contains(s, "not started or resumed") {
		t.Fatalf("stderr should say runs cannot be started:\n%s", s)
	}
}
