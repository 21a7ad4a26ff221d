// The card table. A finished match is stepped card by card from its record (every hand,
// the pain cards, each trick's winner and reason, and the running scores the server
// computed with the rules engine); a running match is followed live from its public feed
// (cards as they are played, pain cards once revealed, never a hand) and becomes the
// replay by itself when it ends.
import { api, el, botLink, frame, showError, query, card, signed, SUITS, fill } from "/static/common.js";
import { reasonLine, reasonText, seatPanel, suitLegend, suitName, table, trickArea } from "/static/table.js";

const main = document.getElementById("main");
const SPEEDS = [["0.5", "½×"], ["1", "1×"], ["2", "2×"], ["4", "4×"]];
const CARD_MS = 700;

function header(doc, live) {
  const rules = doc.rules || {};
  const secret = rules.pain_visibility === "secret" || rules.pain_visibility === "PAIN_VISIBILITY_SECRET";
  return [
    el("h1", {}, `Match ${doc.match_id} `, live ? el("span", { class: "pill live", id: "live-badge", text: "live" }) : null),
    el("p", { class: "seating" }, doc.seating.flatMap((b, s) => [s ? " · " : "", `seat ${s}: `, botLink(b)])),
    el("p", { class: "muted" }, `rules ${rules.preset || "?"}${secret ? ", secret pain cards" : ""} (`,
      el("a", { href: "/rules", text: "how a trick is won and a round scored" }),
      `) · commitment ${(doc.commitment || "").slice(0, 16)}…${doc.seed ? ` · seed ${doc.seed}` : ""}`),
  ];
}

function result(doc) {
  if (!doc.end || !doc.end.places || !doc.end.places.length) return doc.end ? el("p", { id: "result", text: `Ended: ${doc.end.reason}` }) : null;
  const order = doc.seating.map((_, s) => s).sort((a, b) => doc.end.places[a] - doc.end.places[b]);
  return el("p", { id: "result" }, "Result: ", order.flatMap((s, i) => [i ? ", " : "", `${doc.end.places[s]}. `, botLink(doc.seating[s]), ` ${signed(doc.end.totals[s])}`]));
}

function scoreTable(seating, rows) {
  const head = el("tr", {}, el("th", { class: "text", text: "Round" }), seating.map((b) => el("th", { class: "text", text: b })));
  return el("div", { class: "table-wrap" }, el("table", { class: "scoretable", id: "scores" }, el("thead", {}, head),
    el("tbody", {}, rows.map((r) => el("tr", { class: r.cls || null, "data-round": r.round ?? null },
      el(r.head ? "th" : "td", { class: "text", text: r.label }), r.values.map((v) => el(r.head ? "th" : "td", { text: signed(v) })))))));
}

function suitsOf(cards) {
  return Object.keys(SUITS).filter((s) => cards.some((c) => c[0] === s));
}

