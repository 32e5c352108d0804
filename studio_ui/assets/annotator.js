// BERDS Annotate: one pair per screen, keyboard first, the next pairs already in the page.
//
// The server sends the next few undecided pairs (`data.pairs`, opaque refs, no ids).
// A keypress (y / n / s, u to undo) shows the next pair at once from that buffer and
// queues the decision in an outbox; the outbox is sent to the server as this
// component's state (`setStateValue("outbox", ...)`), which reruns the page; the
// server stores each event once (idempotent by its client id) and lists the ids it
// has stored in `data.acked`. A decision is "saved" only once acknowledged: the
// status line says "All saved" when the outbox is empty. All text is set with
// textContent: nothing a passage contains is ever parsed as HTML.
//
// When the server does not answer (down, restarting, the network gone), the outbox
// is sent again every few seconds, and after a few seconds without an answer the
// status line says so ("Not saved yet: the server does not answer"). A restarted
// server is a new session (`data.server` changes): decisions the old one never
// acknowledged cannot be sent to it (their pair references belong to the old
// session), so the annotator is told how many were not confirmed; the pairs that
// were not saved are in the queue again.

const G = (window.__berdsAnnotator = window.__berdsAnnotator || { latencies: [], sessions: {} });

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function build(root) {
  root.innerHTML = "";
  const box = el("div", "berds-ann");
  box.setAttribute("data-testid", "berds-annotator");
  box.tabIndex = -1;
  const q = el("div", "berds-ann-question");
  const pl = el("div", "berds-ann-label", "Perspective");
  const p = el("div", "berds-ann-perspective");
  const dl = el("div", "berds-ann-label", "Passage: does it support the perspective?");
  const t = el("div", "berds-ann-title");
  const d = el("div", "berds-ann-document");
  const judge = el("div", "berds-ann-judge");
  const btns = el("div", "berds-ann-buttons");
  const mk = (key, cls) => {
    const b = el("button", "berds-ann-btn " + cls);
    b.type = "button";
    b.dataset.key = key;
    btns.appendChild(b);
    return b;
  };
  const yes = mk("y", "berds-ann-yes"), no = mk("n", "berds-ann-no"), skip = mk("s", "berds-ann-skip"),
    undo = mk("u", "berds-ann-undo");
  const extra = el("div", "berds-ann-extra");
  const unsureLabel = el("label", "berds-ann-unsure");
  const unsure = el("input");
  unsure.type = "checkbox";
  unsureLabel.appendChild(unsure);
  unsureLabel.appendChild(document.createTextNode(" Unsure"));
  const note = el("input", "berds-ann-note");
  note.type = "text";
  note.maxLength = 500;
  note.placeholder = "Note (optional)";
  extra.appendChild(unsureLabel);
  extra.appendChild(note);
  const defs = el("div", "berds-ann-defs");
  const status = el("div", "berds-ann-status");
  status.setAttribute("data-testid", "berds-annotator-status");
  const done = el("div", "berds-ann-done");
  const card = el("div", "berds-ann-card");
  for (const c of [q, pl, p, dl, t, d, judge]) card.appendChild(c);
  for (const c of [card, done, btns, extra, defs, status]) box.appendChild(c);
  root.appendChild(box);
  return { box, card, q, p, t, d, judge, yes, no, skip, undo, unsure, note, defs, status, done };
}

function freshState(session, server) {
  return { session, server, seq: 0, outbox: [], pending: new Set(), front: [], history: [], pairs: [], current: null,
           shownAt: 0, acked: 0, errors: [], lastSend: 0, waitingSince: 0, resends: 0, retry: 0, lost: 0 };
}

const RESEND_MS = 3000; // an unacknowledged outbox is sent again after this long, then 2x, 4x ... (30 s at most),
                        // so a slow page run is never cut short by resends for ever
const SILENT_MS = 5000; // after this long without an answer the status line says the server does not answer

// decisions of sessions of another server (a restart) that were never acknowledged: lost to this page
function takeLost(server) {
  let n = 0;
  for (const old of Object.values(G.sessions)) {
    if (old.server === server || !old.outbox.length) continue;
    n += old.outbox.filter((ev) => ev.kind !== "undo").length;
    old.outbox = [];
  }
  return n;
}

