// The card table. A finished match is stepped through trick by trick from its record
// (every hand, the pain cards, each trick's winner and reason, the scores per round); a
// running match is followed live from its public feed (cards as they are played, pain
// cards once revealed, never a hand).
import { api, el, fmt, botLink, frame, showError, query, card } from "/static/common.js";

const main = document.getElementById("main");

const REASONS = {
  off_suit_highest: "highest card of a suit other than the lead suit",
  off_suit_last_suit: "highest card of the off-suit played last",
  lead_suit_highest: "highest card of the lead suit",
  all_zero: "only zeros: set aside, nobody wins",
};

function reasonText(trick, seating) {
  const why = REASONS[trick.reason] || trick.reason;
  if (trick.winner < 0) return `Nobody wins: ${why}`;
  return `${seating[trick.winner]} wins: ${why}${trick.tie ? " (an equal card played later lost)" : ""}`;
}

// Seats around an oval, seat 0 at the bottom, clockwise.
function place(node, seat, n) {
  const angle = Math.PI / 2 + (2 * Math.PI * seat) / n;
  const [rx, ry] = n > 5 ? [43, 41] : [40, 36];
  node.style.left = `${50 + rx * Math.cos(angle)}%`;
  node.style.top = `${50 + ry * Math.sin(angle)}%`;
}

function seatPanel(s, n, name, { dealer, leader, forfeited, meta, pain, hand, handNote }) {
  const panel = el("div", { class: `seat${dealer ? " dealer" : ""}${leader ? " leader" : ""}${forfeited ? " forfeited" : ""}`, "data-seat": s },
    el("div", { class: "name", text: name }),
    el("div", { class: "meta", text: meta }),
    el("div", { class: "painrow cards", title: "pain card(s)" }, el("span", { class: "meta", text: "pain " }), pain),
    hand ? el("div", { class: "hand cards", "data-hand": s }, hand) : null,
    handNote ? el("div", { class: "meta", text: handNote }) : null);
  place(panel, s, n);
  return panel;
}

function trickArea(plays, seating, outcome, attrs) {
  return el("div", { class: "trick", id: "trick", ...attrs },
    el("div", { class: "cards" }, plays.map((p) => el("span", { class: "played", "data-seat": p.seat },
      card(p.card, `small${p.won ? " won" : ""}`), el("span", { class: "who", text: seating[p.seat] })))),
    el("div", { class: "outcome", id: "trick-outcome", text: outcome || "" }));
}

function scoreTable(seating, rounds, upto, current) {
  const head = el("tr", {}, el("th", { class: "text", text: "Round" }), seating.map((b) => el("th", { text: b })));
  const rows = [];
  let totals = null;
  rounds.forEach((r, i) => {
    if (i > upto || !r.scores) return;
    totals = r.totals;
    rows.push(el("tr", { class: i === current ? "cur" : null }, el("td", { class: "text", text: String(i + 1) }), r.scores.map((v) => el("td", { text: v > 0 ? `+${v}` : v }))));
  });
  if (totals) rows.push(el("tr", {}, el("th", { class: "text", text: "Total" }), totals.map((v) => el("th", { text: v }))));
  return el("table", { class: "scoretable", id: "scores" }, el("thead", {}, head), el("tbody", {}, rows));
}

function header(doc, live) {
  const rules = doc.rules || {};
  return [
    el("h1", {}, `Match ${doc.match_id} `, live ? el("span", { class: "pill live", id: "live-badge", text: "live" }) : null),
    el("p", {}, doc.seating.flatMap((b, s) => [s ? " · " : "", `seat ${s}: `, botLink(b)])),
    el("p", { class: "muted", text: `rules ${rules.preset || "?"}${rules.pain_visibility === "secret" || rules.pain_visibility === "PAIN_VISIBILITY_SECRET" ? ", secret pain cards" : ""} · commitment ${(doc.commitment || "").slice(0, 16)}…${doc.seed ? ` · seed ${doc.seed}` : ""}` }),
  ];
}

