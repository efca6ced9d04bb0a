package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/providertest"
	"github.com/arbor-run/arbor/internal/tool"
)

// sessionRequest is a headless session's request after turns turns: the
// built-in tools, a system prompt of a few KiB and, every third turn, a
// tool call with its result.
func sessionRequest(turns int) *llm.Request {
	req := &llm.Request{Model: "claude-sonnet-4-5", System: strings.Repeat("You are arbor, a careful agent. ", 80)}
	req.Tools = tool.NewRegistry(tool.Builtins(tool.BuiltinOptions{Workspace: "."})...).Specs()
	for i := range turns {
		req.Messages = append(req.Messages, llm.UserText(fmt.Sprintf("Message %d: answer briefly, and say what \"this\" <is> & why.", i+1)))
		if i%3 == 2 {
			call := &llm.ToolCall{ID: fmt.Sprintf("toolu_%04d", i), Name: "read_file", Input: json.RawMessage(`{"path": "README.md", "limit": 40}`)}
			req.Messages = append(req.Messages,
				llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("Reading it."), {Type: llm.PartToolCall, ToolCall: call}}},
				llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: call.ID, Content: strings.Repeat("a line of the readme, ünïcode\n", 40)}}}})
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart(fmt.Sprintf("Reply number %d, short and instant.", i+1))}})
	}
	req.Messages = append(req.Messages, llm.UserText("And now?"))
	return req
}

func thinking(text, sig string) llm.Part {
	return llm.Part{Type: llm.PartThinking, Text: text, Signature: sig}
}

func assistant(parts ...llm.Part) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Parts: parts}
}

func result(r llm.ToolResult) llm.Message {
	return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartToolResult, ToolResult: &r}}}
}

// TestBodyMatchesTheSDK: the body Stream sends is, as a JSON value, the
// body the SDK encodes from its own params for the same request, for
// every kind of part and every place a cache breakpoint can go, whether
// its start is encoded or taken from the cache (one cache for all cases,
// used at once by all); and a request either path refuses, both refuse
// with the same error.
func TestBodyMatchesTheSDK(t *testing.T) {
	t.Parallel()
	heads := new(headCache)
	bare := llm.ToolSpec{Name: "bare"}
	cases := map[string]*llm.Request{
		"Session": sessionRequest(4),
		"ThinkingBudgetAboveTheCap": {Model: "m", MaxTokens: 1000, ThinkingBudget: 4000,
			Messages: []llm.Message{llm.UserText("hi")}},
		"MaxTokens": {Model: "m", MaxTokens: 77, Messages: []llm.Message{llm.UserText("hi")}},
		"ToolsWithoutSystem": {Model: "m", Tools: []llm.ToolSpec{bare, {Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}},
			Messages: []llm.Message{llm.UserText("hi")}},
		"NoMessages": {Model: "m", System: "s"},
		"EndsInThinking": {Model: "m", Messages: []llm.Message{llm.UserText("hi"),
			assistant(llm.TextPart("a"), thinking("hm", "sig"), thinking("", "redacted"), thinking("", ""))}},
		"OnlyThinking": {Model: "m", Messages: []llm.Message{llm.UserText("hi"), assistant(thinking("hm", ""))}},
		"EmptyPartsAndMessages": {Model: "m", Messages: []llm.Message{llm.UserText(""),
			llm.UserText("hi"), assistant(llm.TextPart(""), llm.TextPart("a")), {Role: llm.RoleUser}}},
		"ToolCallsAndResults": {Model: "m", Messages: []llm.Message{llm.UserText("hi"),
			assistant(llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "t"}},
				llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c2", Name: "t", Input: json.RawMessage(`{"x":[1,2]}`)}}),
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c1"}},
				{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c2", Content: "no", IsError: true,
					Images: []llm.Image{{MediaType: "image/png", Data: "iVBORw0KGgo="}, {MediaType: "image/jpeg", Data: "/9j/"}}}}}}}},
		"EndsInAToolCall": {Model: "m", Messages: []llm.Message{llm.UserText("hi"),
			assistant(llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "t", Input: json.RawMessage(`{}`)}})}},
		"UserImages": {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
			llm.ImagePart(llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}), llm.TextPart("what is this?")}}}},
		"ImageOnlyResult": {Model: "m", Messages: []llm.Message{result(llm.ToolResult{CallID: "c", Images: []llm.Image{{MediaType: "image/gif", Data: "R0lG"}}})}},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := requestBody(req, DefaultMaxTokens, nil)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				cached, err := requestBody(req, DefaultMaxTokens, heads)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(cached, got) {
					t.Fatalf("with the cache:\n%s\nwithout:\n%s", cached, got)
				}
			}
			params, err := sdkParams(req, DefaultMaxTokens)
			if err != nil {
				t.Fatal(err)
			}
			want, err := params.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var g, w map[string]any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, got)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if g["stream"] != true {
				t.Fatalf("body does not ask for a stream: %s", got)
			}
			w["stream"] = true // the SDK adds it to the body it sends
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("body differs from the SDK's\n got: %s\nwant: %s", got, want)
			}
		})
	}

	bad := map[string]*llm.Request{
		"ToolWithoutName":     {Model: "m", Tools: []llm.ToolSpec{{Description: "d"}}},
		"ToolSchemaNotJSON":   {Model: "m", Tools: []llm.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":`)}}},
		"CallWithoutName":     {Model: "m", Messages: []llm.Message{assistant(llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c"}})}},
		"CallInputNotJSON":    {Model: "m", Messages: []llm.Message{assistant(llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c", Name: "t", Input: json.RawMessage(`{x}`)}})}},
		"CallPartWithoutCall": {Model: "m", Messages: []llm.Message{assistant(llm.Part{Type: llm.PartToolCall})}},
		"ResultWithoutResult": {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartToolResult}}}}},
		"UnknownPart":         {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: "video"}}}}},
		"UnknownRole":         {Model: "m", Messages: []llm.Message{llm.UserText("hi"), {Role: "system", Parts: []llm.Part{llm.TextPart("x")}}}},
	}
	for name, req := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := requestBody(req, DefaultMaxTokens, heads)
			_, sdkErr := sdkParams(req, DefaultMaxTokens)
			if err == nil || sdkErr == nil || err.Error() != sdkErr.Error() {
				t.Fatalf("requestBody: %v; SDK params: %v", err, sdkErr)
			}
		})
	}
}

