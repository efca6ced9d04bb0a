package dialect

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestAwaitInitialize: under --await-initialize the first line must be
// the initialize request; its launch fields are returned and the line is
// served again, before the rest; settings, managed settings and plugins
// there are refused.
func TestAwaitInitialize(t *testing.T) {
	t.Parallel()
	const init = `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","disallowedTools":["Bash"],"mcpServers":{"x":{"command":"true"}}}}` + "\n"
	const next = `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n"

	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		li, in, err := awaitInitialize(strings.NewReader(init + next))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(li.Request.DisallowedTools, ",") != "Bash" || !hasJSONValue(li.Request.MCPServers) {
			t.Fatalf("launch fields %+v; want Bash denied and the MCP server", li.Request)
		}
		rest, err := io.ReadAll(in)
		if err != nil || string(rest) != init+next {
			t.Fatalf("served input %q, %v; want the initialize line again, then the rest", rest, err)
		}
	})

	for name, input := range map[string]string{
		"user-first": next + init,
		"not-json":   "hello\n",
		"empty":      "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, _, err := awaitInitialize(strings.NewReader(input)); !errors.Is(err, errInitializeNotFirst) {
				t.Fatalf("err = %v, want errInitializeNotFirst", err)
			}
		})
	}

	for _, field := range []string{`"managedSettings":{"a":1}`, `"plugins":[{"type":"local","path":"/p"}]`} {
		t.Run("refused", func(t *testing.T) {
			t.Parallel()
			line := `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize",` + field + `}}` + "\n"
			if _, _, err := awaitInitialize(strings.NewReader(line)); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("%s: err = %v, want a refusal", field, err)
			}
		})
	}
}
