// arbor serve: live updates over Server-Sent Events and the steering
// forms. No framework: the pages are rendered by the server (every model
// output escaped there); this script only sets text and swaps in fragments
// the server rendered.
"use strict";
(function () {
  const body = document.body;
  const page = body.dataset.page;
  const run = body.dataset.run;
  const node = Number(body.dataset.node || 0);
  let seq = Number(body.dataset.seq || 0);
  const live = document.getElementById("live");

  function toast(msg) {
    const t = document.getElementById("toast");
    t.textContent = msg;
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { t.hidden = true; }, 6000);
  }

  async function post(url, data) {
    const res = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(data || {}),
    });
    let out = {};
    try { out = await res.json(); } catch (e) { /* empty body */ }
    if (!res.ok) throw new Error(out.error || res.status + " " + res.statusText);
    return out;
  }

  // Refresh: read the page's live part again (debounced), keeping focus
  // on the element that had it when it is still there.
  let refreshing = null;
  function refresh() {
    if (refreshing) return;
    refreshing = setTimeout(async () => {
      refreshing = null;
      let url, target;
      if (page === "run") { url = "/runs/" + run + "/graph"; target = "run-body"; }
      else if (page === "node") { url = location.pathname + "?fragment=1"; target = "node-body"; }
      else if (page === "runs") { url = location.pathname + location.search; target = null; }
      else return;
      try {
        const res = await fetch(url, { credentials: "same-origin" });
        if (!res.ok) return;
        const html = await res.text();
        const active = document.activeElement;
        const keep = active && active.id;
        const typed = active && active.tagName === "INPUT" ? active.value : null;
        if (target) {
          document.getElementById(target).innerHTML = html;
        } else {
          const doc = new DOMParser().parseFromString(html, "text/html");
          document.querySelector("table.runs").replaceWith(doc.querySelector("table.runs"));
        }
        if (keep) {
          const el = document.getElementById(keep);
          if (el) { el.focus(); if (typed !== null) el.value = typed; }
        }
      } catch (e) { /* the next frame or resync tries again */ }
    }, 150);
  }

  // A node frame updates its box in place; a node the page does not have
  // yet (a new child) means the tree changed shape: read it again.
  function onNode(f) {
    if (page === "run") {
      const li = document.getElementById("n-" + f.node.id);
      if (!li || f.from === "" || li.dataset.state === f.node.state) { refresh(); return; }
      li.classList.remove("st-" + li.dataset.state);
      li.classList.add("st-" + f.node.state);
      li.dataset.state = f.node.state;
      li.querySelector(".state").textContent = f.node.state;
      li.querySelector(".icon").textContent = icon(f.node.state, f.node.kind);
      if (["complete", "failed", "cancelled"].includes(f.node.state) || f.node.kind === "ask") refresh();
    } else if (page === "node" && f.node.id === node) {
      refresh();
    } else if (page === "runs" && f.node.id === 1) {
      refresh();
    }
  }

  const icons = { pending: "○", active: "▶", waiting: "⋯", synthesizing: "Σ", complete: "✓", paused: "Ⅱ", failed: "✗", cancelled: "⊘" };
  function icon(state, kind) {
    if (kind === "ask" && (state === "pending" || state === "active")) return "?";
    return icons[state] || "·";
  }

  function connect() {
    if (!page || page === "none") return;
    const src = new EventSource("/api/runs/" + (run || "-") + "/events" + (page === "node" ? "?activity=" + node : ""));
    const frame = (name, fn) => src.addEventListener(name, (ev) => {
      let f;
      try { f = JSON.parse(ev.data); } catch (e) { return; }
      fn(f);
    });
    frame("hello", (f) => {
      live.textContent = "live"; live.classList.add("on");
      if (f.seq !== seq) refresh();
      seq = f.seq;
    });
    frame("resync", () => refresh());
    frame("node", onNode);
    frame("run", () => refresh());
    const mine = (f) => page === "run" || (page === "node" && f.node === node);
    frame("interaction", (f) => { if (mine(f)) refresh(); });
    frame("resolved", (f) => { if (mine(f)) refresh(); });
    for (const name of ["tool", "tool_done", "message", "usage"]) {
      frame(name, (f) => { if (page === "node" && f.node === node) refresh(); });
    }
    frame("tool_done", (f) => { if (f.blocked && f.blocked.length) toast("#" + f.node + " " + f.blocked.join("; ")); });
    frame("hook", (f) => toast("#" + f.node + " \u2139 " + f.text));
    src.onerror = () => { live.textContent = "reconnecting…"; live.classList.remove("on"); };
  }

  // Forms with data-api post their fields as JSON; buttons with data-post
  // post an empty body.
  document.addEventListener("click", async (ev) => {
    const fill = ev.target.closest("[data-fill]");
    if (fill) {
      const input = fill.closest("form").querySelector("input[name=answer]");
      input.value = fill.dataset.fill;
      input.focus();
      return;
    }
    const b = ev.target.closest("button[data-post]");
    if (!b) return;
    if (b.dataset.confirm && !confirm(b.dataset.confirm)) return;
    b.disabled = true;
    try { await post(b.dataset.post); refresh(); }
    catch (e) { toast(e.message); }
    finally { b.disabled = false; }
  });

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form[data-api]");
    if (!form) return;
    ev.preventDefault();
    const data = {};
    for (const el of form.elements) {
      if (!el.name || el.type === "submit" || el.value === "") continue;
      data[el.name] = el.type === "number" ? Number(el.value) : el.value;
    }
    const sub = ev.submitter;
    if (sub && sub.name === "allow") data.allow = sub.value === "true";
    if (sub && sub.name === "always") { data.allow = true; data.always = true; }
    for (const b of form.querySelectorAll("button")) b.disabled = true;
    try {
      const out = await post(form.dataset.api, data);
      if (form.dataset.go === "run" && out.id) { location.href = "/runs/" + out.id; return; }
      refresh();
    } catch (e) {
      toast(e.message);
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    }
  });

  connect();
})();
