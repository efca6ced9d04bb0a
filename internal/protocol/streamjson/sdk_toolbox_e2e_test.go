package streamjson_test

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestSDKToolbox drives arbor through the Claude Agent SDK with what #31
// added: an image a program sends in a user message reaches the model as
// an image, and a background Bash is read with BashOutput.
func TestSDKToolbox(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)

	t.Run("image", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "A single pixel."})
		r := h.drive(t, "image", srv, nil)
		r.requireDone(t)
		if res := r.result(t); res.Subtype != "success" || res.IsError || res.Result != "A single pixel." {
			r.fatalf(t, "result = {subtype:%q is_error:%v result:%q}", res.Subtype, res.IsError, res.Result)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			r.fatalf(t, "%d model requests", len(reqs))
		}
		var images []llm.Image
		last := reqs[0].Messages[len(reqs[0].Messages)-1]
		for _, p := range last.Parts {
			if p.Type == llm.PartImage {
				images = append(images, *p.Image)
			}
		}
		if len(images) != 1 || images[0].MediaType != "image/png" || !strings.HasPrefix(images[0].Data, "iVBORw0KGgo") ||
			!strings.Contains(last.Text(), "What is in the picture?") {
			r.fatalf(t, "the model's request: images %v, text %q; want the PNG and the question", images, last.Text())
		}
	})

	t.Run("background-bash", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_b1", Name: "Bash", Input: map[string]any{
				"command": "echo from-the-background; sleep 0.3; echo done-now", "run_in_background": true}}}},
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_b2", Name: "Bash", Input: map[string]any{"command": "sleep 1"}}}},
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_b3", Name: "BashOutput", Input: map[string]any{"bash_id": "job_1"}}}},
			llmtest.Turn{Text: "read it"},
		)
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{"permissionMode": "bypassPermissions"}})
		r.requireDone(t)
		reqs := srv.Requests()
		if len(reqs) != 4 {
			r.fatalf(t, "%d model requests", len(reqs))
		}
		if got := reqs[1].LastUserText(); !strings.Contains(got, "started background job job_1") {
			r.fatalf(t, "the background start's result: %q", got)
		}
		got := reqs[3].LastUserText()
		for _, want := range []string{"exited with code 0", "from-the-background", "done-now"} {
			if !strings.Contains(got, want) {
				r.fatalf(t, "BashOutput's result lacks %q: %q", want, got)
			}
		}
	})
}