// -- a finished match ----------------------------------------------------------------------
function viewer(doc, id) {
  const n = doc.seating.length;
  const seating = doc.seating;
  const kept = String((doc.rules || {}).pain_card || "") === "kept_in_hand";
  // Every position: a round's deal (t = -1), then each card of each trick (c = 1..).
  const steps = [];
  doc.rounds.forEach((r, ri) => {
    steps.push({ r: ri, t: -1, c: 0 });
    r.tricks.forEach((tr, ti) => tr.cards.forEach((_, ci) => steps.push({ r: ri, t: ti, c: ci + 1 })));
  });
  const indexOf = (r, t, c) => steps.findIndex((s) => s.r === r && s.t === t && s.c === c);
  // A fault is shown from the card it caused (or the deal, for one in the pain choice).
  const faults = [];
  doc.rounds.forEach((r, ri) => r.faults.forEach((f) => {
    let at = f.card === null || f.card === undefined ? indexOf(ri, -1, 0) : indexOf(ri, f.trick, f.card + 1);
    if (at < 0) at = steps.findLastIndex((s) => s.r === ri);  // after the round's last card
    faults.push({ ...f, round: ri, at });
  }));
  const forfeitAt = seating.map((_, s) => {
    const f = faults.find((x) => x.seat === s && x.forfeited);
    if (f) return f.at;
    return doc.end && (doc.end.forfeited || []).includes(s) ? 0 : Infinity;
  });
  const legend = suitLegend(suitsOf(doc.rounds.flatMap((r) => r.hands.flat())));
  let at = 0, timer = null;
  const tableBox = el("div", { class: "table-box" });
  const label = el("span", { class: "step", id: "step-label", "aria-live": "polite" });
  const scrubber = el("input", { type: "range", id: "scrubber", min: 0, max: steps.length - 1, value: 0, step: 1, "aria-label": "position in the match",
    oninput: () => go(Number(scrubber.value)) });
  const roundSelect = el("select", { id: "round-select", "aria-label": "jump to round", onchange: () => go(indexOf(Number(roundSelect.value), -1, 0)) },
    doc.rounds.map((r, i) => el("option", { value: i, text: `Round ${i + 1}` })));
  const speed = el("select", { id: "speed", "aria-label": "play speed", onchange: () => { if (timer) { toggle(); toggle(); } } },
    SPEEDS.map(([v, t]) => el("option", { value: v, text: t, selected: v === "1" ? "selected" : null })));
  const playButton = el("button", { id: "play", title: "play / pause (space)", onclick: () => toggle(), text: "▶ play" });
  const scores = el("div");
  const faultList = el("div", { class: "events", id: "faults" });
  const button = (bid, text, title, fn) => el("button", { id: bid, title, "aria-label": title, onclick: fn, text });
  const controls = el("div", { class: "controls" },
    el("div", { class: "buttons" },
      button("first", "⇤", "the first card (Home)", () => go(0)),
      button("prev-round", "«", "previous round (Page Up)", () => jumpRound(-1)),
      button("prev-trick", "‹‹", "previous trick (↑)", () => jumpTrick(-1)),
      button("prev", "‹", "previous card (←)", () => go(at - 1)),
      playButton,
      button("next", "›", "next card (→)", () => go(at + 1)),
      button("next-trick", "››", "next trick (↓)", () => jumpTrick(1)),
      button("next-round", "»", "next round (Page Down)", () => jumpRound(1)),
      button("last", "⇥", "the last card (End)", () => go(steps.length - 1)),
      el("label", { class: "speed" }, "speed ", speed), roundSelect),
    el("div", { class: "scrub" }, scrubber, label),
    el("div", { class: "links" },
      el("a", { href: `#${hashOf(0)}`, id: "permalink", text: "link to this moment" }), " · ",
      el("a", { href: `/api/matches/${encodeURIComponent(id)}/record.jsonl`, download: `${id}.jsonl`, id: "download", text: "download the record" })));

  function hashOf(i) {
    const { r, t, c } = steps[i];
    return t < 0 ? `r${r + 1}` : `r${r + 1}t${t + 1}c${c}`;
  }
  function parseHash(hash) {
    if (hash === "#end") return steps.length - 1;
    const m = /^#?r(\d+)(?:t(\d+)(?:c(\d+))?)?$/.exec(hash || "");
    if (!m) return -1;
    const r = Number(m[1]) - 1;
    if (!doc.rounds[r]) return -1;
    if (m[2] === undefined) return indexOf(r, -1, 0);
    const t = Math.min(Number(m[2]), doc.rounds[r].tricks.length) - 1;
    if (t < 0) return indexOf(r, -1, 0);
    const size = doc.rounds[r].tricks[t].cards.length;
    const c = m[3] === undefined ? size : Math.max(1, Math.min(Number(m[3]), size));
    return indexOf(r, t, c);
  }
  function jumpRound(delta) {
    const { r, t } = steps[at];
    // Back from inside a round goes to its deal first.
    const target = delta < 0 && t >= 0 ? r : Math.max(0, Math.min(doc.rounds.length - 1, r + delta));
    go(indexOf(target, -1, 0));
  }
  function jumpTrick(delta) {
    // To the last card of the next trick (the trick complete), or of the previous one.
    const { r, t } = steps[at];
    let i = at;
    if (delta > 0) {
      i = steps.findIndex((s, k) => k > at && (s.r > r || s.t > t) && (s.t < 0 || s.c === doc.rounds[s.r].tricks[s.t].cards.length));
      if (i < 0) i = steps.length - 1;
    } else {
      i = steps.findLastIndex((s, k) => k < at && (s.r < r || s.t < t) && (s.t < 0 || s.c === doc.rounds[s.r].tricks[s.t].cards.length));
      if (i < 0) i = 0;
    }
    go(i);
  }
  function toggle() {
    if (timer) { clearInterval(timer); timer = null; playButton.textContent = "▶ play"; return; }
    if (at >= steps.length - 1) go(0);
    playButton.textContent = "⏸ pause";
    timer = setInterval(() => { if (at >= steps.length - 1) toggle(); else go(at + 1); }, CARD_MS / Number(speed.value));
  }
  function go(i, { keepHash = false } = {}) {
    at = Math.max(0, Math.min(steps.length - 1, i));
    draw();
    const hash = hashOf(at);
    if (!keepHash && location.hash !== `#${hash}`) history.replaceState(null, "", `#${hash}`);
  }
  function taken(round, upto) {
    const out = seating.map(() => []);
    round.tricks.slice(0, upto).forEach((tr) => {
      if (tr.winner >= 0) tr.cards.forEach((c, i) => out[tr.winner].push([c, tr.points[i]]));
    });
    return out;
  }
  function draw() {
    const { r, t, c } = steps[at];
    const round = doc.rounds[r];
    const trick = t >= 0 ? round.tricks[t] : null;
    const complete = trick ? c === trick.cards.length : false;
    const lastTrick = trick && t === round.tricks.length - 1;
    const done = t < 0 ? 0 : (complete ? t + 1 : t);  // tricks taken by now
    const running = done ? round.tricks[done - 1].scores_after : round.scores_start;
    const painSet = round.pain.map((p) => new Set(p));
    // The hands: as dealt at the deal; later, after the pain pick and the cards played.
    let hands;
    if (t < 0) hands = round.hands;
    else {
      const before = t > 0 ? round.tricks[t - 1].hands_after : round.hands.map((h, s) => (kept ? h : h.filter((x) => !painSet[s].has(x))));
      const played = new Set(trick.cards.slice(0, c).map((x, i) => `${(trick.leader + i) % n}:${x}`));
      hands = before.map((h, s) => h.filter((x) => !played.has(`${s}:${x}`)));
    }
    const visibleFaults = faults.filter((f) => f.at <= at);
    const faultHere = faults.filter((f) => f.at === at);
    let toPlay = -1, leads = -1;
    if (t < 0) leads = round.tricks.length ? round.tricks[0].leader : -1;
    else if (!complete) { toPlay = (trick.leader + c) % n; leads = trick.leader; }
    else if (!lastTrick) leads = round.tricks[t + 1].leader;
    const takenNow = taken(round, done);
    const panels = seating.map((name, s) => seatPanel(s, name, {
      dealer: round.dealer === s,
      leads: leads === s,
      toPlay: toPlay === s ? (trick.cards.length && c === 0 ? "to lead" : "to play") : false,
      forfeited: forfeitAt[s] <= at ? "forfeited: the referee plays its cards" : null,
      round: running[s],
      total: round.totals_before[s] + running[s],
      pain: round.pain[s],
      painPoints: round.pain_points[s],
      taken: takenNow[s],
      hand: hands[s].map((x) => card(x, `small${t < 0 && painSet[s].has(x) ? " pain" : ""}`)),
    }));
    let plays = [], lines = [];
    if (trick) {
      const recorded = trick.plays.length ? trick.plays : trick.cards.map((x, i) => ({ seat: (trick.leader + i) % n, card: x }));
      plays = recorded.slice(0, c).map((p, i) => {
        const f = faults.find((x) => x.round === r && x.trick === t && x.card === i && x.seat === p.seat)
          || faults.find((x) => x.round === r && x.trick === t && x.card === i);
        return { ...p, won: complete && p.seat === trick.winner,
          points: complete && trick.points ? trick.points[i] : null,
          fault: f ? `${seating[f.seat]}: ${f.reason}${f.detail ? ` (${f.detail})` : ""}` : null };
      });
      const lead = trick.cards[0][0];
      if (complete) {
        lines = [el("div", {}, reasonLine(trick, seating)),
          el("div", { class: "sub", text: trick.winner >= 0 ? `${seating[trick.winner]} takes ${signed(trick.points.reduce((a, b) => a + b, 0))} (its pain suit${round.pain_suits[trick.winner].length > 1 ? "s" : ""}: ${round.pain_suits[trick.winner].map(suitName).join(", ") || "–"})` : "The cards are set aside; the same seat leads again." })];
        if (lastTrick && round.scores) lines.push(el("div", { class: "sub", text: `Round ${r + 1} scored: ${round.scores.map((v, s) => `${seating[s]} ${signed(v)}`).join(", ")}` }));
      } else {
        lines = [el("div", {}, "Lead suit ", el("span", { class: `suit-${lead} lead-suit`, text: `${SUITS[lead][0]} ${suitName(lead)}` }), ` · ${seating[toPlay]} to play`)];
      }
    } else {
      lines = [el("div", { text: `Round ${r + 1} dealt by ${seating[round.dealer]}; pain cards ${kept ? "chosen (kept in the hand)" : "chosen and set aside"}` }),
        leads >= 0 ? el("div", { class: "sub", text: `${seating[leads]} leads the first trick` }) : null];
    }
    lines.push(...faultHere.map((f) => el("div", { class: "fault-line", text: `⚠ ${seating[f.seat]}: ${f.reason}, strike ${f.strikes}${f.forfeited ? " — forfeited" : ""}` })));
    tableBox.replaceChildren(table(panels, trickArea(plays, seating, lines, { "data-round": r, "data-trick": t, "data-card": c }), n));
    label.textContent = t < 0 ? `Round ${r + 1} · the deal` : `Round ${r + 1} · trick ${t + 1} / ${round.tricks.length} · card ${c} / ${trick.cards.length}`;
    roundSelect.value = String(r);
    scrubber.value = String(at);
    controls.querySelector("#permalink").setAttribute("href", `#${hashOf(at)}`);
    const rows = [];
    doc.rounds.forEach((x, i) => {
      if (i < r && x.scores) rows.push({ label: String(i + 1), values: x.scores, round: i });
    });
    const finished = lastTrick && complete && round.scores;
    rows.push({ label: finished ? String(r + 1) : `${r + 1} so far`, values: running, cls: "cur", round: r });
    rows.push({ label: "Match", values: round.totals_before.map((v, s) => v + running[s]), head: true });
    scores.replaceChildren(el("h2", { text: "Scores" }), scoreTable(seating, rows));
    faultList.replaceChildren(...(visibleFaults.length ? visibleFaults.map((f) => el("div", { text: `Round ${f.round + 1}${f.card === null || f.card === undefined ? ", pain choice" : `, trick ${f.trick + 1}`}: ${seating[f.seat]} ${f.reason}${f.detail ? ` (${f.detail})` : ""}, strike ${f.strikes}${f.forfeited ? ", forfeited" : ""}` }))
      : [el("div", { class: "muted", text: "No fault so far." })]));
  }
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLSelectElement || e.target instanceof HTMLInputElement || e.altKey || e.ctrlKey || e.metaKey) return;
    const keys = {
      ArrowRight: () => go(at + 1), ArrowLeft: () => go(at - 1),
      ArrowDown: () => jumpTrick(1), ArrowUp: () => jumpTrick(-1),
      PageDown: () => jumpRound(1), PageUp: () => jumpRound(-1),
      Home: () => go(0), End: () => go(steps.length - 1), " ": () => toggle(),
    };
    if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
  });
  window.addEventListener("hashchange", () => { const i = parseHash(location.hash); if (i >= 0 && i !== at) go(i, { keepHash: true }); });
  fill(main, ...header(doc, false), result(doc),
    el("div", { class: "viewer" }, controls, legend, tableBox, scores, el("h2", { text: "Faults" }), faultList));
  go(Math.max(0, parseHash(location.hash)));
}

