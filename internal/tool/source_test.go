package tool

import (
	"slices"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

// fakeSource is a Source whose tools a test changes.
type fakeSource struct {
	mu      sync.Mutex
	version uint64
	tools   []Tool
}

func (s *fakeSource) Tools() (uint64, []Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version, s.tools
}

func (s *fakeSource) set(ts ...Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	s.tools = ts
}

func TestRegistrySource(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	src.set(namedTool("mcp__a__one"), namedTool("shell"))
	var wrapped []string
	reg := NewRegistry(namedTool("read_file"), namedTool("shell"))
	reg.AddSource(src, func(t Tool) Tool {
		wrapped = append(wrapped, t.Info().Name)
		return t
	})

	if got := reg.Names(); !slices.Equal(got, []string{"read_file", "shell", "mcp__a__one"}) {
		t.Fatalf("names = %v, want the source's tools after the static ones and the clashing shell left out", got)
	}
	if !slices.Equal(wrapped, []string{"mcp__a__one", "shell"}) {
		t.Fatalf("wrapped = %v", wrapped)
	}

	src.set(namedTool("mcp__a__two"))
	if _, ok := reg.Lookup("mcp__a__two"); !ok {
		t.Fatal("a Lookup that missed did not take the source's new tools")
	}
	if _, ok := reg.Lookup("mcp__a__one"); ok {
		t.Fatal("a removed tool is still found")
	}
	specs := reg.Specs()
	if len(specs) != 3 || specs[2].Name != "mcp__a__two" {
		t.Fatalf("specs = %+v", specs)
	}
	n := len(wrapped)
	reg.Specs()
	if len(wrapped) != n {
		t.Fatal("an unchanged source was wrapped again")
	}
}

// TestSpecsUpTo: a limit keeps every static tool and the sources' tools
// in order up to it, and names the ones left out.
func TestSpecsUpTo(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	src.set(namedTool("mcp__a__one"), namedTool("mcp__a__two"), namedTool("mcp__b__three"))
	reg := NewRegistry(namedTool("read_file"), namedTool("shell"))
	reg.AddSource(src, nil)
	names := func(specs []llm.ToolSpec) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range []struct {
		limit      int
		kept, left []string
	}{
		{0, []string{"read_file", "shell", "mcp__a__one", "mcp__a__two", "mcp__b__three"}, nil},
		{5, []string{"read_file", "shell", "mcp__a__one", "mcp__a__two", "mcp__b__three"}, nil},
		{3, []string{"read_file", "shell", "mcp__a__one"}, []string{"mcp__a__two", "mcp__b__three"}},
		{1, []string{"read_file", "shell"}, []string{"mcp__a__one", "mcp__a__two", "mcp__b__three"}},
	} {
		specs, left := reg.SpecsUpTo(tc.limit)
		if !slices.Equal(names(specs), tc.kept) || !slices.Equal(left, tc.left) {
			t.Errorf("SpecsUpTo(%d) = %v, left %v; want %v, left %v", tc.limit, names(specs), left, tc.kept, tc.left)
		}
	}
}
