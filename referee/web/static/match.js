// The card table. A finished match is stepped card by card from its record (every hand,
// the pain cards, each trick's winner and reason, and the running scores the server
// computed with the rules engine); a running match is followed live from its public feed
// (cards as they are played, pain cards once revealed, never a hand) and becomes the
// replay by itself when it ends.
import { api, el, botLink, frame, showError, query, signed, SUITS, fill, redrawOnResize } from "/static/common.js";
import { GRAPH_WIDTH, scoreGraph, timeline, trackMarks } from "/static/graph.js";
import { Replay, faultWords, reasonLine, reasonText, seatPanel, stepButton, suitLegend, suitName, table, trickArea } from "/static/table.js";

const main = document.getElementById("main");
const SPEEDS = [["0.5", "½×"], ["1", "1×"], ["2", "2×"], ["4", "4×"]];
const CARD_MS = 700;

function header(doc, live) {
  const rules = doc.rules || {};
  const secret = rules.pain_visibility === "secret" || rules.pain_visibility === "PAIN_VISIBILITY_SECRET";
  // On a phone the seats (named on the table too), the rules and the commitment fold
  // away under one line, so that the table starts near the top of the screen.
  const narrow = window.matchMedia("(max-width: 600px)").matches;
  return [
    el("h1", {}, `Match ${doc.match_id} `, live ? el("span", { class: "pill live", id: "live-badge", text: "live" }) : null),
    // A match on demand: not rated, counted nowhere.
    doc.challenge ? el("p", { class: "challenge", id: "challenge" }, "Challenge asked for by ", botLink(doc.challenge), ": unrated, not in the standings") : null,
    el("details", { class: "match-info", open: narrow ? null : "open" },
      el("summary", { text: `${doc.seating.length} seats · rules ${rules.preset || "?"}${secret ? ", secret pain cards" : ""}${doc.seed ? " · seed" : ""}` }),
      el("p", { class: "seating" }, doc.seating.flatMap((b, s) => [s ? " · " : "", `seat ${s}: `, botLink(b)])),
      el("p", { class: "muted" }, `rules ${rules.preset || "?"}${secret ? ", secret pain cards" : ""} (`,
        el("a", { href: "/rules", text: "how a trick is won and a round scored" }),
        `) · commitment ${(doc.commitment || "").slice(0, 16)}…${doc.seed ? ` · seed ${doc.seed}` : ""}`)),
  ];
}

// Whether the result is hidden (it spoils a replay): hidden unless this browser's viewer
// asked to see results ("0"). spoiler.js reads it before the page is drawn, so the
// server's result line never flashes. "Show the result" shows it on this page only.
const HIDE_KEY = "sticheln.hideResult";
let revealed = false;
function hidingSetting() {
  try { return localStorage.getItem(HIDE_KEY) !== "0"; } catch { return true; }
}
function hidingResult() {
  return hidingSetting() && !revealed;
}

function resultToggle(onChange) {
  const apply = () => {
    document.documentElement.classList.toggle("hide-result", hidingResult());
    show.hidden = !hidingResult();
    onChange();
  };
  const box = el("input", { type: "checkbox", id: "hide-result", checked: hidingSetting() ? "checked" : null,
    onchange: () => {
      try { localStorage.setItem(HIDE_KEY, box.checked ? "1" : "0"); } catch { /* private mode: this page only */ }
      revealed = false;
      apply();
    } });
  const show = el("button", { type: "button", id: "show-result", class: "link", hidden: hidingResult() ? null : "hidden",
    onclick: () => { revealed = true; apply(); } }, "Show the result");
  return el("p", { class: "result-toggle" }, show, el("label", {}, box, " hide results (no spoilers)"));
}

function result(doc) {
  if (!doc.end || !doc.end.places || !doc.end.places.length) return doc.end ? el("p", { id: "result", text: `Ended: ${doc.end.reason}` }) : null;
  const order = doc.seating.map((_, s) => s).sort((a, b) => doc.end.places[a] - doc.end.places[b]);
  return el("p", { id: "result" }, "Result: ", order.flatMap((s, i) => [i ? ", " : "", `${doc.end.places[s]}. `, botLink(doc.seating[s]), ` ${signed(doc.end.totals[s])}`]));
}

function scoreTable(seating, rows) {
  const head = el("tr", {}, el("th", { class: "text", text: "Round" }), seating.map((b) => el("th", { class: "text", text: b })));
  return el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "scores per round" }, el("table", { class: "scoretable", id: "scores" }, el("thead", {}, head),
    el("tbody", {}, rows.map((r) => el("tr", { class: r.cls || null, "data-round": r.round ?? null },
      el(r.head ? "th" : "td", { class: "text", text: r.label }), r.values.map((v) => el(r.head ? "th" : "td", { text: signed(v) })))))));
}

function suitsOf(cards) {
  return Object.keys(SUITS).filter((s) => cards.some((c) => c[0] === s));
}

