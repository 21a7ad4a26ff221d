// A comparison (GET /api/compare): the server writes the verdict, the test's bounds, the
// mean difference and the pairs; this script adds the test's path over the pairs as a
// chart and, for the pair in the URL (?pair=D), the candidate's and the baseline's match
// of that deal side by side, stepping together card by card, the first card where they
// differ marked. The position is in the URL (#r2t7c3, as on the match page; #diff: the
// first difference).
import { api, el, fmt, signed, svg, niceTicks, chartWidth, showError, query, SUITS } from "/static/common.js";
import { Replay, suitLegend } from "/static/table.js";

const main = document.getElementById("main");

// -- the test's path ------------------------------------------------------------------------
// The evidence for H1 (ln Λ₁, or ln W₁) rises towards the upper line; that for H0 is drawn
// downwards towards the lower one, so that each bound is a line of its own and a crossing
// is exactly the test's decision.
function testChart(pairs, test, width) {
  const left = 48, right = 16, top = 14, plotH = 210, bottom = 40;
  const height = top + plotH + bottom, plotW = width - left - right;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", id: "test-chart",
    "aria-label": "the test's evidence over the pairs, with its two decision bounds" });
  const pts = pairs.filter((p) => p.log_h1 !== null && p.log_h0 !== null);
  const up = test.accept_h1_at, down = -test.accept_h0_at;
  const ys = [up, down, 0, ...pts.map((p) => p.log_h1), ...pts.map((p) => -p.log_h0)];
  const yt = niceTicks(Math.min(...ys), Math.max(...ys), 6);
  const ylo = yt[0], yhi = yt[yt.length - 1];
  const n = Math.max(pairs.length, 2);
  const X = (i) => left + ((i - 1) / (n - 1)) * plotW;
  const Y = (v) => top + plotH - ((v - ylo) / (yhi - ylo)) * plotH;
  for (const t of yt) {
    chart.append(svg("line", { class: "grid", x1: left, x2: left + plotW, y1: Y(t), y2: Y(t) }),
      svg("text", { x: left - 6, y: Y(t) + 4, "text-anchor": "end", text: String(Math.round(t * 100) / 100) }));
  }
  const xt = niceTicks(1, n, Math.max(2, Math.floor(plotW / 70))).filter((t) => Number.isInteger(t) && t >= 1 && t <= n);
  for (const t of xt) chart.append(svg("text", { x: X(t), y: top + plotH + 15, "text-anchor": "middle", text: String(t) }));
  chart.append(svg("line", { class: "axis", x1: left, x2: left + plotW, y1: top + plotH, y2: top + plotH }),
    svg("text", { x: left + plotW / 2, y: height - 6, "text-anchor": "middle", text: "deal pairs, in deal order" }));
  // The two decision bounds, each labelled with what crossing it decides.
  chart.append(svg("line", { class: "bound bound-h1", x1: left, x2: left + plotW, y1: Y(up), y2: Y(up) }),
    svg("text", { class: "bound-label", x: left + plotW - 4, y: Y(up) - 5, "text-anchor": "end", text: `accept H1 (better by ≥ ${fmt(test.upper, 1)}) at ${fmt(up, 2)}` }),
    svg("line", { class: "bound bound-h0", x1: left, x2: left + plotW, y1: Y(down), y2: Y(down) }),
    svg("text", { class: "bound-label", x: left + plotW - 4, y: Y(down) - 5, "text-anchor": "end", text: `accept H0 (≤ ${fmt(test.lower, 1)}) at ${fmt(down, 2)}` }));
  if (test.min_pairs > 1 && test.min_pairs <= n) {
    chart.append(svg("line", { class: "min-pairs", x1: X(test.min_pairs), x2: X(test.min_pairs), y1: top, y2: top + plotH },
      svg("title", { text: `no decision before ${test.min_pairs} pairs` })));
  }
  const line = (cls, f) => svg("polyline", { class: cls, points: pts.map((p) => `${X(p.deal + 1)},${Y(f(p))}`).join(" ") });
  // The H0 evidence negated, dashed over the H1 one: the two often run close (a pair that is evidence for one
  // is evidence against the other), and both stay visible.
  chart.append(line("path-h1", (p) => p.log_h1), line("path-h0", (p) => -p.log_h0));
  const counted = pairs.filter((p) => p.counted).length;
  if (counted && counted < pairs.length) {
    chart.append(svg("line", { class: "verdict-at", x1: X(counted), x2: X(counted), y1: top, y2: top + plotH },
      svg("title", { text: `the verdict, after ${counted} pairs` })));
  }
  return chart;
}

