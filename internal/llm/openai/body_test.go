package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/llm/providertest"
	"github.com/arbor-run/arbor/internal/tool"
)

// sessionRequest is a headless session's request after turns turns: the
// built-in tools, a system prompt of a few KiB and, every third turn, a
// tool call with its result.
func sessionRequest(turns int) *llm.Request {
	req := &llm.Request{Model: "gpt-5", System: strings.Repeat("You are arbor, a careful agent. ", 80)}
	req.Tools = tool.NewRegistry(tool.Builtins(tool.BuiltinOptions{Workspace: "."})...).Specs()
	for i := range turns {
		req.Messages = append(req.Messages, llm.UserText(fmt.Sprintf("Message %d: answer briefly, and say what \"this\" <is> & why.", i+1)))
		if i%3 == 2 {
			call := &llm.ToolCall{ID: fmt.Sprintf("call_%04d", i), Name: "read_file", Input: json.RawMessage(`{"path": "README.md", "limit": 40}`)}
			req.Messages = append(req.Messages,
				assistant(llm.TextPart("Reading it."), callPart(call)),
				user(resultPart(llm.ToolResult{CallID: call.ID, Content: strings.Repeat("a line of the readme, ünïcode\n", 40)})))
		}
		req.Messages = append(req.Messages, assistant(llm.TextPart(fmt.Sprintf("Reply number %d, short and instant.", i+1))))
	}
	req.Messages = append(req.Messages, llm.UserText("And now?"))
	return req
}

func user(parts ...llm.Part) llm.Message { return llm.Message{Role: llm.RoleUser, Parts: parts} }

func assistant(parts ...llm.Part) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Parts: parts}
}

func thinking(text string) llm.Part { return llm.Part{Type: llm.PartThinking, Text: text} }

func callPart(c *llm.ToolCall) llm.Part { return llm.Part{Type: llm.PartToolCall, ToolCall: c} }

func toolCallPart(id, name, input string) llm.Part {
	return callPart(&llm.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)})
}

func resultPart(r llm.ToolResult) llm.Part { return llm.Part{Type: llm.PartToolResult, ToolResult: &r} }

func png(data string) llm.Image { return llm.Image{MediaType: "image/png", Data: data} }

