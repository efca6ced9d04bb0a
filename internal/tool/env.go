// The environment of the commands agents run (shell, background jobs):
// arbor's own, without the variables that hold arbor's credentials.

package tool

import (
	"os"
	"slices"
	"strings"
)

// CredentialEnv are the variables of arbor's own credentials: the
// built-in providers' keys, the bearer tokens of arbor mcp and arbor serve,
// the store's connection string (a PostgreSQL password) and the
// OpenTelemetry exporter's headers (a hosted collector's key). A command
// an agent runs never gets them (nor BuiltinOptions.WithheldEnv, the keys
// of configured providers): its output reaches the model, and redacting a
// key from the output does not stop a model that encodes it first.
var CredentialEnv = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY",
	"ARBOR_MCP_TOKEN", "ARBOR_SERVE_TOKEN", "ARBOR_STORE",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
}

// agentEnv is arbor's environment without CredentialEnv and withheld.
func agentEnv(withheld []string) []string {
	env := os.Environ()
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(CredentialEnv, name) || slices.Contains(withheld, name)
	})
}
