// Package oteltest runs a real OpenTelemetry Collector for tests: the
// collector's otlpreceiver (gRPC and HTTP) writing what it receives as
// OTLP JSON lines, built from internal/telemetry/testdata/otelcol (a
// module of its own, so arbor's go.mod never sees the collector) once per
// source version into the user's cache directory, and started on free
// ports for each test. A collector that cannot be built fails the test
// with the build's output; nothing is skipped.
package oteltest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Collector is one running collector.
type Collector struct {
	// HTTP is the OTLP/HTTP base URL ("http://127.0.0.1:PORT"), GRPC the
	// OTLP/gRPC address ("127.0.0.1:PORT").
	HTTP, GRPC string
	out        string // the JSON lines file
	log        *bytes.Buffer
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Start builds the collector (once per process, reused across processes
// while its sources are unchanged) and starts one on free ports, stopped
// when t ends. A port is free when picked but may be taken before the
// collector binds it (tests run in parallel, in several processes): a
// collector that exits because its address is in use is started again
// on other ports, a few times.
func Start(t testing.TB) *Collector {
	t.Helper()
	buildOnce.Do(func() { binPath, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("build the OpenTelemetry Collector: %v", buildErr)
	}
	dir := t.TempDir()
	const attempts = 5
	for i := 1; ; i++ {
		c, err := start(t, dir)
		if err == nil {
			return c
		}
		if !errors.Is(err, errAddrInUse) || i == attempts {
			t.Fatal(err)
		}
	}
}

// errAddrInUse: the collector exited because a port picked for it was
// taken meanwhile.
var errAddrInUse = errors.New("address already in use")

// start starts one collector on ports free now and waits until both its
// receivers accept connections.
func start(t testing.TB, dir string) (*Collector, error) {
	c := &Collector{out: filepath.Join(dir, "out.jsonl"), log: &bytes.Buffer{}}
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	c.HTTP, c.GRPC = "http://"+httpAddr, grpcAddr
	cfg := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, grpcAddr, httpAddr, c.out)), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(binPath, "--config", "file:"+cfg)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the collector: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second): // a hang guard
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	// Ready when both receivers accept connections.
	deadline := time.Now().Add(time.Minute)
	for _, addr := range []string{grpcAddr, httpAddr} {
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			select {
			case <-exited:
				if bytes.Contains(c.log.Bytes(), []byte("address already in use")) {
					return nil, fmt.Errorf("the collector exited: %w:\n%s", errAddrInUse, c.log)
				}
				return nil, fmt.Errorf("the collector exited:\n%s", c.log)
			default:
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("the collector did not listen on %s:\n%s", addr, c.log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c, nil
}

const config = `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  jsonfile:
    path: %s
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jsonfile]
    metrics:
      receivers: [otlp]
      exporters: [jsonfile]
`

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// srcDir is the collector module's directory.
func srcDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "otelcol")
}

// build builds the collector into the cache directory, named by a hash
// of its sources, unless it is there already.
func build() (string, error) {
	src := srcDir()
	names, err := filepath.Glob(filepath.Join(src, "*"))
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(n), len(b))
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "arbor-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	// One build at a time across test processes (go test runs packages
	// in parallel): the others wait, then find the binary.
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Built beside and renamed: another test process building at the
	// same time never sees half a file.
	tmp, err := os.CreateTemp(dir, "otelcol-build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %w\n%s", src, err, out)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}
