package llm

import (
	"bytes"
	"slices"
	"sync"
)

// HeadCache keeps the start of the last request body a provider encoded,
// everything before its messages, with what it was encoded from: the tools
// and a key of the provider's (model, output cap, system prompt…). The
// tools and settings of a session are the same on every call, and the
// tools' schemas are most of a short session's body: encoding them again
// took 40 µs of the 97 of a call after 20 turns. A request that differs is
// encoded and kept instead. It also keeps the size of the last body's
// messages (Sizes). A nil *HeadCache keeps nothing; its methods are safe
// for concurrent use.
type HeadCache[K comparable] struct {
	mu   sync.Mutex // guards last; a head is never changed once kept
	last *head[K]
	size BodySize
}

type head[K comparable] struct {
	key   K
	tools []ToolSpec // copies: the caller may reuse its slices
	start []byte
}

// Get returns the start of a body for key and tools, in a slice of its
// own (appending copies it): the one kept when both match, else the one
// encode makes, which is kept.
func (c *HeadCache[K]) Get(key K, tools []ToolSpec, encode func() ([]byte, error)) ([]byte, error) {
	if c != nil {
		c.mu.Lock()
		h := c.last
		c.mu.Unlock()
		if h != nil && h.key == key && sameTools(h.tools, tools) {
			return slices.Clip(h.start), nil
		}
	}
	start, err := encode()
	if err != nil {
		return nil, err
	}
	if c != nil {
		h := &head[K]{key: key, tools: make([]ToolSpec, len(tools)), start: start}
		for i, t := range tools {
			t.InputSchema = bytes.Clone(t.InputSchema)
			h.tools[i] = t
		}
		c.mu.Lock()
		c.last = h
		c.mu.Unlock()
	}
	return slices.Clip(start), nil
}

// Sizes is the size of the last body's messages, to size the next body's
// buffer by; nil for a nil c.
func (c *HeadCache[K]) Sizes() *BodySize {
	if c == nil {
		return nil
	}
	return &c.size
}

// sameTools reports whether two tool lists would encode the same.
func sameTools(a, b []ToolSpec) bool {
	return slices.EqualFunc(a, b, func(x, y ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.InputSchema, y.InputSchema)
	})
}
