package mcpclient

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
)

// Caps of one result.
const (
	// maxResultText caps the text of one result, as the built-ins cap
	// theirs.
	maxResultText = 100_000
	// maxResultImages caps the images of one result.
	maxResultImages = 20
	// maxImageBytes is the largest image sent to the model (the providers
	// refuse images above 5 MB).
	maxImageBytes = 5 << 20
)

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
			images, texts = addImage(images, texts, c.MIMEType, c.Data)
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
					images, texts = addImage(images, texts, r.MIMEType, r.Blob)
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
	if len(images) > maxResultImages {
		texts = append(texts, fmt.Sprintf("[%d more images not shown: at most %d in one result]", len(images)-maxResultImages, maxResultImages))
		images = images[:maxResultImages]
	}
	text := strings.Join(texts, "\n")
	if len(text) > maxResultText {
		text = cutUTF8(text, maxResultText) + fmt.Sprintf("\n[output truncated: %d bytes in all]", len(text))
	}
	if text == "" && len(images) == 0 {
		text = "(no output)"
	}
	return tool.Result{Content: text, IsError: res.IsError, Images: images}
}

// addImage adds an image block: as an image when it is one the
// providers take (PNG, JPEG, GIF or WebP by its bytes, which name its
// type whatever the server said, within maxImageBytes), else as a note.
func addImage(images []llm.Image, texts []string, mime string, data []byte) ([]llm.Image, []string) {
	switch media := http.DetectContentType(data); {
	case media != "image/png" && media != "image/jpeg" && media != "image/gif" && media != "image/webp":
		return images, append(texts, fmt.Sprintf("[image %s, %d bytes: not a PNG, JPEG, GIF or WebP image, not shown]", mime, len(data)))
	case len(data) > maxImageBytes:
		return images, append(texts, fmt.Sprintf("[image %s, %d bytes: larger than the %d MiB the models take, not shown]", mime, len(data), maxImageBytes>>20))
	default:
		return append(images, llm.Image{MediaType: media, Data: base64.StdEncoding.EncodeToString(data)}), texts
	}
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
// Both sides are compared in encoding/json's form, the structured
// content's computed once: a result may have thousands of blocks.
func carried(texts []string, structured []byte) bool {
	var want any
	if json.Unmarshal(structured, &want) != nil {
		return false
	}
	b, err := json.Marshal(want)
	if err != nil {
		return false
	}
	for _, t := range texts {
		var got any
		if json.Unmarshal([]byte(t), &got) == nil {
			if a, err := json.Marshal(got); err == nil && string(a) == string(b) {
				return true
			}
		}
	}
	return false
}