function chartLegend() {
  return el("p", { class: "chart-legend" },
    el("span", { class: "key key-h1" }), " evidence that the candidate is better (up)  ",
    el("span", { class: "key key-h0" }), " evidence that it is not (down, drawn negated)");
}

function drawChart(doc) {
  const box = document.getElementById("chart");
  if (!box) return;
  const test = doc.summary && doc.summary.test;
  if (!test || !doc.pairs.length) { box.replaceChildren(); return; }
  box.replaceChildren(el("h2", { text: "The test over the pairs" }), testChart(doc.pairs, test, chartWidth(box, 900)), chartLegend());
}

// -- one pair, side by side ---------------------------------------------------------------------
// Where two matches of one deal first part: the pain cards of a round, or a card of a
// trick (its seat or its card). {r, t, c, what} with c counted from 1 (t = -1: the deal),
// or null when they never differ.
export function firstDifference(a, b) {
  const rounds = Math.min(a.rounds.length, b.rounds.length);
  for (let r = 0; r < rounds; r += 1) {
    const ra = a.rounds[r], rb = b.rounds[r];
    const painA = ra.pain.map((p) => [...p].sort().join()), painB = rb.pain.map((p) => [...p].sort().join());
    const seat = painA.findIndex((p, s) => p !== painB[s]);
    if (seat >= 0) return { r, t: -1, c: 0, seat };
    const tricks = Math.min(ra.tricks.length, rb.tricks.length);
    for (let t = 0; t < tricks; t += 1) {
      const ta = ra.tricks[t], tb = rb.tricks[t];
      const size = Math.max(ta.cards.length, tb.cards.length);
      for (let i = 0; i < size; i += 1) {
        const sa = (ta.leader + i) % a.seating.length, sb = (tb.leader + i) % b.seating.length;
        if (sa !== sb || ta.cards[i] !== tb.cards[i]) return { r, t, c: i + 1, seat: sa };
      }
    }
    if (ra.tricks.length !== rb.tricks.length) return { r, t: tricks, c: 1, seat: -1 };
  }
  if (a.rounds.length !== b.rounds.length) return { r: rounds, t: -1, c: 0, seat: -1 };
  return null;
}

function cardName(text) {
  if (!text) return "–";
  const [sym] = SUITS[text[0]] || ["?"];
  return `${sym}${text.slice(1)}`;
}

