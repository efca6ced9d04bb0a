package llmtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// answer is a validated turn resolved for one request: ids generated, tool
// inputs encoded, usage and stop reason defaulted.
type answer struct {
	ID        string
	Model     string
	Created   int64
	Text      string
	Thinking  string
	Signature string
	Calls     []answerCall
	Stop      string // Anthropic vocabulary: end_turn, tool_use, ...
	Usage     Usage
	// IncludeUsage sends OpenAI's final usage chunk.
	IncludeUsage bool
}

type answerCall struct {
	ID    string
	Name  string
	Input string // compact JSON object
}

// resolve turns a validated turn into an answer for req. idPrefix is "msg_"
// or "chatcmpl-", callPrefix "toolu_" or "call_".
func resolve(t Turn, req Request, idPrefix, callPrefix string) (answer, error) {
	a := answer{
		ID:           idPrefix + randomID(),
		Model:        req.Model,
		Created:      time.Now().Unix(),
		Text:         t.Text,
		Thinking:     t.Thinking,
		Stop:         t.StopReason,
		Usage:        t.Usage,
		IncludeUsage: req.IncludeUsage,
	}
	if a.Model == "" {
		a.Model = "llmtest"
	}
	if a.Thinking != "" {
		a.Signature = ThinkingSignature(a.Thinking)
	}
	out := len(a.Text) + len(a.Thinking)
	for _, c := range t.ToolCalls {
		input, err := inputJSON(c.Input)
		if c.RawInput != "" {
			input, err = json.RawMessage(c.RawInput), nil
		}
		if err != nil {
			return answer{}, err
		}
		id := c.ID
		if id == "" {
			id = callPrefix + randomID()
		}
		a.Calls = append(a.Calls, answerCall{ID: id, Name: c.Name, Input: string(input)})
		out += len(c.Name) + len(input)
	}
	if a.Stop == "" {
		a.Stop = "end_turn"
		if len(a.Calls) > 0 {
			a.Stop = "tool_use"
		}
	}
	if a.Usage.Input == 0 {
		a.Usage.Input = max(1, int64(len(req.Body)/4))
	}
	if a.Usage.Output == 0 {
		a.Usage.Output = max(1, int64(out/4))
	}
	return a, nil
}

// ThinkingSignature is the signature the server attaches to a thinking
// block: a deterministic function of the thinking text, so tests can check
// that clients send it back unchanged.
func ThinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return "llmtest-sig-" + base64.RawURLEncoding.EncodeToString(sum[:18])
}

func randomID() string {
	var b [18]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// words splits s into pieces that end after each run of whitespace, so that
// concatenating them gives s back: "a b  c" → "a ", "b  ", "c".
func words(s string) []string {
	var out []string
	start, inSpace := 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if inSpace && !space {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// fragments splits s into up to n pieces of similar size on rune
// boundaries; a string of two or more runes always gives at least two.
func fragments(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if runes < 2 {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	n = min(n, runes)
	size := (runes + n - 1) / n
	var out []string
	var b strings.Builder
	count := 0
	for _, r := range s {
		b.WriteRune(r)
		count++
		if count == size {
			out = append(out, b.String())
			b.Reset()
			count = 0
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// mustJSON encodes wire structs, which cannot fail to encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("llmtest: encoding wire struct: " + err.Error())
	}
	return b
}
