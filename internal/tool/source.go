package tool

// Source offers tools that may change while a session runs: an MCP
// server's tools change on its list_changed notification, or vanish while
// it restarts.
type Source interface {
	// Tools returns the current tools and a version that changes whenever
	// they do. It must not block.
	Tools() (version uint64, tools []Tool)
}

// sourceState is one source of a registry and what it offered last.
type sourceState struct {
	src     Source
	wrap    func(Tool) Tool
	version uint64
	loaded  bool
	tools   []Tool // wrapped
}

// AddSource adds the tools of src, each passed through wrap (nil: as they
// are; the caller applies the permission decorator there), after the
// tools added with Add. The registry takes the source's tools again when
// its version changes, at Specs, Names, and a Lookup that missed. A
// source's tool whose name clashes with a tool already registered is left
// out, so a server cannot shadow a built-in.
func (r *Registry) AddSource(src Source, wrap func(Tool) Tool) {
	if wrap == nil {
		wrap = func(t Tool) Tool { return t }
	}
	r.mu.Lock()
	r.sources = append(r.sources, &sourceState{src: src, wrap: wrap})
	r.mu.Unlock()
	r.refresh()
}

// refresh takes every source's tools whose version changed, and reports
// whether any did. The sources are asked outside the lock.
func (r *Registry) refresh() bool {
	r.mu.RLock()
	states := append([]*sourceState(nil), r.sources...)
	r.mu.RUnlock()
	if len(states) == 0 {
		return false
	}
	type update struct {
		st      *sourceState
		version uint64
		tools   []Tool
	}
	var updates []update
	for _, st := range states {
		v, ts := st.src.Tools()
		r.mu.RLock()
		same := st.loaded && st.version == v
		r.mu.RUnlock()
		if !same {
			wrapped := make([]Tool, len(ts))
			for i, t := range ts {
				wrapped[i] = st.wrap(t)
			}
			updates = append(updates, update{st, v, wrapped})
		}
	}
	if len(updates) == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range updates {
		u.st.version, u.st.tools, u.st.loaded = u.version, u.tools, true
	}
	r.rebuildLocked()
	return true
}

// rebuildLocked recomputes order, keys and byKey from the static tools
// and the sources' current tools. r.mu must be held for writing.
func (r *Registry) rebuildLocked() {
	r.order, r.keys, r.byKey = r.order[:0], r.keys[:0], nil
	for _, t := range r.static {
		r.appendLocked(toolNameKey(Name(t)), t)
	}
	for _, st := range r.sources {
		for _, t := range st.tools {
			key := toolNameKey(Name(t))
			if key == "" || r.indexLocked(key) >= 0 {
				continue
			}
			r.appendLocked(key, t)
		}
	}
}
