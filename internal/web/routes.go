package web

import (
	"context"
	"errors"

	"github.com/arbor-run/arbor/internal/store"
)

// maxRouteMisses bounds the sessions routes remembers to belong to no
// run (a conversation's): past it they are all forgotten, and looked up
// again when their events come.
const maxRouteMisses = 4096

// routes maps a session to the run and node it belongs to, for the hub's
// frames. It learns a route from the events that name both, and forgets a
// run's routes when the run finishes; a session no event named is looked
// up in the store. Touched only by the hub's subscription goroutine.
type routes struct {
	st     store.Store
	m      map[string]route
	byRun  map[string][]string // the sessions of m under each run
	misses int                 // the entries of m with no run
	most   int                 // of misses (maxRouteMisses)
}

func newRoutes(st store.Store) *routes {
	return &routes{st: st, m: map[string]route{}, byRun: map[string][]string{}, most: maxRouteMisses}
}

// learn records that session belongs to rt (a run's).
func (r *routes) learn(session string, rt route) {
	old, ok := r.m[session]
	switch {
	case ok && old == rt:
		return
	case ok && old.run == "":
		r.misses--
	}
	r.m[session] = rt
	if !ok || old.run != rt.run {
		r.byRun[rt.run] = append(r.byRun[rt.run], session)
	}
}

// forget drops the routes of run, which finished: its sessions send no
// more events but late ones, which lookup finds in the store.
func (r *routes) forget(run string) {
	for _, s := range r.byRun[run] {
		if r.m[s].run == run {
			delete(r.m, s)
		}
	}
	delete(r.byRun, run)
}

// lookup returns the route of session: from the events seen, else from
// the store (a session of a node that started before this server). An
// ask's question carries the run's id as its session. A session of no
// run is remembered as such; a lookup the store could not answer is not
// remembered, so the next event of the session asks again.
func (r *routes) lookup(session string) route {
	if rt, ok := r.m[session]; ok {
		return rt
	}
	ctx := context.Background()
	s, err := r.st.GetSession(ctx, session)
	if err == nil && s.RunID != "" {
		rt := route{s.RunID, s.NodeID}
		r.learn(session, rt)
		return rt
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return route{}
	}
	if err != nil { // not a session: an ask's question names its run
		switch _, err := r.st.GetRun(ctx, session); {
		case err == nil:
			rt := route{run: session}
			r.learn(session, rt)
			return rt
		case !errors.Is(err, store.ErrNotFound):
			return route{}
		}
	}
	if r.misses >= r.most {
		for s, rt := range r.m {
			if rt.run == "" {
				delete(r.m, s)
			}
		}
		r.misses = 0
	}
	r.m[session] = route{}
	r.misses++
	return route{}
}
