package tool

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// renderResponse turns a fetched response into the tool's result: an HTML
// page's main content (found by readability, as Firefox's reader view
// does) as Markdown, other text as it came, both decoded to UTF-8 from
// the charset the response or the page declares. d, when not nil, is
// told the size of the body read.
func renderResponse(u *url.URL, resp *http.Response, a webFetchArgs, notes []string, d *FetchDetail) Result {
	body, cut, err := readCapped(resp.Body, webFetchMaxBody)
	if err != nil && len(body) == 0 {
		return Errorf("web_fetch: reading %s: %v", u, err)
	}
	if d != nil {
		d.Bytes = len(body)
	}
	ctype := resp.Header.Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ctype)
	if media == "" {
		media = http.DetectContentType(body)
		media, _, _ = mime.ParseMediaType(media)
	}
	if cut {
		notes = append(notes, fmt.Sprintf("the response was larger than %d MiB; the rest was not read", webFetchMaxBody>>20))
	}
	if resp.StatusCode >= 400 {
		text, _ := decodeText(body, ctype)
		excerpt, _ := cutRunes(strings.TrimSpace(text), 2000)
		return Errorf("web_fetch: %s answered %s\n%s", u, resp.Status, excerpt)
	}
	if !textual(media) {
		return Errorf("web_fetch: %s is %s, not text (%d bytes)", u, media, len(body))
	}
	text, err := decodeText(body, ctype)
	if err != nil {
		return Errorf("web_fetch: %s: cannot decode its %s text: %v", u, media, err)
	}
	title := ""
	if (media == "text/html" || media == "application/xhtml+xml") && !a.Raw {
		if title, text, err = pageMarkdown(text, u); err != nil {
			return Errorf("web_fetch: %s: cannot read the page: %v", u, err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", u)
	if title != "" {
		fmt.Fprintf(&b, "Title: %s\n", title)
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "(%s)\n", n)
	}
	if a.Prompt != "" {
		fmt.Fprintf(&b, "Looking for: %s\n", a.Prompt)
	}
	b.WriteString("\n")
	out, more := cutRunes(text, webFetchMaxOutput)
	b.WriteString(out)
	if more {
		fmt.Fprintf(&b, "\n\n[cut: the page goes on for %d more characters]", utf8.RuneCountInString(text)-webFetchMaxOutput)
	}
	return Result{Content: b.String()}
}

// textual reports whether a media type is text a model can read.
func textual(media string) bool {
	switch {
	case strings.HasPrefix(media, "text/"), strings.HasSuffix(media, "+json"), strings.HasSuffix(media, "+xml"):
		return true
	}
	switch media {
	case "application/json", "application/xml", "application/xhtml+xml", "application/javascript",
		"application/x-javascript", "application/ecmascript", "application/x-yaml", "application/yaml", "application/toml":
		return true
	}
	return false
}

// decodeText decodes body to UTF-8 by the charset of the Content-Type,
// or of a <meta> in an HTML page, or as sniffed.
func decodeText(body []byte, ctype string) (string, error) {
	r, err := charset.NewReader(bytes.NewReader(body), ctype)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// pageMarkdown is an HTML page's title and main content as Markdown; a
// page readability finds no article in is converted whole.
func pageMarkdown(page string, u *url.URL) (string, string, error) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return "", "", err
	}
	conv := htmltomarkdown.NewConverter(htmltomarkdown.WithPlugins(
		base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin()))
	title := ""
	node := doc
	if art, err := readability.FromDocument(doc, u); err == nil && art.Node != nil {
		title, node = strings.TrimSpace(art.Title()), art.Node
	}
	md, err := conv.ConvertNode(node, htmltomarkdown.WithDomain(u.Scheme+"://"+u.Host))
	if err != nil {
		return "", "", err
	}
	text := strings.TrimSpace(string(md))
	if text == "" && node != doc { // readability kept nothing: the whole page
		if md, err = conv.ConvertNode(doc, htmltomarkdown.WithDomain(u.Scheme+"://"+u.Host)); err != nil {
			return "", "", err
		}
		text = strings.TrimSpace(string(md))
	}
	return title, text, nil
}