// -- a finished match ----------------------------------------------------------------------
function viewer(doc, id) {
  const n = doc.seating.length;
  const steps = [];
  doc.rounds.forEach((r, ri) => {
    steps.push({ r: ri, t: -1 });
    r.tricks.forEach((_, ti) => steps.push({ r: ri, t: ti }));
  });
  let at = 0, timer = null;
  const table = el("div", { class: `table-felt seats-${n}` });
  const label = el("span", { class: "step", id: "step-label" });
  const roundSelect = el("select", { id: "round-select", "aria-label": "jump to round", onchange: () => go(steps.findIndex((s) => s.r === Number(roundSelect.value))) },
    doc.rounds.map((r, i) => el("option", { value: i, text: `Round ${i + 1}` })));
  const playButton = el("button", { id: "play", onclick: () => toggle(), text: "▶ play" });
  const scores = el("div");
  const faults = el("div", { class: "events", id: "faults" });
  const controls = el("div", { class: "controls" },
    el("button", { id: "prev-round", title: "previous round", onclick: () => jumpRound(-1), text: "« round" }),
    el("button", { id: "prev", title: "previous trick (←)", onclick: () => go(at - 1), text: "◀ back" }),
    playButton,
    el("button", { id: "next", title: "next trick (→)", onclick: () => go(at + 1), text: "next ▶" }),
    el("button", { id: "next-round", title: "next round", onclick: () => jumpRound(1), text: "round »" }),
    roundSelect, label,
    el("a", { href: `/api/matches/${encodeURIComponent(id)}/record.jsonl`, download: `${id}.jsonl`, id: "download", text: "download the record" }));

  function jumpRound(delta) {
    const r = Math.max(0, Math.min(doc.rounds.length - 1, steps[at].r + delta));
    go(steps.findIndex((s) => s.r === r));
  }
  function toggle() {
    if (timer) { clearInterval(timer); timer = null; playButton.textContent = "▶ play"; return; }
    playButton.textContent = "⏸ pause";
    timer = setInterval(() => { if (at >= steps.length - 1) toggle(); else go(at + 1); }, 900);
  }
  function go(i) {
    at = Math.max(0, Math.min(steps.length - 1, i));
    draw();
  }
  function draw() {
    const { r, t } = steps[at];
    const round = doc.rounds[r];
    const trick = t >= 0 ? round.tricks[t] : null;
    const last = t === round.tricks.length - 1;
    const hands = trick ? trick.hands_after : round.hands;
    const won = Array(n).fill(0);
    round.tricks.slice(0, t + 1).forEach((x) => { if (x.winner >= 0) won[x.winner] += 1; });
    const forfeited = new Set(doc.end ? doc.end.forfeited || [] : []);
    const painSet = round.pain.map((p) => new Set(p));
    const panels = doc.seating.map((name, s) => seatPanel(s, n, name, {
      dealer: round.dealer === s,
      leader: trick ? trick.leader === s : false,
      forfeited: forfeited.has(s),
      meta: `${won[s]} trick(s) won${round.scores && last ? ` · round ${round.scores[s] > 0 ? "+" : ""}${round.scores[s]}` : ""}`,
      pain: round.pain[s].map((c) => card(c, "small pain")),
      hand: hands[s].map((c) => card(c, `small${t < 0 && painSet[s].has(c) ? " pain" : ""}`)),
    }));
    let plays = [], outcome = t < 0 ? `Round ${r + 1} dealt by ${doc.seating[round.dealer]}; pain cards chosen` : "";
    if (trick) {
      plays = trick.plays.length ? trick.plays : trick.cards.map((c, i) => ({ seat: (trick.leader + i) % n, card: c }));
      plays = plays.map((p) => ({ ...p, won: p.seat === trick.winner }));
      outcome = reasonText(trick, doc.seating);
    }
    table.replaceChildren(...panels, trickArea(plays, doc.seating, outcome, { "data-round": r, "data-trick": t }));
    label.textContent = t < 0 ? `Round ${r + 1} · the deal` : `Round ${r + 1} · trick ${t + 1} / ${round.tricks.length}`;
    roundSelect.value = String(r);
    scores.replaceChildren(el("h2", { text: "Scores per round" }), scoreTable(doc.seating, doc.rounds, last ? r : r - 1, r));
    const fs = round.faults.filter((f) => f.trick <= t + 1);
    faults.replaceChildren(...(fs.length ? fs.map((f) => el("div", { text: `${doc.seating[f.seat]}: ${f.reason}${f.detail ? ` (${f.detail})` : ""}, strike ${f.strikes}${f.forfeited ? ", forfeited" : ""}` }))
      : [el("div", { class: "muted", text: "No fault in this round so far." })]));
  }
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLSelectElement) return;
    if (e.key === "ArrowRight") { go(at + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { go(at - 1); e.preventDefault(); }
    else if (e.key === " ") { toggle(); e.preventDefault(); }
  });
  const result = doc.end ? el("p", { id: "result" }, "Result: ", doc.seating.map((b, s) => s).sort((a, b) => doc.end.places[a] - doc.end.places[b])
    .flatMap((s, i) => [i ? ", " : "", `${doc.end.places[s]}. `, botLink(doc.seating[s]), ` ${doc.end.totals[s] > 0 ? "+" : ""}${doc.end.totals[s]}`])) : null;
  main.replaceChildren(...header(doc, false), result, el("div", { class: "viewer" }, controls, table, scores, el("h2", { text: "Faults" }), faults));
  go(0);
}

