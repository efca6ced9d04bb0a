package streamjson

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/llm"
)

// text flattens a user message's content (a string, or text blocks) and
// its shell context into the text the model sees; image blocks go with it
// as images (see images), other blocks are named as omitted.
func (u userInput) text() (string, error) {
	var b strings.Builder
	if sc := u.ShellContext; sc != nil {
		fmt.Fprintf(&b, "[shell context] cwd: %s", sc.Cwd)
		if sc.LastExitCode != nil {
			fmt.Fprintf(&b, "; last exit code: %d", *sc.LastExitCode)
		}
		b.WriteString("\n\n")
	}
	var s string
	if err := json.Unmarshal(u.Message.Content, &s); err == nil {
		b.WriteString(s)
		return b.String(), nil
	}
	blocks, err := u.blocks()
	if err != nil {
		return "", err
	}
	first := true
	for _, bl := range blocks {
		if bl.Type == "image" {
			continue
		}
		if !first {
			b.WriteString("\n")
		}
		first = false
		switch bl.Type {
		case "text":
			b.WriteString(bl.Text)
		default:
			fmt.Fprintf(&b, "[%s block omitted]", bl.Type)
		}
	}
	return b.String(), nil
}

func (u userInput) blocks() ([]contentBlock, error) {
	var blocks []contentBlock
	if err := json.Unmarshal(u.Message.Content, &blocks); err != nil {
		return nil, errors.New("user message content must be a string or an array of content blocks")
	}
	return blocks, nil
}

// maxImageBytes caps one image of a user message (the providers take 5 MB).
const maxImageBytes = 5 << 20

// images are the user message's image blocks, base64 PNG, JPEG, GIF or
// WebP; any other image block is an error naming what is wrong.
func (u userInput) images() ([]llm.Image, error) {
	var s string
	if json.Unmarshal(u.Message.Content, &s) == nil {
		return nil, nil
	}
	blocks, err := u.blocks()
	if err != nil {
		return nil, err
	}
	var out []llm.Image
	for i, bl := range blocks {
		if bl.Type != "image" {
			continue
		}
		src := bl.Source
		switch {
		case src == nil:
			return nil, fmt.Errorf("content block %d: an image block needs a source", i)
		case src.Type != "base64":
			return nil, fmt.Errorf("content block %d: image source type %q is not taken; send the image as base64", i, src.Type)
		case !slices.Contains([]string{"image/png", "image/jpeg", "image/gif", "image/webp"}, src.MediaType):
			return nil, fmt.Errorf("content block %d: media type %q is not an image arbor sends (image/png, image/jpeg, image/gif, image/webp)", i, src.MediaType)
		case base64.StdEncoding.DecodedLen(len(src.Data)) > maxImageBytes:
			return nil, fmt.Errorf("content block %d: the image is larger than %d MiB", i, maxImageBytes>>20)
		}
		if _, err := base64.StdEncoding.DecodeString(src.Data); err != nil {
			return nil, fmt.Errorf("content block %d: the image data is not base64: %v", i, err)
		}
		out = append(out, llm.Image{MediaType: src.MediaType, Data: src.Data})
	}
	return out, nil
}
