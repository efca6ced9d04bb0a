package web

import (
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/store"
)

// The run page draws the tree as rows of boxes, each indented under its
// parent (so it stays readable at a phone's width and with a thousand
// nodes), with an SVG layer behind them: tree edges from each parent down
// to its children, and dependency edges (blocked_by) as arcs in a gutter
// on the left. Coordinates are computed here, so the page needs no
// layout script.

// Graph geometry, in CSS pixels; the stylesheet uses the same numbers.
const (
	rowHeight = 48 // a node box is 40 high, 8 apart
	boxHeight = 40
	indent    = 22
	gutter    = 40
	maxDepth  = 15 // deeper nodes are drawn at this depth
)

// graphNode is a node as the run page draws it.
type graphNode struct {
	NodeInfo
	Row, Depth int
	Icon       string
	Label      string
}

// edge is one SVG path.
type edge struct {
	D    string // path data
	Kind string // "tree" or "dep"
}

type graph struct {
	Nodes  []graphNode
	Edges  []edge
	Height int
	Width  int // of the SVG layer
}

// stateIcon is the icon shown with each state (colour comes from the
// stylesheet's class of the same name); asks waiting for a person get "?".
func stateIcon(s store.NodeState, k store.NodeKind) string {
	if k == store.KindAsk && (s == store.StatePending || s == store.StateActive) {
		return "?"
	}
	switch s {
	case store.StatePending:
		return "○"
	case store.StateActive:
		return "▶"
	case store.StateWaiting:
		return "⋯"
	case store.StateSynthesizing:
		return "Σ"
	case store.StateComplete:
		return "✓"
	case store.StatePaused:
		return "Ⅱ"
	case store.StateFailed:
		return "✗"
	case store.StateCancelled:
		return "⊘"
	}
	return "·"
}

func label(n NodeInfo) string {
	t := n.Goal
	if n.Kind == store.KindAsk {
		t = n.Question
	}
	t = strings.TrimSpace(strings.SplitN(strings.TrimSpace(t), "\n", 2)[0])
	if r := []rune(t); len(r) > 120 {
		t = string(r[:117]) + "..."
	}
	return t
}

// layout orders nodes depth first (children by id) and draws the edges.
func layout(nodes []NodeInfo) graph {
	children := map[int64][]int64{}
	byID := make(map[int64]NodeInfo, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = n
	}
	var roots []int64
	for _, n := range nodes { // nodes come ordered by id
		if _, ok := byID[n.ParentID]; n.ParentID == 0 || !ok {
			roots = append(roots, n.ID)
		} else {
			children[n.ParentID] = append(children[n.ParentID], n.ID)
		}
	}
	g := graph{Nodes: make([]graphNode, 0, len(nodes))}
	row := map[int64]int{}
	depth := map[int64]int{}
	// An explicit stack: a deep tree must not overflow the goroutine's.
	type item struct {
		id    int64
		depth int
	}
	stack := make([]item, 0, len(roots))
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, item{roots[i], 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := byID[it.id]
		d := min(it.depth, maxDepth)
		row[n.ID], depth[n.ID] = len(g.Nodes), d
		g.Nodes = append(g.Nodes, graphNode{NodeInfo: n, Row: len(g.Nodes), Depth: d, Icon: stateIcon(n.State, n.Kind), Label: label(n)})
		kids := children[n.ID]
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, item{kids[i], it.depth + 1})
		}
	}
	x := func(id int64) int { return gutter + depth[id]*indent + indent/2 }
	mid := func(id int64) int { return row[id]*rowHeight + boxHeight/2 }
	for _, n := range g.Nodes {
		if p, ok := row[n.ParentID]; ok {
			px := x(n.ParentID)
			g.Edges = append(g.Edges, edge{Kind: "tree", D: fmt.Sprintf("M%d %d V%d H%d", px, p*rowHeight+boxHeight, mid(n.ID), x(n.ID))})
		}
		for _, dep := range n.BlockedBy {
			if _, ok := row[dep]; !ok {
				continue
			}
			y1, y2 := mid(dep), mid(n.ID)
			bend := max(2, gutter-8-min(abs(y2-y1)/rowHeight, 8)*4)
			g.Edges = append(g.Edges, edge{Kind: "dep", D: fmt.Sprintf("M%d %d C%d %d %d %d %d %d", gutter, y1, bend, y1, bend, y2, gutter, y2)})
		}
	}
	g.Height = max(len(g.Nodes)*rowHeight, rowHeight)
	g.Width = gutter + (maxDepth+1)*indent
	return g
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