// -- a finished match ----------------------------------------------------------------------
function viewer(doc, id, { speed: pace = "1" } = {}) {
  const replay = new Replay(doc, { moments: true });
  const seating = doc.seating;
  const steps = replay.steps;
  const legend = suitLegend(suitsOf(doc.rounds.flatMap((r) => r.hands.flat())));
  let at = 0, timer = null;
  const tableBox = el("div", { class: "table-box" });
  const label = el("span", { class: "step", id: "step-label" });
  // What a step shows, said to a screen reader ("Ada plays 7 of spades"): the position
  // alone says nothing of the card.
  const announce = el("div", { class: "sr-only", id: "announce", role: "status", "aria-live": "polite", "aria-atomic": "true" });
  // The rounds' ends, the faults and the largest swings: on the scrubber's track, and
  // as buttons under the graph of the totals.
  const line = timeline(replay);
  const marksStrip = el("div", { class: "track-marks", id: "track-marks", "aria-hidden": "true" });
  const graphBox = el("section", { class: "score-graph", id: "score-graph", "aria-labelledby": "graph-title" });
  let graphed = "";
  const scrubber = el("input", { type: "range", id: "scrubber", min: 0, max: replay.last, value: 0, step: 1, "aria-label": "position in the match",
    oninput: () => go(Number(scrubber.value)) });
  const roundSelect = el("select", { id: "round-select", "aria-label": "jump to round", onchange: () => { go(replay.indexOf(Number(roundSelect.value), -1, 0)); roundSelect.blur(); } },
    doc.rounds.map((r, i) => el("option", { value: i, text: `Round ${i + 1}` })));
  const speed = el("select", { id: "speed", "aria-label": "play speed", onchange: () => { if (timer) { toggle(); toggle(); } speed.blur(); } },
    SPEEDS.map(([v, t]) => el("option", { value: v, text: t, selected: v === "1" ? "selected" : null })));
  const scores = el("div");
  const faultList = el("div", { class: "events", id: "faults", tabindex: 0, role: "region", "aria-label": "faults" });
  const trickList = el("ol", { class: "trick-list", id: "trick-list" });
  const trickBox = el("nav", { class: "trick-box", "aria-labelledby": "trick-list-title" },
    el("h2", { id: "trick-list-title", text: "Tricks" }), trickList);
  let listed = "";
  const permalink = el("a", { href: "#r1", id: "permalink", text: "link to this moment" });
  // A button: a clear icon and a word on it, the whole step and its key in its name.
  const button = stepButton;
  const playButton = button("play", "▶\uFE0E", "play", "play (space)", () => toggle(), "play");
  // The steps one makes most, with the position, in a bar that stays in reach: at the
  // bottom of a phone's screen, at the top of a desk's window. The rest of the controls
  // stay with the page.
  const stepbar = el("div", { class: "stepbar", id: "stepbar", role: "toolbar", "aria-label": "step through the match" },
    el("div", { class: "scrub" }, el("div", { class: "track" }, scrubber, marksStrip), label),
    el("div", { class: "steps" },
      button("prev-trick", "◀\uFE0E◀\uFE0E", "trick", "previous trick (↑)", () => jumpTrick(-1)),
      button("prev", "◀\uFE0E", "card", "previous card (←)", () => go(at - 1)),
      playButton,
      button("next", "▶\uFE0E", "card", "next card (→)", () => go(at + 1)),
      button("next-trick", "▶\uFE0E▶\uFE0E", "trick", "next trick (↓)", () => jumpTrick(1))));
  const controls = el("div", { class: "controls", id: "controls" },
    el("div", { class: "more" },
      button("first", "⇤", "start", "start: the first card (Home)", () => go(0)),
      button("prev-round", "«", "round", "previous round (Page Up)", () => jumpRound(-1)),
      button("next-round", "»", "round", "next round (Page Down)", () => jumpRound(1)),
      button("last", "⇥", "end", "end: the last card (End)", () => go(replay.last)),
      roundSelect, el("label", { class: "speed" }, "speed ", speed)),
    stepbar);
  const links = el("div", { class: "links" }, el("span", { class: "muted keys", text: "keys: ← → card · ↑ ↓ trick · PgUp PgDn round · Home End · space play · " }),
    el("span", { class: "muted swipe", text: "swipe the table sideways for the next or previous card · " }), permalink, " · ",
    el("a", { href: `/api/matches/${encodeURIComponent(id)}/record.jsonl`, download: `${id}.jsonl`, id: "download", text: "download the record" }));
  swipeToStep(tableBox, (d) => go(at + d));

  function jumpRound(delta) {
    const { r, t } = steps[at];
    // Back from inside a round goes to its deal first.
    const target = delta < 0 && t >= 0 ? r : Math.max(0, Math.min(doc.rounds.length - 1, r + delta));
    go(replay.indexOf(target, -1, 0));
  }
  function jumpTrick(delta) {
    go(replay.trickStep(at, delta));
  }
  function toggle() {
    const show = (icon, word, title) => { playButton.firstChild.textContent = icon; playButton.lastChild.textContent = word; playButton.title = title; };
    if (timer) { clearInterval(timer); timer = null; show("▶\uFE0E", "play", "play (space)"); return; }
    if (at >= replay.last) go(0);
    show("❚❚", "pause", "pause (space)");
    timer = setInterval(() => { if (at >= replay.last) toggle(); else go(at + 1); }, CARD_MS / Number(speed.value));
  }
  function go(i, { keepHash = false } = {}) {
    at = Math.max(0, Math.min(replay.last, i));
    draw();
    const hash = replay.hashOf(at);
    if (!keepHash && location.hash !== `#${hash}`) history.replaceState(null, "", `#${hash}`);
  }
  // The round's tricks as a list to jump from (as a chess site lists the moves): each its
  // cards, the winner and what it took, a fault marked; the one shown now is current.
  function drawTrickList(st) {
    const hide = hidingResult();
    const r = st.r, round = doc.rounds[r];
    const upTo = hide ? (st.t < 0 ? -1 : st.t) : round.tricks.length - 1;
    const key = `${r}:${upTo}`;
    if (key !== listed) {
      listed = key;
      document.getElementById("trick-list-title").textContent = `Round ${r + 1}, trick by trick`;
      const entry = (i, href, ...content) => el("li", {}, el("a", { href, "data-step": i, onclick: (e) => { e.preventDefault(); go(i); intoView(); } }, ...content));
      const items = [entry(replay.indexOf(r, -1, 0), `#r${r + 1}`, "the deal")];
      const moment = replay.indexOf(r, -1, replay.secret ? 1 : 2);
      if (moment >= 0) items.push(entry(moment, `#${replay.hashOf(moment)}`, replay.secret ? "pain cards chosen (secret)" : "pain cards revealed"));
      round.tricks.slice(0, upTo + 1).forEach((tr, t) => {
        const i = replay.indexOf(r, t, tr.cards.length);
        const faulted = replay.faults.some((f) => f.round === r && f.trick === t && f.card !== null && f.card !== undefined);
        const seatOf = (k) => (tr.plays[k] ? tr.plays[k].seat : (tr.leader + k) % seating.length);
        const shown = !replay.secret || t === round.tricks.length - 1 || (st.lastTrick && st.complete);
        const points = tr.winner >= 0 && tr.points && (!replay.secret || (st.lastTrick && st.complete)) ? ` ${signed(tr.points.reduce((a, b) => a + b, 0))}` : "";
        items.push(entry(i, `#r${r + 1}t${t + 1}`,
          el("span", { class: "num", text: `${t + 1}.` }),
          el("span", { class: "list-cards" }, tr.cards.map((c, k) => el("span", {
            class: `chip suit-${c[0]}${seatOf(k) === tr.winner ? " took" : ""}`, title: `${seating[seatOf(k)]}: ${c.slice(1)} of ${suitName(c[0])}`,
            text: `${SUITS[c[0]][0]}${c.slice(1)}` }))),
          el("span", { class: "taker", text: tr.winner >= 0 ? `→ ${seating[tr.winner]}${shown ? points : ""}` : "→ nobody" }),
          faulted ? el("span", { class: "fault-mark", title: "a fault in this trick", text: "⚠" }) : null));
      });
      if (hide && upTo < round.tricks.length - 1) items.push(el("li", { class: "muted", text: "(the tricks still to come are hidden)" }));
      trickList.replaceChildren(...items);
    }
    // The current entry: the trick being played or shown, or the deal's moment.
    let current = replay.indexOf(st.r, -1, 0);
    if (st.t >= 0) current = replay.indexOf(st.r, st.t, st.round.tricks[st.t].cards.length);
    else if (st.c > 0) current = replay.indexOf(st.r, -1, replay.secret ? 1 : 2);
    for (const a of trickList.querySelectorAll("a")) {
      if (Number(a.dataset.step) === current) {
        a.setAttribute("aria-current", "step");
        // Keep it in view inside the list's own box, never scrolling the page.
        const li = a.parentElement;
        if (li.offsetTop < trickList.scrollTop || li.offsetTop + li.offsetHeight > trickList.scrollTop + trickList.clientHeight) {
          trickList.scrollTop = li.offsetTop - trickList.clientHeight / 3;
        }
      } else a.removeAttribute("aria-current");
    }
  }
  function spoken(st) {
    const { r, t, c, round, trick, complete } = st;
    const words = (x) => `${x.slice(1)} of ${suitName(x[0])}`;
    const faults = st.faultsHere.map((f) => ` Fault: ${seating[f.seat]}, ${faultWords(f.reason)}${f.forfeited ? ", forfeited" : ""}.`).join("");
    if (t < 0) {
      if (st.moment === 1) return `Round ${r + 1}: the pain cards are chosen, face down.${faults}`;
      if (st.moment === 2) return `Pain cards revealed: ${round.pain.map((p, s) => `${seating[s]} ${p.map(words).join(" and ")}`).join(", ")}.`;
      return `Round ${r + 1} dealt by ${seating[round.dealer]}.`;
    }
    const play = trick.plays[c - 1] || { seat: (trick.leader + c - 1) % seating.length, card: trick.cards[c - 1] };
    let text = `${seating[play.seat]} ${c === 1 ? "leads" : "plays"} ${words(play.card)}${play.fallback ? " (a fallback card)" : ""}.${faults}`;
    if (complete) {
      text += trick.winner < 0 ? " Nobody wins the trick." : ` ${seating[trick.winner]} wins the trick${st.painShown && trick.points ? `, ${signed(trick.points.reduce((a, b) => a + b, 0))}` : ""}.`;
      if (st.lastTrick && round.scores) text += ` Round ${r + 1} scored.`;
      if (st.lastTrick && replay.secret) text += ` The pain cards: ${round.pain.map((p, s) => `${seating[s]} ${p.map(words).join(" and ")}`).join(", ")}.`;
    } else text += ` ${seating[st.toPlay]} to play.`;
    return text;
  }
  // After a jump from a list below it, the table is brought back into view.
  function intoView() {
    const top = tableBox.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight / 2) tableBox.scrollIntoView({ block: "start" });
  }
  function draw() {
    const st = replay.state(at);
    drawTrickList(st);
    tableBox.replaceChildren(replay.table(at));
    seatIntoView(tableBox);
    drawGraph();
    label.textContent = replay.label(at);
    scrubber.setAttribute("aria-valuetext", replay.label(at));
    announce.textContent = spoken(st);
    roundSelect.value = String(st.r);
    scrubber.value = String(at);
    permalink.setAttribute("href", `#${replay.hashOf(at)}`);
    const rows = [];
    doc.rounds.forEach((x, i) => {
      if (i < st.r && x.scores) rows.push({ label: String(i + 1), values: x.scores, round: i });
    });
    const finished = st.lastTrick && st.complete && st.round.scores;
    rows.push({ label: finished ? String(st.r + 1) : `${st.r + 1} so far`, values: st.running || seating.map(() => null), cls: "cur", round: st.r });
    rows.push({ label: "Match", values: st.totals, head: true });
    scores.replaceChildren(el("h2", { text: "Scores" }), scoreTable(seating, rows));
    // Each fault links to its card (or the pain choice).
    faultList.replaceChildren(...(st.faults.length ? st.faults.map((f) => el("div", {},
      el("a", { href: `#${replay.hashOf(f.at)}`, onclick: (e) => { e.preventDefault(); go(f.at); intoView(); },
        text: `Round ${f.round + 1}${f.card === null || f.card === undefined ? ", pain choice" : `, trick ${f.trick + 1}, card ${f.card + 1}`}` }),
      `: ${seating[f.seat]} ${faultWords(f.reason)}${f.detail ? ` (${f.detail})` : ""}, strike ${f.strikes}${f.forfeited ? ", forfeited" : ""}`))
      : [el("div", { class: "muted", text: "No fault so far." })]));
  }
  // The graph: drawn again when what it may show changes (the result hidden, it grows
  // with the position); else only its position line moves.
  function drawGraph() {
    const hiding = hidingResult();
    const key = hiding ? `h${at}` : "all";
    if (key !== graphed || !graphBox.firstChild) {
      graphed = key;
      scoreGraph(graphBox, replay, line, at, hiding, (i) => { go(i); intoView(); });
      trackMarks(marksStrip, line, replay.last, at, hiding);
    }
    const cursor = document.getElementById("graph-cursor");
    if (cursor) {
      const x = 48 + (at / Math.max(1, replay.last)) * (Number(document.getElementById("graph-svg").getAttribute("width")) - 62);
      cursor.setAttribute("x1", x); cursor.setAttribute("x2", x);
    }
    for (const b of graphBox.querySelectorAll("button.mark")) b.classList.toggle("here", Number(b.dataset.step) === at);
  }
  // The step keys work wherever the focus is, except where a key means something there:
  // a drop-down keeps ↑ ↓ (its choices; ← → still step a card, not a round), the
  // scrubber its arrows, and a button, link or box its space and Enter.
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    if (t instanceof HTMLSelectElement && !["ArrowLeft", "ArrowRight"].includes(e.key)) return;
    if (t instanceof HTMLInputElement && t.type !== "checkbox") return;
    if (e.key === " " && t instanceof Element && t.closest("button, a, input, select, summary")) return;
    const keys = {
      ArrowRight: () => go(at + 1), ArrowLeft: () => go(at - 1),
      ArrowDown: () => jumpTrick(1), ArrowUp: () => jumpTrick(-1),
      PageDown: () => jumpRound(1), PageUp: () => jumpRound(-1),
      Home: () => go(0), End: () => go(replay.last), " ": () => toggle(),
    };
    if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
  });
  window.addEventListener("hashchange", () => { const i = replay.parse(location.hash); if (i >= 0 && i !== at) go(i, { keepHash: true }); });
  // A window resized (a phone turned): the graph drawn again at the width it now has.
  redrawOnResize(graphBox, GRAPH_WIDTH, () => {
    const chart = document.getElementById("graph-svg");
    return chart ? Number(chart.getAttribute("width")) : null;
  }, () => { graphed = ""; drawGraph(); });
  fill(main, ...header(doc, false), result(doc), resultToggle(() => { listed = ""; graphed = ""; draw(); }),
    el("div", { class: "viewer" }, controls, announce, legend, tableBox, links, graphBox, trickBox, scores, el("h2", { text: "Faults" }), faultList));
  document.body.classList.add("stepping");
  speed.value = pace;
  go(Math.max(0, replay.parse(location.hash)));
}