// -- a running match, live -------------------------------------------------------------------
function spectator(id, delayRounds) {
  const state = { seating: [], rules: {}, round: -1, dealer: -1, pain: [], plays: [], lastTrick: null, rounds: [], faults: [], events: 0, end: null, played: [] };
  const status = el("p", { id: "live-status", class: "muted", text: "Connecting…" });
  const table = el("div", { class: "table-felt" });
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
  source.addEventListener("close", () => { source.close(); status.textContent = state.end ? status.textContent : "The stream ended."; });
  source.onerror = () => { if (state.end) source.close(); };

  function note(text) {
    log.prepend(el("div", { text }));
  }
  function apply(ev) {
    const who = (s) => state.seating[s] ?? `seat ${s}`;
    if (ev.type === "match") {
      state.seating = ev.seating; state.rules = ev.rules; state.commitment = ev.commitment;
      state.played = ev.seating.map(() => 0);
      top = header({ match_id: ev.match_id, seating: ev.seating, rules: ev.rules, commitment: ev.commitment }, true);
    } else if (ev.type === "dealt") {
      state.round = ev.round; state.dealer = ev.dealer; state.pain = state.seating.map(() => null);
      state.plays = []; state.lastTrick = null; state.played = state.seating.map(() => 0);
      note(`Round ${ev.round + 1} dealt by ${who(ev.dealer)}`);
    } else if (ev.type === "revealed") {
      state.pain = ev.pain.map((p) => (p.length ? p : null));
      note(ev.pain.some((p) => p.length) ? "Pain cards revealed" : "Pain cards chosen (secret until the round is scored)");
    } else if (ev.type === "play") {
      if (state.lastTrick) { state.lastTrick = null; state.plays = []; }
      state.plays.push({ seat: ev.seat, card: ev.card });
      state.played[ev.seat] += 1;
    } else if (ev.type === "trick") {
      state.lastTrick = ev;
      state.plays = ev.cards.map((c, i) => ({ seat: (ev.leader + i) % state.seating.length, card: c, won: (ev.leader + i) % state.seating.length === ev.winner }));
      note(reasonText(ev, state.seating));
    } else if (ev.type === "scored") {
      state.rounds[ev.round] = { scores: ev.scores, totals: ev.totals };
      state.pain = ev.pain.map((p) => (p.length ? p : null));
      note(`Round ${ev.round + 1} scored: ${ev.scores.map((v, s) => `${who(s)} ${v > 0 ? "+" : ""}${v}`).join(", ")}`);
    } else if (ev.type === "fault") {
      note(`Fault: ${who(ev.seat)} ${ev.reason}, strike ${ev.strikes}${ev.forfeited ? ", forfeited" : ""}`);
    } else if (ev.type === "end") {
      state.end = ev;
      note(`Match over (${ev.reason})`);
    }
  }
  function draw() {
    const n = state.seating.length;
    if (!n) return;
    const panels = state.seating.map((name, s) => seatPanel(s, n, name, {
      dealer: state.dealer === s,
      leader: state.plays.length ? state.plays[0].seat === s : false,
      meta: `${state.played[s] || 0} card(s) played this round`,
      pain: state.pain[s] ? state.pain[s].map((c) => card(c, "small pain")) : [card(null, "small")],
      handNote: "hand hidden",
    }));
    const outcome = state.lastTrick ? reasonText(state.lastTrick, state.seating) : (state.plays.length ? "…" : "");
    table.replaceChildren(...panels, trickArea(state.plays, state.seating, outcome, { "data-round": state.round, "data-events": state.events }));
    table.className = `table-felt seats-${n}`;
    const rounds = state.rounds.map((r) => r || { scores: null });
    scores.replaceChildren(el("h2", { text: "Scores per round" }), scoreTable(state.seating, rounds, rounds.length - 1, state.round));
    if (state.end) {
      status.textContent = state.end.reason === "completed"
        ? `Finished. Seed ${state.end.seed} (check it against the commitment). The full record, with every hand, is on this page once reloaded.`
        : `The match ended: ${state.end.reason}.`;
      status.dataset.over = "1";
    } else {
      status.textContent = `Live · round ${state.round + 1}${delayRounds ? ` · shown ${delayRounds} round(s) behind` : ""} · ${state.events} events`;
    }
    status.dataset.events = String(state.events);
    main.replaceChildren(...top, status, el("div", { class: "viewer" }, table, scores, el("h2", { text: "What happened" }), log));
  }
  main.replaceChildren(status);
}

const info = await frame("Match · Sticheln referee");
const id = query("id");
if (!id) showError(main, new Error("no match named: add ?id=MATCH to the address"));
else {
  document.title = `${id} · Sticheln referee`;
  try {
    viewer(await api(`/api/matches/${encodeURIComponent(id)}`), id);
  } catch (e) {
    if (e.status === 409) spectator(id, info ? info.delay_rounds || 0 : 0);
    else showError(main, e);
  }
}
