package acp_test

import (
	"os"
	"testing"

	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// TestMain lets the test binary serve as the stdio MCP server a client
// names in session/new (mcptest's, when ARBOR_MCP_TEST_SERVER=1).
func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	os.Exit(m.Run())
}