// -- a running match, live -------------------------------------------------------------------
// The feed is buffered and shown a card at a time at a pace one can follow; each shown
// moment is kept, so the viewer can step back and forth while the match runs, and catch
// up with it when they ask. A viewer who opens a running match starts where it stands.
//
// At the live edge (as a video player's "live"): while the table is within a trick of
// the match it plays at the pace, a little faster the more it has buffered; once it
// falls a whole trick behind (bots that answer at once play a trick between two of the
// server's beats) it skips to the last complete trick, from where the trick in progress
// plays on. A viewer who pauses or steps back leaves the edge: the table then plays on
// from where they are, and the badge says how far behind; one tap goes back to the edge.
const HOLD = { play: 1, trick: 2.2, dealt: 1.2, revealed: 1.5, scored: 2.5, match: 0.2, end: 1 };
// Where a skip to the edge may land: a complete trick, or a moment of the deal.
const BOUNDARY = new Set(["trick", "dealt", "revealed", "scored", "match"]);

function spectator(id, delayRounds) {
  const state = { seating: [], rules: {}, round: -1, dealer: -1, pain: [], plays: [], lastTrick: null, rounds: [], totals: null, events: 0, end: null, faults: [], forfeited: new Set(), tricksDone: 0 };
  const status = el("p", { id: "live-status", class: "muted", text: delayRounds ? `Connecting… (this league shows its matches ${delayRounds} round(s) behind)` : "Connecting…" });
  const tableBox = el("div", { class: "table-box" });
  const scores = el("div");
  const log = el("div", { class: "events", id: "events", tabindex: 0, role: "log", "aria-label": "what happened, newest first" });
  const notes = [];
  const frames = [];  // every moment that can be shown: {state, kind, hash, notes}
  let shown = -1, following = true, live = true, timer = null, joining = true, joinTimer = null, page = null, over = false, leaving = false, finished = null;
  let top = [], loggedNotes = -1, shownAt = 0;
  const listeners = new AbortController();
  const source = new EventSource(`/api/matches/${encodeURIComponent(id)}/live`);
  source.onmessage = (msg) => {
    const ev = JSON.parse(msg.data);
    state.events += 1;
    apply(ev);
    const replaced = keep(ev.type);
    if (replaced >= 0 && replaced === shown) completed = true;  // the trick shown is complete
    if (joinTimer === null) joinTimer = setTimeout(() => { joining = false; schedule(); }, 400);
    // The events of one of the server's beats come together: the table is drawn once for
    // them all, not once for each (bots that answer at once send dozens a second).
    if (!ticking) { ticking = true; setTimeout(tick, 30); }
  };
  let ticking = false, completed = false;
  function tick() {
    ticking = false;
    // What came in the first moments is the match so far: shown at once, where it stands.
    if (joining || shown < 0) { completed = false; show(frames.length - 1); return; }
    const before = shown;
    keepUp();
    if (completed && shown === before) { shownAt = performance.now(); show(shown); }
    completed = false;
    schedule();
    drawStatus();
  }
  source.addEventListener("close", () => {
    source.close(); over = true;
    if (!state.end) keepTableStill(tableBox, () => { status.textContent = "The stream ended."; });
    toReplay();
  });
  source.onerror = () => { if (state.end) source.close(); };

  function note(text) {
    notes.push(text);
  }
  // Keeps the moment an event makes; returns the index of a moment it replaced, or -1.
  function keep(kind) {
    if (!(kind in HOLD)) return -1;  // a fault shows with the card it caused
    const last = frames[frames.length - 1];
    const frame = { state: structuredClone(state), kind, hash: hashOf(kind), notes: notes.length, at: performance.now() };
    // The trick's winner joins its last card: one moment, not two.
    const card = kind === "play" || kind === "trick" ? 1 : 0;
    if (kind === "trick" && last && last.kind === "play") {
      frame.cards = last.cards;
      frames[frames.length - 1] = frame;
      return frames.length - 1;
    }
    frame.cards = (last ? last.cards : 0) + card;  // the cards up to here, for behind()
    frames.push(frame);
    return -1;
  }
  function hashOf(kind) {
    if (kind === "end") return "end";
    if (state.round < 0) return "";
    const r = state.round + 1;
    if (kind === "dealt") return `r${r}`;
    if (kind === "revealed") return state.pain.some((p) => p) ? `r${r}reveal` : `r${r}pick`;
    if (!state.plays.length) return `r${r}`;
    const t = state.lastTrick ? state.tricksDone : state.tricksDone + 1;
    return `r${r}t${t}c${state.plays.length}`;
  }
  function apply(ev) {
    const who = (s) => state.seating[s] ?? `seat ${s}`;
    if (ev.type === "match") {
      state.seating = ev.seating; state.rules = ev.rules;
      top = header({ match_id: ev.match_id, seating: ev.seating, rules: ev.rules, commitment: ev.commitment, challenge: ev.challenge }, true);
    } else if (ev.type === "dealt") {
      state.round = ev.round; state.dealer = ev.dealer; state.pain = state.seating.map(() => null);
      state.plays = []; state.lastTrick = null; state.running = null; state.taken = state.seating.map(() => []); state.tricksDone = 0;
      note(`Round ${ev.round + 1} dealt by ${who(ev.dealer)}`);
    } else if (ev.type === "revealed") {
      state.pain = ev.pain.map((p) => (p.length ? p : null));
      // The server scores what is public: nothing while the pain cards are secret.
      state.running = ev.scores || null;
      note(ev.pain.some((p) => p.length) ? "Pain cards revealed" : "Pain cards chosen (secret until the round is scored)");
    } else if (ev.type === "play") {
      if (state.lastTrick) { state.lastTrick = null; state.plays = []; }
      const fault = state.pendingFault && state.pendingFault.seat === ev.seat ? state.pendingFault : null;
      state.pendingFault = null;
      state.plays.push({ seat: ev.seat, card: ev.card, fault: fault ? `${who(fault.seat)}: ${fault.reason}` : null, faultWords: fault ? faultWords(fault.reason) : null, fallback: Boolean(fault) || state.forfeited.has(ev.seat) });
    } else if (ev.type === "trick") {
      state.lastTrick = ev;
      state.tricksDone += 1;
      state.plays = state.plays.length === ev.cards.length ? state.plays : ev.cards.map((c, i) => ({ seat: (ev.leader + i) % state.seating.length, card: c }));
      state.plays = state.plays.map((p, i) => ({ ...p, won: p.seat === ev.winner, points: ev.points ? ev.points[i] : null }));
      if (ev.scores) state.running = ev.scores;
      if (ev.points && state.taken) ev.cards.forEach((c, i) => state.taken[ev.winner].push([c, ev.points[i]]));
      note(`Trick ${state.tricksDone}: ${reasonText(ev, state.seating)}`);
    } else if (ev.type === "scored") {
      state.rounds[ev.round] = { scores: ev.scores };
      state.totals = ev.totals;
      state.running = null;
      state.pain = ev.pain.map((p) => (p.length ? p : null));
      note(`Round ${ev.round + 1} scored: ${ev.scores.map((v, s) => `${who(s)} ${signed(v)}`).join(", ")}`);
    } else if (ev.type === "fault") {
      state.pendingFault = ev;
      if (ev.forfeited) state.forfeited.add(ev.seat);
      note(`Fault: ${who(ev.seat)} ${faultWords(ev.reason)}, strike ${ev.strikes}${ev.forfeited ? ", forfeited" : ""}`);
    } else if (ev.type === "end") {
      state.end = ev;
      note(`Match over (${ev.reason})`);
    }
  }

  // -- stepping through what has come --
  const speed = el("select", { id: "speed", "aria-label": "pace", onchange: () => { speed.blur(); restart(); } },
    SPEEDS.map(([v, t]) => el("option", { value: v, text: t, selected: v === "1" ? "selected" : null })));
  const label = el("span", { class: "step", id: "live-label" });
  const announce = el("div", { class: "sr-only", id: "announce", role: "status", "aria-live": "polite", "aria-atomic": "true" });
  const button = stepButton;
  const playButton = button("play", "❚❚", "pause", "pause (space)", () => setFollowing(!following), "play");
  const catchUp = button("catch-up", "⇥", "live", "catch up: live (End)", () => goLive());
  const controls = el("div", { class: "controls live-controls", id: "controls" },
    el("div", { class: "more" }, el("label", { class: "speed" }, "pace ", speed)),
    el("div", { class: "stepbar", id: "stepbar", role: "toolbar", "aria-label": "step through the match so far" },
      el("div", { class: "scrub" }, label),
      el("div", { class: "steps" },
        button("prev-trick", "◀\uFE0E◀\uFE0E", "trick", "previous trick (↑)", () => stepTrick(-1)),
        button("prev", "◀\uFE0E", "card", "previous card (←)", () => step(-1)),
        playButton,
        button("next", "▶\uFE0E", "card", "next card (→)", () => step(1)),
        button("next-trick", "▶\uFE0E▶\uFE0E", "trick", "next trick (↓)", () => stepTrick(1)),
        catchUp)));
  // Back to the live edge, playing.
  function goLive() {
    live = true;
    setFollowing(true);
    show(frames.length - 1);
  }
  function setFollowing(on) {
    following = on;
    if (!on) live = false;
    playButton.firstChild.textContent = on ? "❚❚" : "▶\uFE0E";
    playButton.lastChild.textContent = on ? "pause" : "play";
    playButton.title = on ? "pause (space)" : "play on (space)";
    restart();
  }
  function restart() {
    clearTimeout(timer); timer = null;
    schedule();
  }
  // A step by hand pauses the pace: the viewer looks at that moment until they play on.
  function step(delta) {
    if (following) setFollowing(false);
    show(shown + delta);
  }
  function stepTrick(delta) {
    if (following) setFollowing(false);
    let i = shown;
    do { i += delta; } while (i > 0 && i < frames.length - 1 && frames[i].kind !== "trick");
    show(i);
  }
  // A trick's worth of cards: at the edge the table stays within it.
  const trickSize = () => Math.max(2, state.seating.length);
  // Fallen a trick behind at the edge: on to the last complete trick (or moment of the
  // deal), from where the trick in progress plays on.
  function keepUp() {
    if (!live || !following || leaving || shown < 0 || behind() < trickSize()) return;
    let i = frames.length - 1;
    while (i > shown && !BOUNDARY.has(frames[i].kind)) i -= 1;
    show(i > shown ? i : frames.length - 1);
  }
  // The next moment, once the one shown has been on screen long enough (at the live edge
  // a card that comes later than that shows as it comes; the more is buffered, the
  // shorter each is held).
  function schedule() {
    keepUp();
    if (!following || timer !== null || leaving || shown >= frames.length - 1) return;
    const hurry = live ? 1 + behind() / Math.max(1, trickSize() / 2) : 1;
    const wait = shownAt + (HOLD[frames[shown].kind] * CARD_MS) / Number(speed.value) / hurry - performance.now();
    timer = setTimeout(() => {
      timer = null;
      if (following) { show(shown + 1); schedule(); }
    }, Math.max(0, wait));
  }
  function show(i) {
    if (!frames.length) return;
    const next = Math.max(0, Math.min(frames.length - 1, i));
    if (next !== shown) shownAt = performance.now();
    shown = next;
    if (following && shown === frames.length - 1) live = true;  // played up to the edge
    draw(frames[shown]);
    const hash = frames[shown].hash;
    if (hash && location.hash !== `#${hash}`) history.replaceState(null, "", `#${hash}`);
    if (finished && shown >= frames.length - 1) toViewer(false);
  }
  const behind = () => (shown < 0 || !frames.length ? 0 : frames[frames.length - 1].cards - frames[shown].cards);

  // At the edge: following it, within the trick in progress.
  const atEdge = () => live && following && behind() < trickSize();
  // How far behind, in words: tricks (or cards) and the seconds since the next moment came.
  function lagWords() {
    const late = behind();
    const tricks = Math.floor(late / trickSize());
    const secs = shown + 1 < frames.length ? (performance.now() - frames[shown + 1].at) / 1000 : 0;
    const amount = tricks >= 1 ? `${tricks} trick${tricks > 1 ? "s" : ""}` : `${late} card${late === 1 ? "" : "s"}`;
    return `${amount}${secs >= 1 ? `, ${Math.round(secs)} s` : ""} behind`;
  }
  // The status line and the badge, above the table: while they change (a line more, the
  // badge turned into a button) the table stays where the viewer watches it.
  function drawStatus() {
    if (shown >= 0) keepTableStill(tableBox, writeStatus);
  }
  function writeStatus() {
    const st = frames[shown].state;
    const late = behind();
    const edge = atEdge();
    const trickNo = st.plays.length ? (st.lastTrick ? st.tricksDone : st.tricksDone + 1) : 0;
    const where = `round ${st.round + 1}${trickNo ? ` · trick ${trickNo}` : ""}`;
    if (st.end) {
      status.textContent = st.end.reason === "completed"
        ? `Finished. Seed ${st.end.seed} (check it against the commitment). Opening the replay with every hand…`
        : `The match ended: ${st.end.reason}.`;
      status.dataset.over = "1";
    } else if (st.round < 0) {
      status.textContent = delayRounds ? `Waiting: this league shows its matches ${delayRounds} round(s) behind; the first round appears once round ${delayRounds + 1} is dealt.` : "Waiting for the deal…";
    } else if (over) {
      status.replaceChildren(`The match is over; shown: ${where}${late ? ` · ${late} card(s) to its end` : ""} · `,
        finished ? el("button", { id: "replay-here", class: "link", onclick: () => toViewer(true), text: "open the replay with every hand here" }) : "the replay is being fetched…");
    } else {
      status.textContent = `${edge ? "Live" : "Behind"} · ${where}${delayRounds ? ` · ${delayRounds} round(s) behind the play` : ""}${late ? ` · ${late} card(s) behind the match` : ""}`;
    }
    status.dataset.events = String(st.events);
    status.dataset.behind = String(late);
    status.dataset.live = edge ? "1" : "0";
    label.textContent = st.round < 0 ? "waiting" : `Round ${st.round + 1}${trickNo ? ` · trick ${trickNo} · card ${st.plays.length} / ${st.seating.length}` : " · the deal"}${edge ? " · live" : ` · ${late} behind`}`;
    catchUp.disabled = edge || !late;
    drawBadge(edge && !st.end);
  }
  // The badge in the title: "live" at the edge; else how far behind, a tap back to it.
  function drawBadge(edge) {
    const badge = document.getElementById("live-badge");
    if (!badge || over) return;
    const text = edge ? "live" : `${lagWords()} · go live`;
    if (badge.textContent === text) return;
    const next = edge ? el("span", { class: "pill live", id: "live-badge", text })
      : el("button", { class: "pill behind", id: "live-badge", title: "back to the live edge (End)", onclick: () => goLive(), text });
    badge.replaceWith(next);
  }
  function draw(frame) {
    const st = frame.state;
    const n = st.seating.length;
    if (!n) { fill(main, status); return; }
    const complete = Boolean(st.lastTrick);
    const toPlay = !complete && st.plays.length ? (st.plays[0].seat + st.plays.length) % n : -1;
    const panels = st.seating.map((name, s) => seatPanel(s, name, {
      dealer: st.dealer === s,
      leads: st.plays.length ? st.plays[0].seat === s : false,
      toPlay: toPlay === s,
      forfeited: st.forfeited.has(s) ? "forfeited" : null,
      round: st.running ? st.running[s] : null,
      total: st.running ? (st.totals ? st.totals[s] : 0) + st.running[s] : null,
      pain: st.pain[s] || [],
      taken: st.running && st.taken ? st.taken[s] : null,
      handNote: `hand hidden${!st.running && st.totals ? ` · match ${signed(st.totals[s])}` : ""}`,
    }));
    let lines = "";
    if (complete) lines = [el("div", {}, reasonLine(st.lastTrick, st.seating))];
    else if (st.plays.length) {
      const lead = st.plays[0].card[0];
      lines = [el("div", {}, "Lead suit ", el("span", { class: `suit-${lead} lead-suit`, text: `${SUITS[lead][0]} ${suitName(lead)}` }), toPlay >= 0 ? ` · ${st.seating[toPlay]} to play` : "")];
    }
    const trickNo = st.plays.length ? (st.lastTrick ? st.tricksDone : st.tricksDone + 1) : 0;
    tableBox.replaceChildren(table(panels, trickArea(st.plays, st.seating, lines,
      { "data-round": st.round, "data-trick": trickNo - 1, "data-events": st.events }), n));
    const rows = [];
    st.rounds.forEach((x, i) => { if (x) rows.push({ label: String(i + 1), values: x.scores }); });
    if (st.totals) rows.push({ label: "Match", values: st.totals, head: true });
    scores.replaceChildren(el("h2", { text: "Scores per round" }), rows.length ? scoreTable(st.seating, rows) : el("p", { class: "muted", text: "No round scored yet." }));
    if (loggedNotes >= 0 && frame.notes > loggedNotes && frame.notes - loggedNotes <= 20) {
      // A few more: put on top (the list is not built again for every moment).
      log.prepend(...notes.slice(loggedNotes, frame.notes).reverse().map((t) => el("div", { text: t })));
      while (log.childElementCount > 200) log.lastElementChild.remove();
      loggedNotes = frame.notes;
    } else if (loggedNotes !== frame.notes) {
      loggedNotes = frame.notes;
      log.replaceChildren(...notes.slice(Math.max(0, frame.notes - 200), frame.notes).reverse().map((t) => el("div", { text: t })));
    }
    if (frame.kind === "play" || frame.kind === "trick") {
      const p = st.plays[st.plays.length - 1];
      announce.textContent = `${st.seating[p.seat]} plays ${p.card.slice(1)} of ${suitName(p.card[0])}.${complete ? ` ${st.lastTrick.winner < 0 ? "Nobody wins" : `${st.seating[st.lastTrick.winner]} wins`} the trick.` : ""}`;
    } else announce.textContent = notes[frame.notes - 1] || "";
    drawStatus();
    if (!page) {
      page = true;
      const links = el("div", { class: "links" }, el("span", { class: "muted keys", text: "keys: ← → card · ↑ ↓ trick · space pause / play on · End catch up · " }),
        el("span", { class: "muted swipe", text: "swipe the table sideways for the next or previous card" }));
      fill(main, ...top, status, el("div", { class: "viewer" }, controls, announce, tableBox, links, scores, el("h2", { text: "What happened" }), log));
      document.body.classList.add("stepping");
      document.addEventListener("keydown", (e) => {
        if (e.altKey || e.ctrlKey || e.metaKey) return;
        const t = e.target;
        if (t instanceof HTMLSelectElement && !["ArrowLeft", "ArrowRight"].includes(e.key)) return;
        if (t instanceof HTMLInputElement && t.type !== "checkbox") return;
        if (e.key === " " && t instanceof Element && t.closest("button, a, input, select, summary")) return;
        const keys = {
          ArrowRight: () => step(1), ArrowLeft: () => step(-1), ArrowDown: () => stepTrick(1), ArrowUp: () => stepTrick(-1),
          " ": () => setFollowing(!following), End: () => goLive(),
        };
        if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
      }, { signal: listeners.signal });
      swipeToStep(tableBox, (d) => step(d), listeners.signal);
    } else seatIntoView(tableBox);  // once the status above the table is written
  }
  // Once the match is over, the replay (with every hand) replaces the live table when the
  // viewer has seen the end (at once for one who kept up, or by catching up), or where
  // they are when they ask for it.
  function toViewer(here) {
    if (leaving) return;
    leaving = true;
    clearTimeout(timer);
    listeners.abort();
    if (!here || !location.hash) history.replaceState(null, "", "#end");
    viewer(finished, id, { speed: speed.value });
  }
  async function toReplay() {
    for (let i = 0; i < 40; i += 1) {
      const s = await api(`/api/matches/${encodeURIComponent(id)}/state`).catch(() => null);
      if (s && s.state === "finished") {
        finished = await api(`/api/matches/${encodeURIComponent(id)}`);
        if (shown >= frames.length - 1) toViewer(false);
        else drawStatus();
        return;
      }
      if (s && s.state !== "running") break;
      await new Promise((resolve) => { setTimeout(resolve, 250 + 50 * i); });
    }
    keepTableStill(tableBox, () => status.append(" ", el("a", { href: location.pathname + location.search, text: "open the replay" })));
  }
  fill(main, status);
}

