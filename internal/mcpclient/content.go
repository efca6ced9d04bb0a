package mcpclient

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
)

// maxResultText caps the text of one result, as the built-ins cap theirs.
const maxResultText = 100_000

// convertResult keeps an MCP result's content blocks for the model: text
// as text, images as images, embedded resources as their text (or image,
// or a note for other binaries), links and audio as notes, and
// structuredContent as JSON text when no text block carries it already.
// isError makes it a tool error.
func convertResult(res *mcp.CallToolResult) tool.Result {
	var (
		texts  []string
		images []llm.Image
	)
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			images = append(images, llm.Image{MediaType: c.MIMEType, Data: base64.StdEncoding.EncodeToString(c.Data)})
		case *mcp.AudioContent:
			texts = append(texts, fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			texts = append(texts, fmt.Sprintf("[resource link: %s %s%s]", c.Name, c.URI, describe(c.MIMEType, c.Description)))
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				switch {
				case r.Text != "" || len(r.Blob) == 0:
					texts = append(texts, fmt.Sprintf("[resource %s%s]\n%s", r.URI, describe(r.MIMEType, ""), r.Text))
				case strings.HasPrefix(r.MIMEType, "image/"):
					images = append(images, llm.Image{MediaType: r.MIMEType, Data: base64.StdEncoding.EncodeToString(r.Blob)})
				default:
					texts = append(texts, fmt.Sprintf("[resource %s%s: %d bytes of binary data, not shown]", r.URI, describe(r.MIMEType, ""), len(r.Blob)))
				}
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				texts = append(texts, string(b))
			}
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && !carried(texts, b) {
			texts = append(texts, string(b))
		}
	}
	text := strings.Join(texts, "\n")
	if len(text) > maxResultText {
		text = text[:maxResultText] + fmt.Sprintf("\n[output truncated: %d characters in all]", len(text))
	}
	if text == "" && len(images) == 0 {
		text = "(no output)"
	}
	return tool.Result{Content: text, IsError: res.IsError, Images: images}
}

func describe(mime, desc string) string {
	var parts []string
	for _, s := range []string{mime, desc} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// carried reports whether a text block is the structured content's JSON
// already (servers are asked to send both).
func carried(texts []string, structured []byte) bool {
	var want any
	if json.Unmarshal(structured, &want) != nil {
		return false
	}
	for _, t := range texts {
		var got any
		if json.Unmarshal([]byte(t), &got) == nil {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			if string(a) == string(b) {
				return true
			}
		}
	}
	return false
}
