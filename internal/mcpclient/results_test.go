package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestResultsTheProvidersAccept: what a tool result gives the model is
// valid UTF-8 where it was cut, and holds only images the providers take
// (PNG, JPEG, GIF or WebP by their bytes, whatever the server calls them,
// within 5 MiB, at most maxResultImages); the others are notes. An
// image the provider refuses would fail every later request of the
// session, as the image stays in its history.
func TestResultsTheProvidersAccept(t *testing.T) {
	t.Parallel()
	srv, called := hostileServer(t, "results"), fifo(t)
	srv.Env[envHostileFIFO] = called
	b := setup(t, map[string]config.MCPServer{"bad": srv}, nil)

	t.Run("a cut keeps whole characters", func(t *testing.T) {
		res := call(t, b.tool(t, "mcp__bad__utf8"), `{}`)
		if !utf8.ValidString(res.Content) || !strings.Contains(res.Content, "[output truncated: 100019 bytes in all]") {
			t.Fatalf("content ends %q (valid UTF-8: %v)", res.Content[len(res.Content)-60:], utf8.ValidString(res.Content))
		}
	})

	t.Run("images", func(t *testing.T) {
		res := call(t, b.tool(t, "mcp__bad__images"), `{}`)
		if len(res.Images) != 20 {
			t.Fatalf("%d images, want 20", len(res.Images))
		}
		for i, img := range res.Images {
			data, err := base64.StdEncoding.DecodeString(img.Data)
			if err != nil || img.MediaType != "image/png" || len(data) != len(mcptest.TinyPNG) {
				t.Fatalf("image %d: %s of %d bytes (%v)", i, img.MediaType, len(data), err)
			}
		}
		for _, want := range []string{
			"[image image/svg+xml, 41 bytes: not a PNG, JPEG, GIF or WebP image, not shown]",
			"[image image/png, 20 bytes: not a PNG, JPEG, GIF or WebP image, not shown]",
			"[image image/png, 6291472 bytes: larger than the 5 MiB the models take, not shown]",
			"[11 more images not shown: at most 20 in one result]",
		} {
			if !strings.Contains(res.Content, want) {
				t.Fatalf("content %q lacks %q", res.Content, want)
			}
		}
	})

	t.Run("a result larger than a message may be", func(t *testing.T) {
		res := call(t, b.tool(t, "mcp__bad__huge"), `{}`)
		if !res.IsError || !strings.Contains(res.Content, "larger than") {
			t.Fatalf("result = %.300s", res.Content)
		}
	})

	t.Run("a call that never ends ends with its context", func(t *testing.T) {
		b.waitFor(t, "the server to be back", func() bool { st := b.m.Status()[0]; return st.State == StateConnected && st.Restarts == 1 })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan tool.Result, 1)
		hang := b.tool(t, "mcp__bad__hang")
		go func() { done <- hang.Run(ctx, tool.Call{ID: "h", Input: json.RawMessage(`{}`)}) }()
		arrived := make(chan error, 1)
		go func() { _, err := os.ReadFile(called); arrived <- err }()
		select {
		case err := <-arrived:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the call did not reach the server")
		}
		cancel()
		select {
		case res := <-done:
			if !res.IsError {
				t.Fatalf("result = %+v", res)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a cancelled call did not return")
		}
		if res := call(t, b.tool(t, "mcp__bad__echo"), `{}`); res.Content != "called echo" {
			t.Fatalf("after the cancelled call: %+v", res)
		}
	})
}

// TestToolTimeout: a call that gets no answer within its server's
// tool_timeout ends with a tool error saying so, and the server's other
// calls go on.
func TestToolTimeout(t *testing.T) {
	t.Parallel()
	srv := hostileServer(t, "results")
	srv.ToolTimeout = time.Second
	b := setup(t, map[string]config.MCPServer{"slow": srv}, nil)
	res := call(t, b.tool(t, "mcp__slow__hang"), `{}`)
	if !res.IsError || !strings.Contains(res.Content, "hang did not answer within 1s (its tool_timeout)") {
		t.Fatalf("result = %+v", res)
	}
	if res := call(t, b.tool(t, "mcp__slow__echo"), `{}`); res.Content != "called echo" {
		t.Fatalf("after the timeout: %+v", res)
	}
}