// On a phone the seat to play stays on the screen (eight seats do not fit beside the
// trick, which stays at the top): the page scrolls it into view, clear of the trick and of
// the step bar at the bottom, while the table is on the screen (a reader further down the
// page is left there).
function seatIntoView(box) {
  const bottom = phoneTableShown(box);
  const seat = box.querySelector(".seat.to-play");
  if (bottom === null || !seat) return;
  const felt = box.querySelector(".felt");
  const top = felt && getComputedStyle(felt).position === "sticky" ? Math.max(0, felt.getBoundingClientRect().bottom) : 0;
  const r = seat.getBoundingClientRect();
  if (r.top < top) window.scrollBy(0, r.top - top - 6);
  else if (r.bottom > bottom) window.scrollBy(0, r.bottom - bottom + 6);
}

// On a phone with the table on the screen: where the screen ends above the step bar; else null.
function phoneTableShown(box) {
  if (!window.matchMedia("(max-width: 600px)").matches) return null;
  const table = box.querySelector(".table-felt");
  if (!table) return null;
  const bar = document.getElementById("stepbar");
  const bottom = bar && getComputedStyle(bar).position === "fixed" ? bar.getBoundingClientRect().top : window.innerHeight;
  const t = table.getBoundingClientRect();
  return t.bottom <= 0 || t.top >= bottom ? null : bottom;
}

