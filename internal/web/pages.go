package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// Pages are rendered by html/template, which escapes everything a model
// or a person wrote for the context it lands in. They are parsed on first
// use, not at init: every arbor process links this package, and most
// (headless sessions, runs) never serve a page.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").ParseFS(assets, "assets/templates/*.html"))
})

type crumb struct{ Href, Text string }

type money struct {
	USD   float64
	Known bool
}

// page is what every template gets; the fields a page does not use stay
// zero.
type page struct {
	Title  string
	Page   string
	RunID  string
	NodeID int64
	// Seq is the bus sequence number before the page read the store: the
	// script reads the run again if its stream starts past it.
	Seq    uint64
	Crumbs []crumb

	// runs page
	Runs     []runRow
	Statuses []store.RunStatus
	Status   string
	Query    string

	// run and node pages
	Run      *RunDetail
	Cost     money
	Elapsed  string
	Graph    graph
	Asks     []NodeInfo
	Pending  []Interaction
	Sessions map[string]int64 // node session id → node id
	Node     *NodeDetail
	Icon     string
}

type runRow struct {
	RunSummary
	Cost money
	Age  string
}

func (s *Server) render(w http.ResponseWriter, name string, p page) {
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = buf.WriteTo(w)
}

func (s *Server) pageError(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), statusOf(err))
}

func (s *Server) pageRuns(w http.ResponseWriter, r *http.Request) {
	seq := s.o.Bus.Seq()
	runs, err := s.listRuns(r.Context(), 50)
	if err != nil {
		s.pageError(w, err)
		return
	}
	q := r.URL.Query()
	runs = filterRuns(runs, q.Get("status"), q.Get("q"))
	p := page{Title: "Runs", Page: "runs", Seq: seq, Status: q.Get("status"), Query: q.Get("q"),
		Statuses: []store.RunStatus{store.RunRunning, store.RunInterrupted, store.RunIdle, store.RunComplete, store.RunFailed, store.RunCancelled, store.RunBudget}}
	now := time.Now()
	for _, sum := range runs {
		row := runRow{RunSummary: sum, Age: ago(now.Sub(sum.CreatedAt)), Cost: money{Known: true}}
		// The list shows the cost of each run's nodes; it reads their
		// sessions, so the page shows the newest 50 runs.
		if nodes, err := s.o.Store.Nodes(r.Context(), sum.ID); err == nil {
			for _, n := range nodes {
				if n.SessionID == "" {
					continue
				}
				if ss, err := s.o.Store.GetSession(r.Context(), n.SessionID); err == nil {
					row.Cost.USD += ss.CostUSD
					row.Cost.Known = row.Cost.Known && ss.CostKnown
				}
			}
		}
		p.Runs = append(p.Runs, row)
	}
	s.render(w, "runs", p)
}

// runPage reads what the run page and its graph fragment show.
func (s *Server) runPage(r *http.Request) (page, error) {
	seq := s.o.Bus.Seq()
	d, err := s.runDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		return page{}, err
	}
	p := page{Title: d.Goal, Page: "run", RunID: d.ID, Seq: seq, Run: &d,
		Crumbs: []crumb{{"/runs/" + d.ID, d.ID}}, Cost: money{d.CostUSD, d.CostKnown},
		Elapsed: (time.Duration(d.Elapsed) * time.Second).String(), Graph: layout(d.Nodes)}
	p.Title = firstLine(d.Goal)
	p.fill(d.Nodes, d.Pending, d.ID, 0)
	return p, nil
}

// fill sets the asks still open and the interactions to show (of node
// only, when node is not 0); an ask's own question is shown as the ask.
func (p *page) fill(nodes []NodeInfo, pending []Interaction, runID string, node int64) {
	p.Sessions = map[string]int64{}
	for _, n := range nodes {
		if n.SessionID != "" {
			p.Sessions[n.SessionID] = n.ID
		}
		if n.Kind == store.KindAsk && (n.State == store.StatePending || n.State == store.StateActive) && (node == 0 || node == n.ID) {
			p.Asks = append(p.Asks, n)
		}
	}
	for _, in := range pending {
		if in.SessionID == runID {
			continue // an ask node's question, shown as the ask
		}
		p.Pending = append(p.Pending, in)
	}
}

func (s *Server) pageRun(w http.ResponseWriter, r *http.Request) {
	p, err := s.runPage(r)
	if err != nil {
		s.pageError(w, err)
		return
	}
	s.render(w, "run", p)
}

// fragmentGraph is the run page's body alone, which the script swaps in
// when the tree changed shape or the stream resynchronised.
func (s *Server) fragmentGraph(w http.ResponseWriter, r *http.Request) {
	p, err := s.runPage(r)
	if err != nil {
		s.pageError(w, err)
		return
	}
	s.render(w, "runbody", p)
}

func (s *Server) pageNode(w http.ResponseWriter, r *http.Request) {
	seq := s.o.Bus.Seq()
	id, err := nodeID(r)
	if err != nil {
		s.pageError(w, err)
		return
	}
	runID := r.PathValue("id")
	run, err := s.o.Store.GetRun(r.Context(), runID)
	if err != nil {
		s.pageError(w, err)
		return
	}
	d, err := s.nodeDetail(r.Context(), runID, id)
	if err != nil {
		s.pageError(w, err)
		return
	}
	rd := RunDetail{RunSummary: s.summary(r.Context(), run)}
	p := page{Title: fmt.Sprintf("#%d %s", id, firstLine(d.Goal)), Page: "node", RunID: runID, NodeID: id, Seq: seq,
		Run: &rd, Node: &d, Cost: money{d.CostUSD, d.CostKnown}, Icon: stateIcon(d.State, d.Kind),
		Crumbs: []crumb{{"/runs/" + runID, runID}, {fmt.Sprintf("/runs/%s/nodes/%d", runID, id), fmt.Sprintf("#%d", id)}}}
	p.fill([]NodeInfo{d.NodeInfo}, d.Pending, runID, id)
	name := "node"
	if r.URL.Query().Has("fragment") {
		name = "nodebody"
	}
	s.render(w, name, p)
}

func firstLine(s string) string {
	l := strings.TrimSpace(strings.SplitN(strings.TrimSpace(s), "\n", 2)[0])
	if r := []rune(l); len(r) > 80 {
		l = string(r[:77]) + "..."
	}
	return l
}

// ago says how long ago something was, coarsely.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
