package mcpclient

import (
	"os"
	"testing"

	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// The test binary is also the stdio test server (mcptest).
func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	serveHostileIfAsked()
	os.Exit(m.Run())
}

func testServerEnv(extra map[string]string) map[string]string {
	env := map[string]string{mcptest.EnvServe: "1"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}
