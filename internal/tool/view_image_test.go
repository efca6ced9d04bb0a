package tool

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// tinyWebP is a 1×1 lossless WebP.
const tinyWebP = "RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"

func testImage(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	return img
}

func TestViewImage(t *testing.T) {
	t.Parallel()
	f := setupTools(t)
	var pngBuf, jpgBuf, gifBuf bytes.Buffer
	if err := png.Encode(&pngBuf, testImage(40, 30)); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpgBuf, testImage(3000, 2000), nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&gifBuf, testImage(10, 10), nil); err != nil {
		t.Fatal(err)
	}
	f.write("shot.png", pngBuf.String())
	f.write("photo.jpg", jpgBuf.String())
	f.write("anim.gif", gifBuf.String())
	f.write("tiny.webp", tinyWebP)
	f.write("notes.txt", "not an image")
	f.write("broken.png", pngBuf.String()[:40])

	for _, c := range []struct {
		path, media, note string
		w, h              int
	}{
		{"shot.png", "image/png", "shot.png: image/png, 40×30", 40, 30},
		{"photo.jpg", "image/jpeg", "photo.jpg: image/jpeg, 3000×2000, scaled down to 1568×1045", 1568, 1045},
		{"anim.gif", "image/gif", "anim.gif: image/gif, 10×10", 10, 10},
		{"tiny.webp", "image/webp", "tiny.webp: image/webp, 1×1", 1, 1},
	} {
		r := f.call("view_image", viewImageArgs{Path: c.path})
		reqEqual(t, reqOK(t, r), c.note)
		if len(r.Images) != 1 || r.Images[0].MediaType != c.media {
			t.Fatalf("%s: images %+v", c.path, r.Images)
		}
		data, err := base64.StdEncoding.DecodeString(r.Images[0].Data)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if c.media != "image/webp" && (err != nil || cfg.Width != c.w || cfg.Height != c.h) {
			t.Fatalf("%s: the image sent is %dx%d (%v), want %dx%d", c.path, cfg.Width, cfg.Height, err, c.w, c.h)
		}
	}
	reqContains(t, reqErr(t, f.call("view_image", viewImageArgs{Path: "notes.txt"})), "is not a PNG, JPEG, GIF or WebP image", "text/plain")
	reqContains(t, reqErr(t, f.call("view_image", viewImageArgs{Path: "broken.png"})), "is not a readable image/png image")
	reqContains(t, reqErr(t, f.call("view_image", viewImageArgs{Path: "missing.png"})), "not found: missing.png")
	big := filepath.Join(f.root, "huge.png")
	if err := os.WriteFile(big, make([]byte, viewImageMaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	reqContains(t, reqErr(t, f.call("view_image", viewImageArgs{Path: "huge.png"})), "too large to view")

	// A model that takes no images is not offered the tool.
	for _, tl := range Builtins(BuiltinOptions{Workspace: f.root, NoImages: true}) {
		if tl.Info().Name == "view_image" {
			t.Fatal("view_image offered to a model that takes no images")
		}
	}
}
