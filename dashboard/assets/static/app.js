// lockctl dashboard: renders the snapshots the server pushes (/events) and
// streams a job's logs. Every string from the cluster goes into the page as
// text (textContent, text nodes), never as HTML, and text that is not
// printable (bidirectional overrides, other format and control characters)
// is shown quoted with escapes, as lockctl and the page's server show it.
"use strict";

(function () {
  const body = document.body;
  const page = body.dataset.page;
  // base is the path the page is served under: "" at the root, /c/CONTEXT
  // for one cluster of a dashboard of several.
  const base = document.documentElement.dataset.base || "";
  // offset is the server's clock minus the browser's, from the stream's
  // last "clock" event or update (a whole snapshot may be a refresh old),
  // so that ages and expiries count on the clock locks are judged on.
  let offset = 0, clocked = false;

  // PRINTABLE matches a rune Go's unicode.IsPrint accepts: a letter, mark,
  // number, punctuation, symbol or the ASCII space; ALL_PRINTABLE a string
  // of them.
  const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
  const ALL_PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]*$/u;
  const SHORT = { 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r" };

  // printable mirrors lock.Printable: s as it is when every character is
  // printable, else quoted with Go's escapes (strconv.Quote), so that a
  // right-to-left override cannot display text reversed.
  function printable(s) {
    s = s === undefined || s === null ? "" : String(s);
    if (ALL_PRINTABLE.test(s)) return s;
    let out = '"';
    for (const ch of s) {
      const c = ch.codePointAt(0);
      if (ch === '"' || ch === "\\") out += "\\" + ch;
      else if (PRINTABLE.test(ch)) out += ch;
      else if (SHORT[c]) out += SHORT[c];
      else if (c < 0x80) out += "\\x" + c.toString(16).padStart(2, "0");
      else if (c < 0x10000) out += "\\u" + c.toString(16).padStart(4, "0");
      else out += "\\U" + c.toString(16).padStart(8, "0");
    }
    return out + '"';
  }

  // h makes an element; string children become text, shown printable.
  // NOTE: it makes every element of thousands of cards: no copy of its
  // attributes, and the children appended in one call (a fifth faster
  // than one append each in Chromium).
  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const k in attrs) {
        const v = attrs[k];
        if (v === undefined || v === null || v === false) continue;
        if (k === "class") e.className = v;
        else e.setAttribute(k, v);
      }
    }
    const out = [];
    for (const c of children) addChild(out, c);
    e.append(...out);
    return e;
  }

  // addChild adds c to out: a node as it is, an array as its children,
  // anything else as text, shown printable (append makes a text node of
  // a string, never markup).
  function addChild(out, c) {
    if (c === undefined || c === null || c === false) return;
    if (Array.isArray(c)) for (const x of c) addChild(out, x);
    else out.push(c instanceof Node ? c : printable(c));
  }

  function seg(s) { return encodeURIComponent(s); }

  // human mirrors lockctl's term.HumanDuration.
  function human(ms) {
    let s = Math.round(ms / 1000);
    if (s < 0) s = 0;
    if (s < 60) return s + "s";
    if (s < 3600) {
      const m = Math.floor(s / 60), r = s % 60;
      return r ? m + "m" + r + "s" : m + "m";
    }
    if (s < 48 * 3600) {
      const mins = Math.round(s / 60), hh = Math.floor(mins / 60), mm = mins % 60;
      return hh + "h" + mm + "m";
    }
    return Math.floor(s / 86400) + "d";
  }

  // goDuration mirrors Go's time.Duration.String of a duration rounded to
  // the second, as lockctl status words an expiry: "59m3s", "1h0m0s", "0s".
  function goDuration(ms) {
    const s = Math.round(ms / 1000);
    if (s <= 0) return "0s";
    const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
    return (hh ? hh + "h" + mm + "m" : mm ? mm + "m" : "") + ss + "s";
  }

  // expiryWords words a liveness from the holder's expiry at now, as the
  // server's liveness and lockctl status do.
  function expiryWords(at, now) {
    return at > now ? "expires in " + goDuration(at - now) : "expired " + goDuration(now - at) + " ago";
  }

  function serverNow() { return Date.now() + offset; }

  function rfc(t) {
    if (!t) return "";
    return new Date(t).toISOString().replace(/\.\d+Z$/, "Z");
  }

  function agoEl(t) {
    if (!t) return "";
    return h("time", { datetime: rfc(t), "data-ago": "" }, human(serverNow() - Date.parse(t)));
  }

  // timeEl shows t as the page's templates do (when): a space between the
  // date and the time, where a narrow column may wrap, and nowhere else.
  function timeEl(t) {
    const [d, tm] = rfc(t).split("T");
    return h("time", { datetime: rfc(t) }, h("span", { class: "nowrap" }, d), " ", h("span", { class: "nowrap" }, tm || ""));
  }

  function badge(s) {
    return h("span", { class: "badge state-" + String(s).toLowerCase() }, s);
  }

  function ident(id) {
    if (!id) return "";
    // As lock.Identity.String: each field printable on its own.
    return printable(id.owner) + "/" + printable(id.repo) + "@" + printable(id.branch) + "#" + printable(id.build);
  }

  // who shows a claim's identity, linked to its CI run when the claim
  // names one (an http or https URL only).
  function who(c) {
    if (c && typeof c.runURL === "string" && /^https?:\/\//i.test(c.runURL)) {
      return h("a", { class: "run", href: c.runURL, title: "its CI run" }, ident(c));
    }
    return ident(c);
  }

  function freezeBy(f) {
    if (f.by && f.by.owner === "configmap" && f.by.repo === "lockctl-freeze-windows") {
      return "freeze window " + printable(f.by.branch);
    }
    return ident(f.by);
  }

  // eta renders a waiter's estimated wait as lockctl status prints it
  // ("about 11 min", "2-7 min", "any moment"), its basis as the tooltip.
  function eta(w) {
    if (!w.estimatedWait) return null;
    return h("span", { class: "eta", title: w.basis || null }, " · est. wait " + w.estimatedWait);
  }

  function prio(w) {
    const out = [];
    if (w.priority && w.priority !== "normal") out.push(h("span", { class: "prio prio-" + w.priority }, w.priority));
    if (w.effectivePriority) out.push(" ", h("span", { class: "prio" }, "aged to " + w.effectivePriority));
    return out;
  }

  // tokenOf renders the holder's fencing token; a holder handed the lock
  // has none until it confirms.
  function tokenOf(st) {
    if (st.token) return h("code", null, st.token);
    return h("span", { class: "muted" }, st.holder && st.holder.handedOver ? "handed over, not confirmed yet" : "none");
  }

  function lockCard(entry, lockNS) {
    const l = entry.lock, st = l.status || {}, md = l.metadata || {};
    const href = base + "/locks/" + seg(md.namespace) + "/" + seg(md.name);
    const target = (l.spec && l.spec.target) || md.name;
    const facts = h("dl", { class: "facts" });
    if (st.holder) {
      facts.append(
        h("dt", null, "Holder"), h("dd", { class: "holder" }, who(st.holder)),
        h("dt", null, "Token"), h("dd", null, tokenOf(st)),
        h("dt", null, "Since"), h("dd", null, agoEl(st.holder.since), " ago"));
      // The GitOps applications the holder deploys (--app), as the server
      // renders them.
      if (st.holder.apps && st.holder.apps.length) {
        facts.append(h("dt", null, "Apps"), h("dd", { class: "apps" }, st.holder.apps.map(printable).join(", ")));
      }
    }
    // An entry with an expiry has its liveness worded here, and again
    // every second (tick), from the expiry: the server sends the expiry,
    // not words that would change every second.
    // A lock nobody holds has no holder to be alive; frozen, the freeze
    // below says what holds it.
    if (st.holder || !st.freeze) {
      facts.append(h("dt", null, "Liveness"), entry.expires
        ? h("dd", { "data-expires": entry.expires }, expiryWords(Date.parse(entry.expires), serverNow()))
        : h("dd", null, st.liveness || ""));
    }
    if (st.estimatedWait) {
      facts.append(h("dt", null, "Est. wait"), h("dd", { class: "estimate" }, st.estimatedWait, " ",
        h("span", { class: "muted" }, "for a deploy queued now (" + (st.basis || "") + ")")));
    }
    if (st.invalid) facts.append(h("dt", null, "Invalid"), h("dd", null, st.invalid));
    // As the server's cardState: a lock nobody holds shows frozen while a
    // freeze holds it.
    const state = st.state === "free" && st.freeze ? "frozen" : st.state;
    const card = h("article", { class: "lock", "data-state": state, "data-namespace": md.namespace, "data-name": md.name },
      h("header", null,
        h("h3", null, h("a", { href: href }, target), lockNS ? null : h("span", { class: "muted" }, " in " + md.namespace)),
        badge(state)),
      facts);
    if (st.freeze) {
      card.append(h("p", { class: "freeze", role: "note" },
        h("strong", null, "Frozen"), " until ", timeEl(st.freeze.until), " by ",
        h("span", { class: "by" }, freezeBy(st.freeze)), ": ",
        h("q", { class: "reason" }, st.freeze.reason)));
    }
    if (st.breakGlass) {
      card.append(h("p", { class: "freeze breakglass", role: "note" }, h("strong", null, "Break-glass"), ": ", st.breakGlass));
    }
    card.append(h("h4", null, "Queue"));
    const waiters = st.waiters || [];
    if (waiters.length) {
      card.append(h("ol", { class: "queue" }, waiters.map((w) =>
        h("li", null, h("span", { class: "who" }, who(w)), " ", prio(w), " ",
          h("span", { class: "waited" }, "waited ", agoEl(w.since)), eta(w)))));
    } else {
      card.append(h("p", { class: "empty" }, "Nobody waits."));
    }
    card.append(h("p", { class: "more" }, h("a", { href: href }, "History of " + target)));
    if (page === "index" && filterActive()) card.hidden = !matches(entry);
    return card;
  }

  // The index page's filter, as its query gave it to the server (which
  // served the cards it shows), then as its form sets it: the locks
  // whose target, holder or a waiter contains q, whatever its case, in
  // state (a lock may be in several), as the server's Filter.
  const FILTER_STATES = ["held", "waiting", "frozen", "free"];
  const query = new URLSearchParams(location.search);
  let filter = { q: (query.get("q") || "").trim(), state: FILTER_STATES.includes(query.get("state")) ? query.get("state") : "" };

  function filterActive() { return filter.q !== "" || filter.state !== ""; }

  function inState(st, s) {
    switch (s) {
      case "held": return !!st.holder;
      case "waiting": return (st.waiters || []).length > 0;
      case "frozen": return !!st.freeze;
      case "free": return !st.holder && !st.freeze && st.state !== "invalid";
    }
    return false;
  }

  function matches(e) {
    const st = e.lock.status || {};
    if (filter.state && !inState(st, filter.state)) return false;
    if (!filter.q) return true;
    const q = filter.q.toLowerCase();
    if (String((e.lock.spec || {}).target || "").toLowerCase().includes(q)) return true;
    if (st.holder && ident(st.holder).toLowerCase().includes(q)) return true;
    return (st.waiters || []).some((w) => ident(w).toLowerCase().includes(q));
  }

  // applyFilter shows the cards of the locks the filter matches and hides
  // the others, and says when none matches.
  function applyFilter() {
    if (page !== "index" || !state) return;
    let n = 0;
    if (filterActive()) {
      for (const e of state.locks) {
        const ok = matches(e), card = cards.get(keyOf(e));
        if (ok) n++;
        if (card && card.hidden === ok) card.hidden = !ok;
      }
    } else {
      for (const card of cards.values()) if (card.hidden) card.hidden = false;
    }
    const nomatch = document.getElementById("nomatch");
    if (nomatch) nomatch.hidden = !(filterActive() && state.locks.length > 0 && n === 0);
  }

  // renderCounts counts the locks of s by state, whatever the filter, each
  // count a link to the page filtered by its state.
  function renderCounts(s) {
    const el = document.getElementById("counts");
    if (!el) return;
    const n = { held: 0, waiting: 0, frozen: 0, free: 0 };
    for (const e of s.locks) {
      const st = e.lock.status || {};
      for (const k of FILTER_STATES) if (inState(st, k)) n[k]++;
    }
    const out = [];
    FILTER_STATES.forEach((k, i) => {
      if (i) out.push(" · ");
      out.push(h("a", { href: base + "/?state=" + k, "data-state": k, "aria-current": filter.state === k ? "true" : null },
        h("span", { class: "n" }, String(n[k])), " " + k));
    });
    el.replaceChildren(...out);
  }

  // setFilter makes f the filter: the page's address says it (a reload or
  // a link shows the same), the cards follow.
  function setFilter(f) {
    filter = f;
    const params = new URLSearchParams();
    if (f.q) params.set("q", f.q);
    if (f.state) params.set("state", f.state);
    const qs = params.toString();
    history.replaceState(null, "", base + (qs ? "/?" + qs : "/"));
    const clear = document.getElementById("filter-clear");
    if (clear) clear.hidden = !filterActive();
    applyFilter();
    if (state) renderCounts(state);
  }

  const form = page === "index" ? document.getElementById("filter") : null;
  if (form) {
    const input = form.elements.namedItem("q"), select = form.elements.namedItem("state");
    // As the address says, whatever page the server had to serve.
    input.value = filter.q;
    select.value = filter.state;
    const fromForm = () => setFilter({ q: input.value.trim(), state: FILTER_STATES.includes(select.value) ? select.value : "" });
    input.addEventListener("input", fromForm);
    select.addEventListener("change", fromForm);
    form.addEventListener("submit", (ev) => { ev.preventDefault(); fromForm(); });
    document.getElementById("counts").addEventListener("click", (ev) => {
      const a = ev.target.closest("a[data-state]");
      if (!a) return;
      ev.preventDefault();
      select.value = filter.state === a.dataset.state ? "" : a.dataset.state;
      fromForm();
    });
  }

  function table(heads, rows) {
    return h("div", { class: "scroll" }, h("table", null,
      h("thead", null, h("tr", null, heads.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, rows)));
  }

  // jobReason says why a job is where it is, as the server's page does:
  // the words for people first, the machine's reason after them.
  function jobReason(j) {
    if (!j.description) return [j.reason || ""];
    return [j.description, j.reason ? [" ", h("span", { class: "muted" }, "(" + j.reason + ")")] : null];
  }

  function jobDuration(j, now) {
    let from = j.pending || (j.terminal ? j.started : null);
    if (!from) return "";
    const to = j.completed ? Date.parse(j.completed) : now;
    return human(to - Date.parse(from));
  }

  // replace swaps the children of the element id for nodes, keeping the
  // keyboard focus on the link it was on.
  function replace(id, ...nodes) {
    const el = document.getElementById(id);
    if (!el) return;
    const active = document.activeElement;
    const key = active && el.contains(active) && active.getAttribute("href");
    // NOTE: flat, as h's children: an array among nodes is its nodes, not
    // the text of the array (",[object HTMLSpanElement]").
    el.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false)
      .map((n) => (n instanceof Node ? n : printable(n))));
    if (key) {
      for (const a of el.querySelectorAll("a")) {
        if (a.getAttribute("href") === key) { a.focus(); break; }
      }
    }
  }

  function renderProblems(s) {
    replace("problems", ...(s.problems || []).map((p) => h("p", { class: "problem", role: "alert" }, p)));
  }

  // cards are the index page's lock cards by lock (keyOf), so that an
  // update replaces the cards of the locks it changed and no other.
  const cards = new Map();

  // shown are the cards on screen or near it: only their ages and
  // expiries are worded again every second, and a card coming on screen
  // is worded at once; at thousands of cards, wording all of them every
  // second would keep the page busy. The browser says which cards it
  // renders (content-visibility: auto skips the others); without that
  // event, every card is worded.
  const shown = new Set();
  const skips = "ContentVisibilityAutoStateChangeEvent" in window;

  function onSkip(ev) {
    if (ev.skipped) {
      shown.delete(ev.target);
    } else {
      shown.add(ev.target);
      tickIn(ev.target, serverNow());
    }
  }

  // watchCard follows whether card is rendered: a card made here gets
  // the event when it is first laid out; one the server rendered, laid
  // out before the script ran, is asked.
  function watchCard(card) {
    if (!skips) {
      shown.add(card);
      return;
    }
    card.addEventListener("contentvisibilityautostatechange", onSkip);
    if (card.isConnected && card.checkVisibility({ contentVisibilityAuto: true })) shown.add(card);
  }

  function unwatchCard(card) {
    shown.delete(card);
  }

  // keyOf names a lock; keys sort as the server orders the locks, by
  // namespace, then name.
  function keyOf(e) {
    const md = e.lock.metadata || {};
    return (md.namespace || "") + "\u0000" + (md.name || "");
  }

  // indexOf returns where key is, or would be, in locks, sorted by key.
  function indexOf(locks, key) {
    let lo = 0, hi = locks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keyOf(locks[mid]) < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // indexAfter returns where the first lock with a key after key is in
  // locks, sorted by key.
  function indexAfter(locks, key) {
    const i = indexOf(locks, key);
    return i < locks.length && keyOf(locks[i]) === key ? i + 1 : i;
  }

  // The cards are made in order, in slices while the browser is idle, so
  // that thousands of them do not hold the page: filling is set while
  // some are still to be made, fillKey is the key of the last card made
  // (null before the first). The fill makes the cards past fillKey from
  // the latest snapshot (state); patchLocks leaves those alone. The cards
  // of the first slice go into the page at once, those of the others wait
  // in fillRest and join it together when the last is made: the page lays
  // out its grid of thousands of cards once, not at every slice, and they
  // are below the screen's anyway.
  let filling = false, fillKey = null, fillGen = 0, fillRest = null;
  // FILL_SLICE_MS is the least time one slice of the fill takes, when the
  // browser is idle for less (it says up to 50 ms): under the 50 ms of a
  // long task, and few enough slices that the frames between them cost
  // little.
  const FILL_SLICE_MS = 30;

  function later(fn) {
    if (window.requestIdleCallback) requestIdleCallback(fn, { timeout: 50 });
    else setTimeout(fn, 0);
  }

  // fill makes the cards past fromKey (every card for null), the first
  // slice now, the others later.
  function fill(fromKey) {
    const gen = ++fillGen;
    const rest = document.createDocumentFragment();
    filling = true;
    fillKey = fromKey;
    fillRest = rest;
    const slice = (deadline) => {
      if (gen !== fillGen) return;
      const el = document.getElementById("locks");
      const locks = state.locks;
      const budget = deadline && !deadline.didTimeout ? Math.max(deadline.timeRemaining(), FILL_SLICE_MS) : FILL_SLICE_MS;
      const until = performance.now() + budget;
      const frag = deadline === null ? document.createDocumentFragment() : rest;
      let i = fillKey === null ? 0 : indexAfter(locks, fillKey);
      while (i < locks.length && performance.now() < until) {
        for (const end = Math.min(i + 25, locks.length); i < end; i++) {
          const e = locks[i], key = keyOf(e);
          fillKey = key;
          if (cards.has(key)) continue;
          const card = lockCard(e, state.lockNamespace);
          cards.set(key, card);
          watchCard(card);
          frag.append(card);
        }
      }
      if (frag !== rest) el.append(frag);
      if (i < locks.length) {
        later(slice);
      } else {
        el.append(rest);
        filling = false;
        fillKey = null;
        fillRest = null;
        el.dataset.filled = String(state.seq);
      }
    };
    slice(null);
  }

  // noLocks is what a lock namespace where no lock was ever taken shows.
  function noLocks() {
    return h("p", { class: "empty" }, "No locks yet — ", h("code", null, "lockctl acquire"), " makes one.");
  }

  function renderLocks(s) {
    const el = document.getElementById("locks");
    if (!el) return;
    fillGen++;
    filling = false;
    fillRest = null;
    cards.clear();
    shown.clear();
    if (!s.locks.length) {
      replace("locks", noLocks());
      el.dataset.filled = String(s.seq);
      return;
    }
    el.replaceChildren();
    delete el.dataset.filled;
    fill(null);
  }

  // patchLocks makes the cards of the locks u changed, added and removed
  // (s is the snapshot after it), keeping the keyboard focus where it was.
  function patchLocks(s, u) {
    const el = document.getElementById("locks");
    if (!el) return;
    if (!s.locks.length || !cards.size) {
      renderLocks(s);
      return;
    }
    const active = document.activeElement;
    const focused = active && el.contains(active) && active.getAttribute("href");
    for (const r of u.removed || []) {
      const key = (r.namespace || "") + "\u0000" + (r.name || "");
      const card = cards.get(key);
      if (card) {
        card.remove();
        unwatchCard(card);
      }
      cards.delete(key);
    }
    for (const e of u.locks) {
      const key = keyOf(e), old = cards.get(key);
      // A card past the fill's is made by the fill, from this snapshot.
      if (!old && filling && (fillKey === null || key > fillKey)) continue;
      const card = lockCard(e, s.lockNamespace);
      watchCard(card);
      if (old) {
        old.replaceWith(card);
        unwatchCard(old);
      } else {
        let next = null;
        for (let i = indexOf(s.locks, key) + 1; i < s.locks.length && !next; i++) next = cards.get(keyOf(s.locks[i])) || null;
        // NOTE: the next card may still wait with the fill's (fillRest);
        // with none, the new one is the last so far.
        (next ? next.parentNode : fillRest || el).insertBefore(card, next);
      }
      cards.set(key, card);
    }
    if (focused && !el.contains(document.activeElement)) {
      for (const a of el.querySelectorAll("a")) {
        if (a.getAttribute("href") === focused) { a.focus(); break; }
      }
    }
  }

  // adoptLocks takes the cards the server rendered into the page (the
  // first FirstCards) as the cards of s, when it rendered them from s,
  // and fills in the others.
  function adoptLocks(s) {
    const el = document.getElementById("locks");
    if (!el || el.dataset.seq !== String(s.seq)) return false;
    delete el.dataset.seq;
    // Served filtered, the page has the cards the filter shows, not the
    // first cards: they are made again.
    if (el.dataset.filtered !== undefined) return false;
    const found = el.querySelectorAll(":scope > article.lock");
    if (found.length > s.locks.length || (!found.length && s.locks.length)) return false;
    const keys = [...found].map((card) => (card.dataset.namespace || "") + "\u0000" + (card.dataset.name || ""));
    if (keys.some((key, i) => key !== keyOf(s.locks[i]))) return false;
    cards.clear();
    keys.forEach((key, i) => {
      cards.set(key, found[i]);
      watchCard(found[i]);
    });
    if (found.length < s.locks.length) fill(keys[keys.length - 1]);
    else el.dataset.filled = String(s.seq);
    return true;
  }

  function renderIndex(s, u, first) {
    if (u) patchLocks(s, u);
    else if (!first || !adoptLocks(s)) renderLocks(s);
    renderCounts(s);
    applyFilter();
    replace("windows", s.windows.length ? table(["Window", "Freezes", "From", "Until", "Reason"], s.windows.map((w) =>
      h("tr", { class: w.active ? "active" : null },
        h("td", null, (s.lockNamespace ? "" : w.namespace + "/") + w.name, w.active ? [" ", badge("frozen")] : null),
        h("td", null, w.targets && w.targets.length ? w.targets.map(printable).join(", ") : "every lock"),
        h("td", null, timeEl(w.start)), h("td", null, timeEl(w.end)), h("td", null, w.reason))))
      : h("p", { class: "empty" }, "No freeze windows."));
    if (s.showJobs) {
      const now = serverNow();
      replace("jobs", s.jobs.length ? table(["Job", "State", "Age", "Duration", "Pod", "Build", "Branch", "Reason"], s.jobs.map((j) =>
        h("tr", { "data-job": j.name },
          h("td", null, h("a", { href: base + "/jobs/" + seg(j.name) + "/logs" }, j.name)),
          h("td", null, badge(j.state)), h("td", null, agoEl(j.started)), h("td", null, jobDuration(j, now)),
          h("td", null, j.pod || ""), h("td", null, j.buildID || ""), h("td", null, j.branch || ""),
          h("td", null, jobReason(j)))))
        : h("p", { class: "empty" }, "No jobs."));
    }
  }

  function renderHistory(s) {
    const ns = body.dataset.namespace, name = body.dataset.name;
    const e = s.locks.find((x) => (x.lock.metadata || {}).namespace === ns && (x.lock.metadata || {}).name === name);
    if (!e) {
      replace("current", h("p", { class: "empty" }, "No such lock (yet): it appears here when it is taken."));
      return;
    }
    document.getElementById("target").textContent = (e.lock.spec || {}).target || name;
    replace("current", lockCard(e, s.lockNamespace));
    const history = e.history || [];
    replace("history", history.length ? table(["Holder", "From", "Until", "Held", "How it ended"], history.map((x) =>
      h("tr", null,
        h("td", null, ident(x), x.pod ? [" ", h("span", { class: "muted" }, "pod " + x.pod.namespace + "/" + x.pod.name)] : null),
        h("td", null, timeEl(x.since)), h("td", null, timeEl(x.until)),
        h("td", { class: "nowrap" }, human(Date.parse(x.until) - Date.parse(x.since))),
        h("td", null, badge(x.ended), describeEnd(x) !== x.ended ? [" ", describeEnd(x)] : null,
          x.ignoredFreeze ? [" ", h("span", { class: "muted" }, "took it in spite of: " + x.ignoredFreeze)] : null))))
      : h("p", { class: "empty" }, "No past holds."));
  }

  // describeEnd mirrors lock.HistoryEntry.Describe.
  function describeEnd(x) {
    switch (x.ended) {
      case "handedOver": return "handed over to " + printable(x.by || "");
      case "broken": return "broken by " + printable(x.by || "");
      case "ranAgain": return "taken over by " + printable(x.by || "") + ", a new run of its job";
      case "expired": case "lost": return x.reason ? x.ended + ": " + printable(x.reason) : x.ended;
      default: return printable(x.ended);
    }
  }

  function renderJob(s) {
    const j = s.jobs.find((x) => x.name === body.dataset.job);
    if (!j) return;
    replace("job-state", badge(j.state));
    replace("job-pod", j.pod || "");
    replace("job-build", j.buildID || "");
    replace("job-age", agoEl(j.started));
    replace("job-duration", jobDuration(j, serverNow()));
    replace("job-reason", jobReason(j));
  }

  function conn(live, text) {
    const el = document.getElementById("conn");
    el.className = "conn " + (live ? "live" : "down");
    el.textContent = text;
  }

  // complete gives s every list the page reads, empty where the server
  // sent none: a page may meet a server older or newer than itself.
  function complete(s) {
    for (const k of ["locks", "windows", "jobs", "problems"]) if (!Array.isArray(s[k])) s[k] = [];
    s.locks = s.locks.filter((e) => e && e.lock);
    for (const e of s.locks) if (!Array.isArray(e.history)) e.history = [];
    return s;
  }

  // state is the last snapshot the page has, whole.
  let state = null;

  // onSnapshot shows s; u, when set, is the update that made s from the
  // snapshot before, whose changed locks alone are drawn again.
  function onSnapshot(s, u) {
    const first = state === null;
    complete(s);
    state = s;
    if (u || !clocked) offset = Date.parse(s.now) - Date.now();
    renderProblems(s);
    if (page === "index") renderIndex(s, u, first);
    else if (page === "history") renderHistory(s);
    else if (page === "logs") renderJob(s);
    conn(true, "live · " + rfc(s.now));
    body.dataset.seq = String(s.seq);
  }

  // onUpdate applies an update (the server's Update: every field of a
  // snapshot, the locks that changed or came, the keys of those gone) to
  // the snapshot it changes; one from another (none: the stream sends the
  // whole snapshot after one it skipped) makes the page read the whole.
  function onUpdate(u) {
    if (!state || u.base !== state.seq) {
      fetch(base + "/api/snapshot").then((r) => r.json()).then((s) => onSnapshot(s)).catch(() => conn(false, "reconnecting…"));
      return;
    }
    u.locks = (u.locks || []).filter((e) => e && e.lock);
    const byKey = new Map(state.locks.map((e) => [keyOf(e), e]));
    for (const r of u.removed || []) byKey.delete((r.namespace || "") + "\u0000" + (r.name || ""));
    let added = false;
    for (const e of u.locks) {
      const key = keyOf(e);
      if (!byKey.has(key)) added = true;
      byKey.set(key, e);
    }
    const locks = [...byKey.values()];
    if (added) locks.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
    const s = Object.assign({}, u, { locks: locks });
    delete s.base;
    delete s.removed;
    onSnapshot(s, u);
  }

  const events = new EventSource(base + "/events");
  events.addEventListener("snapshot", (ev) => onSnapshot(JSON.parse(ev.data)));
  events.addEventListener("update", (ev) => onUpdate(JSON.parse(ev.data)));
  events.addEventListener("clock", (ev) => {
    const at = Date.parse(JSON.parse(ev.data).now);
    if (isNaN(at)) return;
    offset = at - Date.now();
    clocked = true;
    tick();
  });
  events.addEventListener("error", () => conn(false, "reconnecting…"));

  // tickIn words again the ages and expiries under root at now.
  function tickIn(root, now) {
    for (const t of root.querySelectorAll("time[data-ago]")) {
      const at = Date.parse(t.getAttribute("datetime"));
      if (isNaN(at)) continue;
      const w = human(now - at);
      if (t.textContent !== w) t.textContent = w;
    }
    for (const d of root.querySelectorAll("[data-expires]")) {
      const at = Date.parse(d.dataset.expires);
      if (isNaN(at)) continue;
      const w = expiryWords(at, now);
      if (d.textContent !== w) d.textContent = w;
    }
  }

  // Ages and expiries count on between snapshots, on the server's clock:
  // the lock cards on screen, and what else the page shows.
  function tick() {
    const now = serverNow();
    for (const card of shown) tickIn(card, now);
    for (const id of ["current", "jobs", "job-age"]) {
      const el = document.getElementById(id);
      if (el) tickIn(el, now);
    }
  }
  setInterval(tick, 1000);

  if (page === "logs") {
    const log = document.getElementById("log");
    const status = document.getElementById("log-status");
    const stream = new EventSource(base + "/jobs/" + seg(body.dataset.job) + "/logs/stream");
    const note = (text) => {
      status.append(h("li", null, text));
      while (status.children.length > 5) status.firstChild.remove();
    };
    let opened = false;
    stream.addEventListener("open", () => {
      // A stream opened again starts the logs again.
      if (opened) log.replaceChildren();
      opened = true;
    });
    stream.addEventListener("line", (ev) => {
      const follow = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.append(document.createTextNode(ev.data + "\n"));
      if (follow) log.scrollTop = log.scrollHeight;
    });
    stream.addEventListener("status", (ev) => note(ev.data));
    stream.addEventListener("end", (ev) => {
      note(ev.data);
      body.dataset.logEnded = "true";
      stream.close();
    });
  }
})();