// TestBodyMatchesTheSDK: the body Stream sends is, as a JSON value, the
// body the SDK encodes from its own params for the same request, for
// every shape of message and part, with either output cap field, whether
// its start is encoded or taken from the cache (one cache for all cases,
// used at once by all); and a request either path refuses, both refuse
// with the same error.
func TestBodyMatchesTheSDK(t *testing.T) {
	t.Parallel()
	heads := new(headCache)
	hi := []llm.Message{llm.UserText("hi")}
	cases := map[string]*llm.Request{
		"Session":                 sessionRequest(4),
		"NoMessages":              {Model: "m"},
		"OnlySystem":              {Model: "m", System: "s"},
		"MaxTokens":               {Model: "m", MaxTokens: 77, Messages: hi},
		"ThinkingBudgetIsNotSent": {Model: "m", ThinkingBudget: 4000, Messages: hi},
		"Tools": {Model: "m", Messages: hi, Tools: []llm.ToolSpec{
			{Name: "bare"},
			{Name: "described", Description: "does <things> & more"},
			{Name: "null", InputSchema: json.RawMessage(" null ")},
			{Name: "empty", InputSchema: json.RawMessage(`{}`)},
			{Name: "spaced", Description: "d", InputSchema: json.RawMessage(" {\n \"type\": \"object\",\n \"properties\": {\"z\": {\"type\": \"string\", \"description\": \"<ü> & \\u2028\"}, \"a\": {\"maximum\": 12345678901234567890, \"minimum\": -1.5e-7}}\n} ")},
		}},
		"UserTexts": {Model: "m", Messages: []llm.Message{
			user(llm.TextPart("one"), llm.TextPart(""), llm.TextPart("two")),
			user(llm.TextPart("")), {Role: llm.RoleUser},
			user(llm.TextPart("three")),
		}},
		"ToolResults": {Model: "m", Messages: []llm.Message{
			llm.UserText("go"),
			assistant(toolCallPart("c1", "ls", ""), toolCallPart("c2", "ls", "null"), toolCallPart("c3", "ls", " null "), toolCallPart("c4", "ls", ` {"a": 1} `), toolCallPart("c5", "ls", `{x`), toolCallPart("c6", "ls", `[1]`)),
			user(llm.TextPart("before"),
				resultPart(llm.ToolResult{CallID: "c1", Content: "a b"}),
				resultPart(llm.ToolResult{CallID: "c2"}),
				resultPart(llm.ToolResult{CallID: "c3", Content: "it failed", IsError: true}),
				resultPart(llm.ToolResult{CallID: "c4", Content: "ERROR: no such file", IsError: true}),
				resultPart(llm.ToolResult{CallID: "c5", IsError: true}),
				resultPart(llm.ToolResult{CallID: "c6", Content: "error", IsError: true}),
				llm.TextPart("after")),
		}},
		"ResultImages": {Model: "m", Messages: []llm.Message{
			llm.UserText("go"),
			assistant(toolCallPart("c1", "shot", "{}"), toolCallPart("c2", "ls", "{}"), toolCallPart("c3", "shot", "{}")),
			user(resultPart(llm.ToolResult{CallID: "c1", Content: "two shots", Images: []llm.Image{png("iVBORw0KGgo="), {MediaType: "image/jpeg", Data: "/9j/"}}}),
				resultPart(llm.ToolResult{CallID: "c2", Content: "no image"}),
				resultPart(llm.ToolResult{CallID: "c3", Images: []llm.Image{png("AAAA")}}),
				llm.TextPart("look")),
			assistant(toolCallPart("c4", "shot", "{}")),
			user(resultPart(llm.ToolResult{CallID: "c4", Images: []llm.Image{png("BBBB")}})),
		}},
		"UserImages": {Model: "m", Messages: []llm.Message{
			user(llm.ImagePart(png("iVBORw0KGgo=")), llm.TextPart("what is this?")),
			assistant(toolCallPart("c1", "shot", "{}")),
			user(resultPart(llm.ToolResult{CallID: "c1", Images: []llm.Image{png("AAAA")}}), llm.ImagePart(png("BBBB"))),
		}},
		"AssistantShapes": {Model: "m", Messages: []llm.Message{
			llm.UserText("hi"),
			assistant(llm.TextPart("a"), llm.TextPart(""), llm.TextPart("b")),
			assistant(thinking("only thinking")),
			assistant(thinking("hm"), llm.TextPart("thought")),
			assistant(llm.TextPart("")),
			{Role: llm.RoleAssistant},
			assistant(llm.TextPart("text and a call"), toolCallPart("c1", "t", `{"x":[1,2]}`)),
		}},
		"Escapes": {Model: "m\"<&>", System: "<b>&amp;</b> \u2028\u2029 \"q\" \\ \t\x01 \xff end",
			Tools: []llm.ToolSpec{{Name: "t<&>", Description: "\xfe\u2028"}},
			Messages: []llm.Message{
				user(llm.TextPart("<script>&</script> \x7f \xc3\x28")),
				assistant(llm.TextPart("\u2028"), toolCallPart("id\"<&>", "t<&>", `{"s":"<&>\u2028"}`)),
				user(resultPart(llm.ToolResult{CallID: "id\"<&>", Content: "</tool>\xff", Images: []llm.Image{{MediaType: "image/<&>", Data: "a+b/c=="}}})),
			}},
	}
	for name, req := range cases {
		for _, official := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/official=%t", name, official), func(t *testing.T) {
				t.Parallel()
				got, err := requestBody(req, DefaultMaxTokens, official, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(got, []byte(`{"stream":true,`)) {
					t.Fatalf("body does not start with stream: %s", got)
				}
				for range 3 {
					cached, err := requestBody(req, DefaultMaxTokens, official, heads)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(cached, got) {
						t.Fatalf("with the cache:\n%s\nwithout:\n%s", cached, got)
					}
				}
				params, err := sdkParams(req, DefaultMaxTokens, official)
				if err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(params)
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
				w["stream"] = true // NewStreaming sets it in the body it sends
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("body differs from the SDK's\n got: %s\nwant: %s", got, want)
				}
			})
		}
	}

	bad := map[string]*llm.Request{
		"ToolWithoutName":      {Model: "m", Tools: []llm.ToolSpec{{Description: "d"}}},
		"ToolSchemaNotJSON":    {Model: "m", Tools: []llm.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":`)}}},
		"ToolSchemaArray":      {Model: "m", Tools: []llm.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`[]`)}}},
		"ToolSchemaString":     {Model: "m", Tools: []llm.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`"object"`)}}},
		"ToolSchemaTrailing":   {Model: "m", Tools: []llm.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{} {}`)}}},
		"ToolSchemaOverflow":   {Model: "m", Tools: []llm.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"maximum":1e400}`)}}},
		"SecondToolBad":        {Model: "m", Tools: []llm.ToolSpec{{Name: "ok"}, {Name: "t", InputSchema: json.RawMessage(`{`)}}},
		"CallWithoutName":      {Model: "m", Messages: []llm.Message{assistant(toolCallPart("c", "", "{}"))}},
		"CallPartWithoutCall":  {Model: "m", Messages: []llm.Message{assistant(llm.Part{Type: llm.PartToolCall})}},
		"AssistantToolResult":  {Model: "m", Messages: []llm.Message{assistant(resultPart(llm.ToolResult{CallID: "c"}))}},
		"AssistantUnknownPart": {Model: "m", Messages: []llm.Message{assistant(llm.Part{Type: "video"})}},
		"ResultWithoutResult":  {Model: "m", Messages: []llm.Message{hi[0], user(llm.Part{Type: llm.PartToolResult})}},
		"UserThinking":         {Model: "m", Messages: []llm.Message{user(thinking("hm"))}},
		"UserToolCall":         {Model: "m", Messages: []llm.Message{user(toolCallPart("c", "t", "{}"))}},
		"UserUnknownPart":      {Model: "m", Messages: []llm.Message{user(llm.TextPart("hi"), llm.Part{Type: "video"})}},
		"UnknownRole":          {Model: "m", Messages: []llm.Message{hi[0], {Role: "system", Parts: []llm.Part{llm.TextPart("x")}}}},
		// Messages were checked before tools: the message's error wins.
		"BadMessageAndBadTool": {Model: "m", Tools: []llm.ToolSpec{{Description: "d"}}, Messages: []llm.Message{{Role: "tool"}}},
	}
	for name, req := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := requestBody(req, DefaultMaxTokens, true, heads)
			_, sdkErr := sdkParams(req, DefaultMaxTokens, true)
			if err == nil || sdkErr == nil || err.Error() != sdkErr.Error() {
				t.Fatalf("requestBody: %v; SDK params: %v", err, sdkErr)
			}
		})
	}
}