// -- a running match, live -------------------------------------------------------------------
function spectator(id, delayRounds) {
  const state = { seating: [], rules: {}, round: -1, dealer: -1, pain: [], plays: [], lastTrick: null, rounds: [], totals: null, events: 0, end: null, faults: [], forfeited: new Set(), playsSeen: 0 };
  const status = el("p", { id: "live-status", class: "muted", text: delayRounds ? `Connecting… (this league shows its matches ${delayRounds} round(s) behind)` : "Connecting…" });
  const tableBox = el("div", { class: "table-box" });
  const scores = el("div");
  const log = el("div", { class: "events", id: "events" });
  let top = [];
  const source = new EventSource(`/api/matches/${encodeURIComponent(id)}/live`);
  source.onmessage = (msg) => {
    const ev = JSON.parse(msg.data);
    state.events += 1;
    apply(ev);
    draw();
  };
  source.addEventListener("close", () => { source.close(); if (!state.end) status.textContent = "The stream ended."; toReplay(); });
  source.onerror = () => { if (state.end) source.close(); };

  function note(text) {
    log.prepend(el("div", { text }));
  }
  function apply(ev) {
    const who = (s) => state.seating[s] ?? `seat ${s}`;
    if (ev.type === "match") {
      state.seating = ev.seating; state.rules = ev.rules;
      top = header({ match_id: ev.match_id, seating: ev.seating, rules: ev.rules, commitment: ev.commitment }, true);
    } else if (ev.type === "dealt") {
      state.round = ev.round; state.dealer = ev.dealer; state.pain = state.seating.map(() => null);
      state.plays = []; state.lastTrick = null;
      note(`Round ${ev.round + 1} dealt by ${who(ev.dealer)}`);
    } else if (ev.type === "revealed") {
      state.pain = ev.pain.map((p) => (p.length ? p : null));
      note(ev.pain.some((p) => p.length) ? "Pain cards revealed" : "Pain cards chosen (secret until the round is scored)");
    } else if (ev.type === "play") {
      if (state.lastTrick) { state.lastTrick = null; state.plays = []; }
      const fault = state.pendingFault && state.pendingFault.seat === ev.seat ? state.pendingFault : null;
      state.pendingFault = null;
      state.plays.push({ seat: ev.seat, card: ev.card, fault: fault ? `${who(fault.seat)}: ${fault.reason}` : null, fallback: Boolean(fault) || state.forfeited.has(ev.seat) });
    } else if (ev.type === "trick") {
      state.lastTrick = ev;
      state.plays = state.plays.length === ev.cards.length ? state.plays : ev.cards.map((c, i) => ({ seat: (ev.leader + i) % state.seating.length, card: c }));
      state.plays = state.plays.map((p) => ({ ...p, won: p.seat === ev.winner }));
      note(reasonText(ev, state.seating));
    } else if (ev.type === "scored") {
      state.rounds[ev.round] = { scores: ev.scores };
      state.totals = ev.totals;
      state.pain = ev.pain.map((p) => (p.length ? p : null));
      note(`Round ${ev.round + 1} scored: ${ev.scores.map((v, s) => `${who(s)} ${signed(v)}`).join(", ")}`);
    } else if (ev.type === "fault") {
      state.pendingFault = ev;
      if (ev.forfeited) state.forfeited.add(ev.seat);
      note(`Fault: ${who(ev.seat)} ${ev.reason}, strike ${ev.strikes}${ev.forfeited ? ", forfeited" : ""}`);
    } else if (ev.type === "end") {
      state.end = ev;
      note(`Match over (${ev.reason})`);
    }
  }
  function draw() {
    const n = state.seating.length;
    if (!n) return;
    const complete = Boolean(state.lastTrick);
    const toPlay = !complete && state.plays.length ? (state.plays[0].seat + state.plays.length) % n : -1;
    const panels = state.seating.map((name, s) => seatPanel(s, name, {
      dealer: state.dealer === s,
      leads: state.plays.length ? state.plays[0].seat === s : false,
      toPlay: toPlay === s,
      forfeited: state.forfeited.has(s) ? "forfeited" : null,
      total: null,
      round: null,
      pain: state.pain[s] || [],
      handNote: `hand hidden${state.totals ? ` · match ${signed(state.totals[s])}` : ""}`,
    }));
    let lines = "";
    if (complete) lines = [el("div", {}, reasonLine(state.lastTrick, state.seating))];
    else if (state.plays.length) {
      const lead = state.plays[0].card[0];
      lines = [el("div", {}, "Lead suit ", el("span", { class: `suit-${lead} lead-suit`, text: `${SUITS[lead][0]} ${suitName(lead)}` }), toPlay >= 0 ? ` · ${state.seating[toPlay]} to play` : "")];
    }
    tableBox.replaceChildren(table(panels, trickArea(state.plays, state.seating, lines, { "data-round": state.round, "data-events": state.events }), n));
    const rows = [];
    state.rounds.forEach((x, i) => { if (x) rows.push({ label: String(i + 1), values: x.scores }); });
    if (state.totals) rows.push({ label: "Match", values: state.totals, head: true });
    scores.replaceChildren(el("h2", { text: "Scores per round" }), rows.length ? scoreTable(state.seating, rows) : el("p", { class: "muted", text: "No round scored yet." }));
    if (state.end) {
      status.textContent = state.end.reason === "completed"
        ? `Finished. Seed ${state.end.seed} (check it against the commitment). Opening the replay with every hand…`
        : `The match ended: ${state.end.reason}.`;
      status.dataset.over = "1";
    } else if (state.round < 0) {
      status.textContent = delayRounds ? `Waiting: this league shows its matches ${delayRounds} round(s) behind; the first round appears once round ${delayRounds + 1} is dealt.` : "Waiting for the deal…";
    } else {
      status.textContent = `Live · round ${state.round + 1}${delayRounds ? ` · shown ${delayRounds} round(s) behind` : ""}`;
    }
    status.dataset.events = String(state.events);
    fill(main, ...top, status, el("div", { class: "viewer" }, tableBox, scores, el("h2", { text: "What happened" }), log));
  }
  // At the end, the replay (with every hand) replaces the live table, at its last card.
  async function toReplay() {
    for (let i = 0; i < 40; i += 1) {
      const s = await api(`/api/matches/${encodeURIComponent(id)}/state`).catch(() => null);
      if (s && s.state === "finished") {
        const doc = await api(`/api/matches/${encodeURIComponent(id)}`);
        if (!location.hash) history.replaceState(null, "", "#end");
        viewer(doc, id);
        return;
      }
      if (s && s.state !== "running") break;
      await new Promise((resolve) => { setTimeout(resolve, 250 + 50 * i); });
    }
    status.append(" ", el("a", { href: location.pathname + location.search, text: "open the replay" }));
  }
  fill(main, status);
}

const info = await frame("Match · Sticheln referee");
const id = query("id");
if (!id) showError(main, new Error("no match named: add ?id=MATCH to the address"));
else {
  document.title = `${id} · Sticheln referee`;
  try {
    // The server says in the page whether the match still runs: no refused request.
    const state = main.dataset.state || (await api(`/api/matches/${encodeURIComponent(id)}/state`)).state;
    if (state === "running") spectator(id, info ? info.delay_rounds || 0 : 0);
    else viewer(await api(`/api/matches/${encodeURIComponent(id)}`), id);
  } catch (e) {
    showError(main, e);
  }
}
