package tool

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"net/http"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/arbor-run/arbor/internal/llm"
)

// Caps of view_image.
const (
	// viewImageMaxFileBytes is the largest file view_image reads.
	viewImageMaxFileBytes = 20 << 20
	// viewImageMaxEdge is the longest side, in pixels, an image reaches the
	// model with: larger ones are scaled down to it (the size Anthropic's
	// models see without scaling of their own; OpenAI's high detail tiles
	// 2048 × 768 at most).
	viewImageMaxEdge = 1568
	// viewImageMaxSendBytes is the largest image sent to the model (the
	// providers refuse images above 5 MB).
	viewImageMaxSendBytes = 5 << 20
)

type viewImageArgs struct {
	Path string `json:"path" jsonschema_description:"Image file to look at (PNG, JPEG, GIF or WebP): relative to the workspace root, or absolute."`
}

func (a viewImageArgs) Target() Target { return Target{Paths: []string{a.Path}} }

const viewImageDescription = `Look at an image file (PNG, JPEG, GIF or WebP): a screenshot, a diagram, a photo. ` +
	`The image is shown to you with the result; one larger than 1568 pixels on its longest side is scaled down first.`

func newViewImage(root workRoot) Tool {
	return New("view_image", viewImageDescription, KindRead, func(_ context.Context, _ Call, a viewImageArgs) Result {
		return root.viewImage(a)
	})
}

func (w workRoot) viewImage(a viewImageArgs) Result {
	if a.Path == "" {
		return Errorf("path is empty")
	}
	pl, err := w.locate(w.abs(a.Path))
	if err != nil {
		return pathError(a.Path, err)
	}
	defer pl.Close()
	data, info, err := pl.readFile(viewImageMaxFileBytes, func(size int64) error {
		return fmt.Errorf("%s is too large to view (%d bytes; the limit is %d)", a.Path, size, viewImageMaxFileBytes)
	})
	switch {
	case err != nil && info != nil:
		return Errorf("%v", err)
	case err != nil:
		return pathError(a.Path, err)
	case info.IsDir():
		return Errorf("%s is a directory; give an image file", a.Path)
	}
	media := http.DetectContentType(data)
	decode := map[string]func([]byte) (image.Image, error){
		"image/png":  func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) },
		"image/jpeg": func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) },
		"image/gif":  func(b []byte) (image.Image, error) { return gif.Decode(bytes.NewReader(b)) },
		"image/webp": func(b []byte) (image.Image, error) { return webp.Decode(bytes.NewReader(b)) },
	}[media]
	if decode == nil {
		return Errorf("%s is not a PNG, JPEG, GIF or WebP image (it looks like %s)", a.Path, media)
	}
	img, err := decode(data)
	if err != nil {
		return Errorf("%s is not a readable %s image: %v", a.Path, media, err)
	}
	b := img.Bounds()
	note := fmt.Sprintf("%s: %s, %d×%d", a.Path, media, b.Dx(), b.Dy())
	if long := max(b.Dx(), b.Dy()); long > viewImageMaxEdge {
		dst := image.NewRGBA(image.Rect(0, 0, max(1, b.Dx()*viewImageMaxEdge/long), max(1, b.Dy()*viewImageMaxEdge/long)))
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Over, nil)
		var buf bytes.Buffer
		if media == "image/jpeg" { // a photo stays a JPEG; everything else becomes a PNG
			err = jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85})
		} else {
			media, err = "image/png", png.Encode(&buf, dst)
		}
		if err != nil {
			return Errorf("cannot scale %s down: %v", a.Path, err)
		}
		data = buf.Bytes()
		note += fmt.Sprintf(", scaled down to %d×%d", dst.Bounds().Dx(), dst.Bounds().Dy())
	}
	if len(data) > viewImageMaxSendBytes {
		return Errorf("%s is still %d bytes after scaling; the models take at most %d", a.Path, len(data), viewImageMaxSendBytes)
	}
	return Result{Content: note, Images: []llm.Image{{MediaType: media, Data: base64.StdEncoding.EncodeToString(data)}}}
}
