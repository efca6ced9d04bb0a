package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of what a server's tool list puts in every model request. The
// providers refuse a request whose tools break their rules, and they
// would refuse every later request of the session too.
const (
	// maxName is the providers' limit on a tool's name (Anthropic's and
	// OpenAI's ^[a-zA-Z0-9_-]{1,64}$).
	maxName = 64
	// maxDescription caps a tool's description, as Claude Code caps MCP
	// tools' descriptions.
	maxDescription = 2048
	// maxSchema caps a tool's input schema; a larger one is replaced by
	// an open object schema.
	maxSchema = 100_000
)

// ToolName is the name the model sees for tool of server:
// mcp__<server>__<tool>, with characters other than letters, digits, '_'
// and '-' replaced by '_', as Claude Code names them. A name longer than
// the providers' 64 characters is cut to 55 and ends with '_' and 8 hex
// digits of a hash of the server's and the tool's own names.
func ToolName(server, tool string) string {
	name := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(name) <= maxName {
		return name
	}
	return hashed(name, server+"\x00"+tool)
}

// hashed is name cut to fit the providers' limit with a hash of key at
// its end.
func hashed(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	return name[:min(len(name), maxName-9)] + "_" + hex.EncodeToString(sum[:4])
}

func sanitize(s string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			return c
		}
		return '_'
	}, s)
}

// nameKey is how the registry (and a provider, for its purposes) tells
// tool names apart: case, '_' and '-' do not count.
func nameKey(name string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
}

// openSchema is the input schema of a tool whose own the providers would
// refuse: any object.
var openSchema = json.RawMessage(`{"type":"object"}`)

// inputSchema is the server's input schema of a tool as the providers
// take it (a JSON object whose type is object, whose properties is an
// object and whose required is an array of strings), or openSchema and
// why it replaced the server's.
func inputSchema(s any) (json.RawMessage, string) {
	if s == nil {
		return openSchema, ""
	}
	raw, err := json.Marshal(s)
	if err != nil || string(raw) == "null" {
		return openSchema, ""
	}
	if len(raw) > maxSchema {
		return openSchema, fmt.Sprintf("its input schema of %d bytes was too large to show; give the arguments its description names", len(raw))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return openSchema, "its input schema was not a JSON object"
	}
	var typ string
	if t, ok := obj["type"]; ok && (json.Unmarshal(t, &typ) != nil || typ != "object") {
		return openSchema, "its input schema did not describe an object"
	}
	if p, ok := obj["properties"]; ok {
		var props map[string]json.RawMessage
		if json.Unmarshal(p, &props) != nil {
			return openSchema, "its input schema's properties were not an object"
		}
	}
	if r, ok := obj["required"]; ok {
		var req []string
		if json.Unmarshal(r, &req) != nil {
			return openSchema, "its input schema's required was not a list of names"
		}
	}
	if _, ok := obj["type"]; !ok {
		obj["type"] = json.RawMessage(`"object"`)
		if raw, err = json.Marshal(obj); err != nil {
			return openSchema, ""
		}
	}
	return raw, ""
}

// description is the server's description of a tool cut to
// maxDescription, with a note when it was cut or its schema replaced.
func description(desc, schemaNote string) string {
	if len(desc) > maxDescription {
		desc = cutUTF8(desc, maxDescription) + fmt.Sprintf("\n[description cut: %d bytes in all]", len(desc))
	}
	if schemaNote != "" {
		desc += "\n[arbor: " + schemaNote + ".]"
	}
	return desc
}

// cutUTF8 is s cut to at most n bytes, never inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