// TestStreamSendsTheBody: the server gets the body requestBody encodes,
// byte for byte, in place of the SDK's params, with the "stream" the SDK
// sets in it left as it was.
func TestStreamSendsTheBody(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "hi"})
	t.Cleanup(srv.Close)
	p := New(Options{BaseURL: srv.URL})
	req := sessionRequest(3)
	if _, err := llm.Collect(p.Stream(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	want, err := requestBody(req, DefaultMaxTokens, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !bytes.Equal(reqs[0].Body, want) {
		t.Fatalf("server got %d requests; body:\n%s\nwant:\n%s", len(reqs), reqs[0].Body, want)
	}
}

// BenchmarkBody encodes a headless session's request after 0, 20 and 200
// turns, as Stream does on every model call (body, with the cache of one
// Provider) and as the SDK did from its params (sdk; MarshalJSON is what
// the SDK calls on them).
func BenchmarkBody(b *testing.B) {
	for _, turns := range []int{0, 20, 200} {
		req := sessionRequest(turns)
		b.Run(fmt.Sprintf("body/turns=%d", turns), func(b *testing.B) {
			heads := new(headCache)
			b.ReportAllocs()
			for b.Loop() {
				body, err := requestBody(req, DefaultMaxTokens, true, heads)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(body)))
			}
		})
		b.Run(fmt.Sprintf("sdk/turns=%d", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				params, err := sdkParams(req, DefaultMaxTokens, true)
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
// one turn longer, is encoded into the buffer made for it without growing
// it (as in the anthropic provider).
func TestNextTurnsBodyFitsItsBuffer(t *testing.T) {
	for _, turns := range []int{1, 20, 60} {
		heads := new(headCache)
		if _, err := requestBody(sessionRequest(turns), DefaultMaxTokens, true, heads); err != nil {
			t.Fatal(err)
		}
		next := sessionRequest(turns + 1)
		made := heads.Sizes().Hint()
		body, err := requestBody(next, DefaultMaxTokens, true, heads)
		if err != nil {
			t.Fatal(err)
		}
		if start := len(body) - heads.Sizes().Last(); cap(body) > start+made {
			t.Errorf("after %d turns: the buffer grew from %d to %d bytes for a body of %d", turns, start+made, cap(body), len(body))
		}
	}
}