// `change` alters what is above the table (a live match's status line and badge, which
// grow by a line or two as the viewer steps back, falls behind or the match ends): on a
// phone with the table on the screen, the page scrolls by as much as the table moved, so
// that the seats stay put under the viewer's eyes (the seat to play was on the screen, and
// stays on it, never slid under the step bar or the trick).
function keepTableStill(box, change) {
  const before = phoneTableShown(box) === null ? null : box.getBoundingClientRect().top;
  change();
  if (before === null) return;
  const moved = box.getBoundingClientRect().top - before;
  if (Math.abs(moved) >= 0.5) window.scrollBy(0, moved);
}

// A sideways swipe on `box` steps a card (right to left: the next), as a finger turns a page.
function swipeToStep(box, step, signal) {
  let touch = null;
  box.addEventListener("touchstart", (e) => { touch = e.touches.length === 1 ? [e.touches[0].clientX, e.touches[0].clientY] : null; }, { passive: true, signal });
  box.addEventListener("touchend", (e) => {
    if (!touch || e.changedTouches.length !== 1) return;
    const dx = e.changedTouches[0].clientX - touch[0], dy = e.changedTouches[0].clientY - touch[1];
    touch = null;
    if (Math.abs(dx) >= 40 && Math.abs(dx) > 2 * Math.abs(dy)) step(dx < 0 ? 1 : -1);
  }, { passive: true, signal });
}

const id = query("id");
// The match's state (written in the page by the server) and its document are asked for at
// once, beside the header's: no request waits for another.
const state = main.dataset.state;
const docRequest = id && state === "finished" ? api(`/api/matches/${encodeURIComponent(id)}`) : null;
if (docRequest) docRequest.catch(() => null);  // its error is shown below
const info = await frame("Match · Sticheln referee");
if (!id) showError(main, new Error("no match named: add ?id=MATCH to the address"));
else {
  document.title = `${id} · Sticheln referee`;
  try {
    // Without the server's word (a bare page), the state is asked for: no refused request.
    const now = state || (await api(`/api/matches/${encodeURIComponent(id)}/state`)).state;
    if (now === "running") spectator(id, info ? info.delay_rounds || 0 : 0);
    else viewer(await (docRequest || api(`/api/matches/${encodeURIComponent(id)}`)), id);
  } catch (e) {
    showError(main, e);
  }
}
