package llm

import "fmt"

// ImagesLeftOut is the text that stands in a request for n images it
// leaves out because the provider takes at most max in one request.
func ImagesLeftOut(n, max int) string {
	what := "an image was"
	if n > 1 {
		what = fmt.Sprintf("%d images were", n)
	}
	return fmt.Sprintf("[%s left out here: the provider takes at most %d images in one request, so only the newest are sent]", what, max)
}

// CapImages returns req when its messages hold at most max images (or max
// is 0), else a copy whose messages keep the newest max and have each
// older one replaced by a short text saying so (ImagesLeftOut). req and
// its messages are not changed: the stored transcript keeps every image.
func CapImages(req *Request, max int) *Request {
	if max <= 0 {
		return req
	}
	drop := countImages(req.Messages) - max
	if drop <= 0 {
		return req
	}
	out := *req
	out.Messages = make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		if drop > 0 && m.hasAnyImage() {
			m, drop = m.withoutImages(drop, max)
		}
		out.Messages[i] = m
	}
	return &out
}

func countImages(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch {
			case p.Type == PartImage:
				n++
			case p.Type == PartToolResult && p.ToolResult != nil:
				n += len(p.ToolResult.Images)
			}
		}
	}
	return n
}

func (m Message) hasAnyImage() bool {
	for _, p := range m.Parts {
		if p.Type == PartImage || p.Type == PartToolResult && p.ToolResult != nil && len(p.ToolResult.Images) > 0 {
			return true
		}
	}
	return false
}

// withoutImages returns a copy of m without its first drop images, and
// how many are still to drop after it.
func (m Message) withoutImages(drop, max int) (Message, int) {
	parts := make([]Part, len(m.Parts))
	for i, p := range m.Parts {
		switch {
		case drop == 0:
		case p.Type == PartImage:
			p = TextPart(ImagesLeftOut(1, max))
			drop--
		case p.Type == PartToolResult && p.ToolResult != nil && len(p.ToolResult.Images) > 0:
			res := *p.ToolResult
			n := min(drop, len(res.Images))
			res.Images = res.Images[n:]
			if len(res.Images) == 0 {
				res.Images = nil
			}
			res.Content += "\n" + ImagesLeftOut(n, max)
			p.ToolResult = &res
			drop -= n
		}
		parts[i] = p
	}
	m.Parts = parts
	return m, drop
}