function pairView(box, pair, docs, summary) {
  const roles = [["candidate", summary.candidate, pair.candidate_match, pair.candidate_total, pair.candidate_place],
    ["baseline", summary.baseline, pair.baseline_match, pair.baseline_total, pair.baseline_place]];
  const replays = docs.map((d) => new Replay(d));
  const lead = replays[0];
  const diff = firstDifference(docs[0], docs[1]);
  const diffAt = diff ? Math.max(0, lead.indexOf(diff.r, diff.t, diff.c)) : -1;
  const diffHash = diff && diffAt >= 0 ? lead.hashOf(diffAt) : "";
  let at = 0;
  // Each side's table is split in two rows of a two-column grid: the tricks side by side
  // (on a phone too, so that the two plays are seen together), the seats below each.
  const boxes = roles.map(([role]) => el("div", { class: `pair-side felt-box side-${role}`, "data-role": role }));
  const seatBoxes = roles.map(([role]) => el("div", { class: `pair-seats side-${role}` }));
  const steps = replays.map(() => el("div", { class: "step muted" }));
  const label = el("span", { class: "step", id: "step-label", "aria-live": "polite" });
  const scrubber = el("input", { type: "range", id: "scrubber", min: 0, max: lead.last, value: 0, step: 1,
    "aria-label": "position in the deal", oninput: () => go(Number(scrubber.value)) });
  const button = (bid, text, title, fn) => el("button", { id: bid, title, "aria-label": title, onclick: fn, text });
  const jumpTrick = (delta) => go(lead.trickStep(at, delta));
  let summaryLine;
  if (!diff) summaryLine = el("p", { id: "first-diff", class: "first-diff", text: "The two matches are the same card for card." });
  else {
    const where = diff.t < 0 ? `round ${diff.r + 1}, the pain cards` : `round ${diff.r + 1}, trick ${diff.t + 1}, card ${diff.c}`;
    const what = docs.map((d, k) => {
      const round = d.rounds[diff.r];
      if (!round) return `${roles[k][1]}: no such round`;
      if (diff.t < 0) return `${roles[k][1]} (seat ${diff.seat}) set aside ${round.pain[diff.seat].map(cardName).join(" ")}`;
      const trick = round.tricks[diff.t];
      if (!trick) return `${roles[k][1]}: no such trick`;
      const seat = (trick.leader + diff.c - 1) % d.seating.length;
      return `${d.seating[seat]} (seat ${seat}) played ${cardName(trick.cards[diff.c - 1])}`;
    });
    summaryLine = el("p", { id: "first-diff", class: "first-diff", "data-hash": diffHash, "data-round": diff.r, "data-trick": diff.t, "data-card": diff.c },
      el("b", { text: "First difference: " }), `${where}. `, what.join("; "), ". ",
      el("a", { href: `#${diffHash}`, id: "to-diff", text: "go there" }));
  }
  const controls = el("div", { class: "controls" },
    el("div", { class: "buttons" },
      button("first", "⇤", "the deal (Home)", () => go(0)),
      button("prev-trick", "‹‹", "previous trick (↑)", () => jumpTrick(-1)),
      button("prev", "‹", "previous card (←)", () => go(at - 1)),
      button("next", "›", "next card (→)", () => go(at + 1)),
      button("next-trick", "››", "next trick (↓)", () => jumpTrick(1)),
      button("last", "⇥", "the last card (End)", () => go(lead.last)),
      diff ? button("diff", "≠ first difference", "the first card where they differ (D)", () => go(diffAt)) : null),
    el("div", { class: "scrub" }, scrubber, label));
  const heads = roles.map(([role, bot, mid, total, place], k) => el("div", { class: `pair-head side-${role}` },
    el("h3", {}, `${role}: `, el("span", { class: "bot-name", text: bot }), " ",
      el("a", { href: `/match?id=${encodeURIComponent(mid)}`, text: mid }), el("span", { class: "muted", text: ` ${signed(total)}, place ${place}` })),
    steps[k]));
  const columns = [...heads, ...boxes, ...seatBoxes];
  const suits = Object.keys(SUITS).filter((s) => docs.some((d) => d.rounds.some((r) => r.hands.flat().some((c) => c[0] === s))));
  box.replaceChildren(
    el("h2", { id: "pair-title", text: `Deal ${pair.deal}: ${signed(pair.score_diff)} points for the candidate` }),
    summaryLine, controls, suitLegend(suits), el("div", { class: "pair-grid" }, columns));

  // Mark the first difference in both tables once the position reaches it: the two cards
  // (or the two seats' pain cards) where the matches part.
  function mark() {
    if (!diff) return;
    const s = lead.steps[at];
    const here = diff.t < 0 ? s.r === diff.r && s.t < 0 : s.r === diff.r && s.t === diff.t && s.c >= diff.c;
    boxes.forEach((b, k) => {
      b.classList.toggle("at-diff", here);
      if (!here) return;
      if (diff.t < 0) seatBoxes[k].querySelectorAll(`.seat[data-seat="${diff.seat}"] .painrow`).forEach((x) => x.classList.add("differs"));
      else {
        const played = b.querySelectorAll(".trick .played")[diff.c - 1];
        if (played) played.classList.add("differs");
      }
    });
  }
  function go(i, { keepHash = false } = {}) {
    at = Math.max(0, Math.min(lead.last, i));
    const hash = lead.hashOf(at);
    replays.forEach((rp, k) => {
      const j = k === 0 ? at : Math.max(0, rp.parse(`#${hash}`));
      const drawn = rp.table(j);
      boxes[k].replaceChildren(drawn.querySelector(".felt"));
      seatBoxes[k].replaceChildren(drawn.querySelector(".seats"));
      steps[k].textContent = rp.label(j);
    });
    label.textContent = `${lead.label(at)}${diffAt >= 0 ? (at < diffAt ? " · the same so far" : " · after the first difference") : ""}`;
    scrubber.value = String(at);
    mark();
    if (!keepHash && location.hash !== `#${hash}`) history.replaceState(null, "", `#${hash}`);
  }
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLSelectElement || e.target instanceof HTMLInputElement || e.altKey || e.ctrlKey || e.metaKey) return;
    const keys = {
      ArrowRight: () => go(at + 1), ArrowLeft: () => go(at - 1), ArrowDown: () => jumpTrick(1), ArrowUp: () => jumpTrick(-1),
      Home: () => go(0), End: () => go(lead.last), d: () => { if (diffAt >= 0) go(diffAt); },
    };
    if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
  });
  const open = () => {
    const h = location.hash;
    if (h === "#diff" || !h) return diffAt >= 0 ? diffAt : 0;
    const i = lead.parse(h);
    return i >= 0 ? i : 0;
  };
  window.addEventListener("hashchange", () => { const i = open(); if (i !== at) go(i, { keepHash: location.hash !== "#diff" }); });
  go(open(), { keepHash: location.hash !== "#diff" && location.hash !== "" });
}

