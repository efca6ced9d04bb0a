package streamjson_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// FuzzServe feeds arbitrary input to the server (with no model to reach,
// so turns end at once) and checks that it never panics, always ends when
// the input ends, and writes only valid JSON lines.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		initialize,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image"}]}}`,
		`{"type":"control_request","request_id":"x","request":{"subtype":"interrupt"}}`,
		`{"type":"control_request","request":{"subtype":"switch_model"}}`,
		`{"type":"control_response","response":{"subtype":"success","request_id":"nope","response":{"behavior":"allow"}}}`,
		`{"type":"registry_request","request_id":"r","domain":"tools","action":"get","params":{"name":7}}`,
		`{"type":"user","message":{"content":12}}`,
		"{\"type\":\"user\"}\n\n\r\n{",
		`[1,2,3]`,
	} {
		f.Add([]byte(seed))
	}
	home := f.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "c"), "XDG_STATE_HOME": filepath.Join(home, "s"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: home, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(a.Close)
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		// No key: every turn ends with an error result instead of a call.
		if err := streamjson.Serve(context.Background(), a, bytes.NewReader(in), &out, io.Discard, streamjson.Options{}); err != nil {
			t.Fatalf("serve: %v", err)
		}
		r := protocol.NewReader(&out, 0)
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("output line is not a typed JSON object: %v\n%s", err, out.String())
			}
		}
	})
}
