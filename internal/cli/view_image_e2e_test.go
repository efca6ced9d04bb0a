package cli_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestViewImageReachesTheModel: a node's view_image call puts the image in
// the next model request, in each provider's wire format (Anthropic: an
// image block in the tool result; OpenAI: an image_url part of a user
// message after the tool results).
func TestViewImageReachesTheModel(t *testing.T) {
	t.Parallel()
	img := image.NewRGBA(image.Rect(0, 0, 8, 6))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(buf.Bytes())
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if err := os.WriteFile(filepath.Join(e.workspace, "shot.png"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{1: {
				treetest.Calls(treetest.Call("view_image", map[string]any{"path": "shot.png"})),
				treetest.Complete("a red dot"),
			}}))
			defer srv.Close()
			o := e.run("run", "--model", e.useProvider(provider, srv.URL), "What is in shot.png?")
			if o.code != 0 || strings.TrimSpace(o.stdout) != "a red dot" {
				t.Fatalf("exit %d, stdout %q\nstderr:\n%s", o.code, o.stdout, o.stderr)
			}
			reqs := srv.Requests()
			if len(reqs) < 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			second := reqs[1]
			if provider == "anthropic" {
				var got []llm.Image
				for _, m := range second.Messages {
					for _, p := range m.Parts {
						if p.Type == llm.PartToolResult && p.ToolResult != nil {
							got = append(got, p.ToolResult.Images...)
						}
					}
				}
				if len(got) != 1 || got[0].MediaType != "image/png" || got[0].Data != b64 {
					t.Fatalf("the tool result's images %+v; want the PNG", got)
				}
				return
			}
			if !strings.Contains(string(second.Body), `"url":"data:image/png;base64,`+b64+`"`) {
				t.Fatalf("the OpenAI request has no image_url with the PNG:\n%.3000s", second.Body)
			}
		})
	}
}