async function showPair(doc, deal) {
  const box = document.getElementById("pair-view");
  if (!box) return;
  const pair = doc.pairs.find((p) => p.deal === deal);
  if (!pair) { box.replaceChildren(el("p", { class: "error", text: `no finished pair for deal ${deal}` })); return; }
  box.replaceChildren(el("p", { class: "muted", text: `Loading deal ${deal}…` }));
  try {
    const docs = await Promise.all([pair.candidate_match, pair.baseline_match].map((m) => api(`/api/matches/${encodeURIComponent(m)}`)));
    pairView(box, pair, docs, doc.summary);
  } catch (e) {
    showError(box, e);
  }
}

async function start() {
  let doc;
  try {
    doc = await api("/api/compare");
  } catch (e) {
    if (!document.getElementById("verdict")) showError(main, e);
    return;
  }
  drawChart(doc);
  window.addEventListener("resize", () => drawChart(doc));
  const pair = query("pair");
  if (pair !== null && /^\d+$/.test(pair)) await showPair(doc, Number(pair));
  main.dataset.drawn = "1";  // as fill() marks the other pages: the script has drawn it
  if (doc.running) {
    // A running comparison: reload the page when a pair has finished (the server writes
    // the verdict and the table; the pair being looked at is kept in the URL).
    // While a pair is being stepped through, the page only says so.
    const seen = doc.pairs.length;
    const updates = new EventSource("/api/updates");
    updates.onmessage = async () => {
      try {
        const now = await api("/api/compare");
        if (now.pairs.length === seen && now.running === doc.running) return;
        updates.close();
        if (pair === null) location.reload();
        else document.getElementById("verdict").append(" ", el("a", { href: location.href, id: "newer", text: `(${now.pairs.length - seen} more pairs: reload)` }));
      } catch { /* the next update tries again */ }
    };
  }
}

start();