export default function (component) {
  const { data, setStateValue, parentElement } = component;
  if (!data) return;
  let root = parentElement.querySelector(".berds-ann-root");
  if (!root) {
    root = el("div", "berds-ann-root");
    parentElement.appendChild(root);
  }
  if (!root.__ui) root.__ui = build(root);
  const ui = root.__ui;
  let S = G.sessions[data.session];
  if (!S) {
    S = G.sessions[data.session] = freshState(data.session, data.server);
    S.lost = takeLost(data.server);
  }
  root.__state = S;

  // ---- reconcile with what the server stored ----
  const acked = new Set(data.acked || []);
  // labels and skips the server has acknowledged in this tab (data-acked; undos are not counted)
  S.acked += S.outbox.filter((ev) => acked.has(ev.cid) && ev.kind !== "undo").length;
  S.outbox = S.outbox.filter((ev) => !acked.has(ev.cid));
  if (!S.outbox.length) {
    S.waitingSince = 0;
    S.retry = 0;
  }
  // a pair is decided here but not yet on the server when its latest queued event is a label or skip
  const recompute = () => {
    S.pending = new Set();
    for (const ev of S.outbox) {
      if (!ev.ref) continue;
      if (ev.kind === "undo") S.pending.delete(ev.ref);
      else S.pending.add(ev.ref);
    }
  };
  recompute();
  S.pairs = data.pairs || [];
  S.total = data.progress ? data.progress.total : 0;
  S.doneServer = data.progress ? data.progress.done : 0;
  S.more = !!data.more;
  // the queue is not open (paused, qualification first): the page says why; the widget is hidden and deaf
  S.closed = !!data.closed;
  if (S.closed) {
    S.front = [];
    S.history = [];
  }

  // each send carries its try number, so a resend is a new value (the server ignores the field)
  const send = () => {
    S.lastSend = Date.now();
    if (S.outbox.length && !S.waitingSince) S.waitingSince = S.lastSend;
    setStateValue("outbox", S.outbox.map((e) => Object.assign({ try: S.resends }, e)));
  };
  root.__send = send;

  const candidates = () => {
    const seen = new Set(), out = [];
    for (const p of S.front.concat(S.pairs)) {
      if (S.pending.has(p.ref) || seen.has(p.ref)) continue;
      seen.add(p.ref);
      out.push(p);
    }
    return out;
  };

  const paint = () => {
    const cur = S.current;
    ui.box.style.display = S.closed ? "none" : "";
    ui.box.dataset.closed = S.closed ? "1" : "0";
    ui.defs.textContent = "";
    const labels = data.labels || {};
    ui.yes.textContent = (labels["1"] || "Supports") + " (y)";
    ui.no.textContent = (labels["0"] || "Does not support") + " (n)";
    ui.skip.textContent = (labels["skip"] || "Skip") + " (s)";
    ui.undo.textContent = "Undo (u)";
    const defs = data.definitions || {};
    for (const k of ["1", "0", "skip"]) if (defs[k]) ui.defs.appendChild(el("div", "berds-ann-def", defs[k]));
    if (cur) {
      ui.card.style.display = "";
      ui.done.textContent = "";
      ui.q.textContent = cur.question;
      ui.p.textContent = cur.perspective;
      ui.t.textContent = cur.title || "";
      ui.t.style.display = cur.title ? "" : "none";
      ui.d.textContent = cur.document;
      ui.judge.textContent = cur.judge || "";
      ui.judge.style.display = cur.judge ? "" : "none";
    } else {
      ui.card.style.display = "none";
      ui.done.textContent = S.closed ? "" : S.outbox.length || S.more ? "Loading the next pair…"
        : (data.empty_text || "All pairs are done.");
    }
    for (const b of [ui.yes, ui.no, ui.skip]) b.disabled = !cur;
    const pend = S.outbox.length;
    const decided = S.doneServer + S.outbox.filter((e) => e.kind !== "undo").length -
      S.outbox.filter((e) => e.kind === "undo").length;
    const silent = pend && S.waitingSince && Date.now() - S.waitingSince > SILENT_MS;
    const saving = silent ? `Not saved yet: the server does not answer (${pend} waiting; keep this tab open)`
      : pend ? `Saving… (${pend} not yet saved)` : "All saved";
    const lost = S.lost ? `${S.lost} decision${S.lost === 1 ? "" : "s"} made while the server was unreachable ` +
      "could not be confirmed: the pairs that were not saved are shown again · " : "";
    ui.status.textContent = lost + saving + ` · ${Math.max(0, Math.min(decided, S.total))} of ${S.total} done`;
    ui.status.classList.toggle("berds-ann-warn", !!(silent || S.lost));
    ui.box.dataset.silent = silent ? "1" : "0";
    ui.box.dataset.lost = String(S.lost);
    ui.box.dataset.pending = String(pend);
    ui.box.dataset.acked = String(S.acked);
    ui.box.dataset.state = pend ? "saving" : "saved";
  };

  const show = () => {
    const next = candidates()[0] || null;
    if (!next || !S.current || next.ref !== S.current.ref) {
      S.current = next;
      S.shownAt = performance.now();
      ui.unsure.checked = false;
      ui.note.value = "";
    }
    paint();
  };

  const decide = (value, evTime) => {
    const cur = S.current;
    if (!cur) return;
    S.lost = 0; // the notice has been seen
    S.seq += 1;
    const ev = { cid: `${S.session}-${S.seq}`, kind: value === "skip" ? "skip" : "label", ref: cur.ref,
                 value: value === "skip" ? null : value, unsure: ui.unsure.checked, note: ui.note.value.slice(0, 500),
                 time_ms: Math.round(performance.now() - S.shownAt), judge_visible: !!cur.judge };
    S.outbox.push(ev);
    recompute();
    S.front = S.front.filter((p) => p.ref !== cur.ref);
    S.history.push({ pair: cur, cid: ev.cid });
    show();
    if (evTime !== undefined) {
      const t0 = evTime;
      requestAnimationFrame(() => setTimeout(() => G.latencies.push(performance.now() - t0), 0));
    }
    send();
  };

  const undo = () => {
    S.seq += 1;
    const last = S.history.pop();
    S.outbox.push({ cid: `${S.session}-${S.seq}`, kind: "undo", ref: last ? last.pair.ref : null });
    if (last) S.front.unshift(last.pair);
    recompute();
    show();
    send();
  };

  if (!root.__keys) {
    const onKey = (e) => {
      const st = root.__state;
      if (!st || !document.body.contains(root)) return;
      if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
      const tag = (e.target && e.target.tagName) || "";
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(tag) || (e.target && e.target.isContentEditable)) return;
      const k = (e.key || "").toLowerCase();
      if (!["y", "n", "s", "u"].includes(k)) return;
      e.preventDefault();
      e.stopPropagation();
      root.__act(k, e.timeStamp);
    };
    document.addEventListener("keydown", onKey, true);
    root.__keys = onKey;
    for (const b of [ui.yes, ui.no, ui.skip, ui.undo]) {
      b.addEventListener("click", (e) => root.__act(b.dataset.key, e.timeStamp));
    }
  }
  root.__act = (k, t) => {
    if (S.closed) return;
    if (k === "y") decide(1, t);
    else if (k === "n") decide(0, t);
    else if (k === "s") decide("skip", t);
    else if (k === "u") undo();
  };

  root.__paint = paint;
  if (!root.__timer) {
    // resend what the server has not acknowledged, and keep the status line honest while it is silent
    root.__timer = setInterval(() => {
      const st = root.__state;
      if (!st || !document.body.contains(root)) return;
      if (st.outbox.length && Date.now() - st.lastSend > Math.min(30000, RESEND_MS * 2 ** Math.min(st.retry, 4))) {
        st.resends += 1;
        st.retry += 1;
        root.__send();
      }
      root.__paint();
    }, 1000);
  }

  show();
  return () => {
    if (root.__keys && !document.body.contains(root)) {
      document.removeEventListener("keydown", root.__keys, true);
      root.__keys = null;
      clearInterval(root.__timer);
      root.__timer = null;
    }
  };
}