// TestServerThatStopsReading: a stdio server that stops reading its stdin
// cannot hold a call whose arguments fill the pipe beyond its
// tool_timeout (nor a second call behind it), nor arbor's Stop.
func TestServerThatStopsReading(t *testing.T) {
	t.Parallel()
	srv := hostileServer(t, "results")
	srv.ToolTimeout = time.Second
	b := setup(t, map[string]config.MCPServer{"deaf": srv}, nil)
	if res := call(t, b.tool(t, "mcp__deaf__deafen"), `{}`); res.Content != "deaf now" {
		t.Fatalf("deafen = %+v", res)
	}
	big := `{"text":"` + strings.Repeat("x", 4<<20) + `"}`
	done := make(chan tool.Result, 2)
	echo := b.tool(t, "mcp__deaf__echo")
	for _, input := range []string{big, `{"text":"small"}`} {
		go func() { done <- echo.Run(context.Background(), tool.Call{ID: "c", Input: json.RawMessage(input)}) }()
	}
	for range 2 {
		select {
		case res := <-done:
			if !res.IsError || !strings.Contains(res.Content, "tool_timeout") {
				t.Fatalf("result = %.300s", res.Content)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a call to a server that reads nothing outlived its tool_timeout")
		}
	}
	stopped := make(chan struct{})
	go func() { b.m.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatal("Stop hung on a server that reads nothing")
	}
}

// TestMalformedResults: a call answered with a null result, or with
// content blocks of an unknown type, null or incomplete, gives the model
// a result (an error, or what could be read) and arbor goes on.
func TestMalformedResults(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"odd": hostileServer(t, "results")}, nil)
	if res := call(t, b.tool(t, "mcp__odd__null"), `{}`); res.IsError || res.Content != "(no output)" {
		t.Fatalf("null = %+v", res)
	}
	if res := call(t, b.tool(t, "mcp__odd__odd"), `{}`); !res.IsError || !strings.Contains(res.Content, "calling odd failed") {
		t.Fatalf("odd = %+v", res)
	}
	if res := call(t, b.tool(t, "mcp__odd__echo"), `{}`); res.Content != "called echo" {
		t.Fatalf("after: %+v", res)
	}
}

// TestManyBlocks: a result of 20,000 text blocks and a large
// structuredContent gives the model its blocks, cut at the cap. Its cost
// is BenchmarkCarried's: the check whether a text block carries the
// structured content already encoded the structured content again for
// every block, minutes of CPU for this one result.
func TestManyBlocks(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"many": hostileServer(t, "results")}, nil)
	res := b.tool(t, "mcp__many__blocks").Run(context.Background(), tool.Call{ID: "b", Input: json.RawMessage(`{}`)})
	if res.IsError || !strings.HasPrefix(res.Content, "1\n1\n") || !strings.Contains(res.Content, "[output truncated") {
		t.Fatalf("result = %.200s", res.Content)
	}
}

// BenchmarkCarried: carried over 2,000 small JSON text blocks and 400 KiB
// of structured content none of them carries; its cost grows with the
// blocks plus the structured content, not with their product (4.5–5.0
// ms an op here; 886 ms when the structured content was encoded again
// for every block).
func BenchmarkCarried(b *testing.B) {
	texts := make([]string, 2000)
	for i := range texts {
		texts[i] = "1"
	}
	structured, err := json.Marshal(map[string]string{"data": strings.Repeat("x", 400<<10)})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if carried(texts, structured) {
			b.Fatal("no block carries the structured content")
		}
	}
}