// BenchmarkBody encodes a headless session's request after 20 and 200
// turns, as Stream does on every model call (body) and as the SDK did from
// its params (sdk).
func BenchmarkBody(b *testing.B) {
	for _, turns := range []int{0, 20, 200} {
		req := sessionRequest(turns)
		b.Run(fmt.Sprintf("body/turns=%d", turns), func(b *testing.B) {
			heads := new(headCache)
			b.ReportAllocs()
			for b.Loop() {
				body, err := requestBody(req, DefaultMaxTokens, heads)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(body)))
			}
		})
		b.Run(fmt.Sprintf("sdk/turns=%d", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				params, err := sdkParams(req, DefaultMaxTokens)
				if err != nil {
					b.Fatal(err)
				}
				body, err := params.MarshalJSON()
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(body)))
			}
		})
	}
}

// BenchmarkStream is one model call of a headless session after 20 turns,
// over HTTP to the scripted server: encoding, sending, the server's
// answer and decoding the stream.
func BenchmarkStream(b *testing.B) {
	providertest.BenchmarkStream(b, func(baseURL string) llm.Provider { return New(Options{APIKey: "sk-bench", BaseURL: baseURL}) }, sessionRequest(20))
}

// TestNextTurnsBodyFitsItsBuffer: the body of a conversation's next call,
// one turn longer, is encoded into the buffer made for it (the last
// body's messages and room for a turn) without growing it: a buffer
// that grows is copied into one twice its size.
func TestNextTurnsBodyFitsItsBuffer(t *testing.T) {
	for _, turns := range []int{1, 20, 60} {
		heads := new(headCache)
		if _, err := requestBody(sessionRequest(turns), DefaultMaxTokens, heads); err != nil {
			t.Fatal(err)
		}
		next := sessionRequest(turns + 1)
		start, err := headStart(heads, next, DefaultMaxTokens)
		if err != nil {
			t.Fatal(err)
		}
		made := len(start) + heads.Sizes().Hint()
		body, err := requestBody(next, DefaultMaxTokens, heads)
		if err != nil {
			t.Fatal(err)
		}
		if cap(body) > made {
			t.Errorf("after %d turns: the buffer grew from %d to %d bytes for a body of %d", turns, made, cap(body), len(body))
		}
	}
}

// TestHeadIsTheBodyEncodedAtOnce: the start of a body, written by hand,
// is byte for byte the body without messages as encoding/json encodes it
// (what the cache keeps and every call sends), for tools with and without
// a system prompt, thinking, schemas with spaces, and text that JSON
// escapes; and each fits the buffer made for it.
func TestHeadIsTheBodyEncodedAtOnce(t *testing.T) {
	escapes := llm.ToolSpec{Name: "t<&>", Description: "say \"this\" <is> & \\ why\n\t\u2028 ünïcode \x01",
		InputSchema: json.RawMessage("{ \"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": \"string\"}} }")}
	cases := map[string]*llm.Request{
		"Session":            sessionRequest(0),
		"ToolsWithoutSystem": {Model: "m", Tools: []llm.ToolSpec{{Name: "bare"}, escapes}},
		"Thinking":           {Model: "m", MaxTokens: 10, ThinkingBudget: 4000, System: "s <&>", Tools: []llm.ToolSpec{escapes}},
		"NoTools":            {Model: "m", System: "only a system prompt"},
		"Nothing":            {Model: "m"},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := headOf(req, 64000, DefaultMaxTokens)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.encode()
			if err != nil {
				t.Fatal(err)
			}
			var whole bytes.Buffer
			enc := json.NewEncoder(&whole)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&b); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(whole.Bytes(), []byte("}\n"))
			if !bytes.Equal(got, want) {
				t.Fatalf("the head differs from the body encoded whole\n got: %s\nwant: %s", got, want)
			}
			if len(got) > b.room() {
				t.Errorf("the head outgrew its buffer: %d bytes in %d", len(got), b.room())
			}
		})
	}
}

// FuzzAppendString: appendString writes any string, valid UTF-8 or not,
// as encoding/json does with HTML left unescaped.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `say "this" \ that`, "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x01\x1f\x7f",
		"ünïcode, 日本語, 🌳", "\u2028 and \u2029", "\xff", "\xe2\x80", "a\xc3", "\xed\xa0\x80 (a surrogate)", "\uFFFD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := appendString([]byte("x"), s); !bytes.Equal(got[1:], bytes.TrimSuffix(want.Bytes(), []byte("\n"))) || got[0] != 'x' {
			t.Fatalf("appendString(%q) = %s, encoding/json: %s", s, got[1:], want.Bytes())
		}
	})
}
