// A comparison (GET /api/compare): the server writes the verdict, the test's bounds, the
// mean difference and the pairs; this script adds the test's path over the pairs as a
// chart and, for the pair in the URL (?pair=D), the candidate's and the baseline's match
// of that deal side by side, stepping together card by card, the first card where they
// differ marked. The position is in the URL (#r2t7c3, as on the match page; #diff: the
// first difference).
import { api, el, fmt, signed, svg, niceTicks, chartWidth, showError, query, SUITS } from "/static/common.js";
import { Replay, stepButton, suitLegend } from "/static/table.js";

const main = document.getElementById("main");

// -- the test's path ------------------------------------------------------------------------
// One panel per hypothesis over the same pairs: the evidence for H1 (ln Λ₁, or ln W₁) rises
// towards its line in the upper one, the evidence for H0 towards its own in the lower one.
// The two are often near mirror images (a pair that is evidence for one is evidence against
// the other): drawn in one panel they hid each other; apart, each crossing is the test's
// decision. The pairs before min_pairs are shaded: the test decides nothing there.
function testChart(pairs, test, width) {
  const left = 48, right = 16, top = 8, head = 20, panelH = 110, gap = 26, bottom = 40;
  const height = top + 2 * (head + panelH) + gap + bottom, plotW = width - left - right;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", id: "test-chart",
    "aria-label": `the test's evidence over the pairs: for H1 above, for H0 below, each against the line that accepts it${test.min_pairs > 1 ? `; no decision before ${test.min_pairs} pairs` : ""}` });
  const pts = pairs.filter((p) => p.log_h1 !== null && p.log_h0 !== null);
  // Before min_pairs the axis runs to it: how far the test still has to go is seen.
  const n = Math.max(pairs.length, test.min_pairs || 0, 2);
  const X = (i) => left + ((i - 1) / (n - 1)) * plotW;
  const betting = test.statistic === "betting";
  const panels = [
    { cls: "h1", key: "log_h1", at: test.accept_h1_at, name: betting ? "ln W₁" : "ln Λ₁",
      title: `for H1, better by ≥ ${fmt(test.upper, 1)}`, accept: "accept H1" },
    { cls: "h0", key: "log_h0", at: test.accept_h0_at, name: betting ? "ln W₀" : "ln Λ₀",
      title: `for H0, at most ${fmt(test.lower, 1)}`, accept: "accept H0" },
  ];
  const plotBottom = top + 2 * (head + panelH) + gap;
  const counted = pairs.filter((p) => p.counted).length;
  panels.forEach((panel, k) => {
    const y0 = top + k * (head + panelH + gap) + head;
    const ys = [0, panel.at, ...pts.map((p) => p[panel.key])];
    const yt = niceTicks(Math.min(...ys), Math.max(...ys), 4);
    const lo = yt[0], hi = yt[yt.length - 1];
    const Y = (v) => y0 + panelH - ((v - lo) / (hi - lo)) * panelH;
    const g = svg("g", { class: `panel panel-${panel.cls}` });
    g.append(svg("text", { class: `panel-title title-${panel.cls}`, x: left, y: y0 - 6, text: `${panel.name}: ${panel.title}` }));
    if (test.min_pairs > 1) {
      const x2 = X(Math.min(test.min_pairs, n));
      g.append(svg("rect", { class: "before-min", x: left, y: y0, width: Math.max(0, x2 - left), height: panelH },
        svg("title", { text: `no decision before ${test.min_pairs} pairs` })));
    }
    for (const t of yt) {
      g.append(svg("line", { class: "grid", x1: left, x2: left + plotW, y1: Y(t), y2: Y(t) }),
        svg("text", { x: left - 6, y: Y(t) + 4, "text-anchor": "end", text: String(Math.round(t * 100) / 100) }));
    }
    g.append(svg("line", { class: `bound bound-${panel.cls}`, x1: left, x2: left + plotW, y1: Y(panel.at), y2: Y(panel.at) }),
      svg("text", { class: "bound-label", x: left + plotW - 4, y: Y(panel.at) - 5, "text-anchor": "end", text: `${panel.accept} at ${fmt(panel.at, 2)}` }),
      svg("polyline", { class: `path-${panel.cls}`, points: pts.map((p) => `${X(p.deal + 1)},${Y(p[panel.key])}`).join(" ") }));
    if (test.min_pairs > 1 && test.min_pairs <= n) {
      g.append(svg("line", { class: "min-pairs", x1: X(test.min_pairs), x2: X(test.min_pairs), y1: y0, y2: y0 + panelH }));
    }
    if (counted && counted < pairs.length) {
      g.append(svg("line", { class: "verdict-at", x1: X(counted), x2: X(counted), y1: y0, y2: y0 + panelH },
        svg("title", { text: `the verdict, after ${counted} pairs` })));
    }
    chart.append(g);
  });
  const xt = niceTicks(1, n, Math.max(2, Math.floor(plotW / 70))).filter((t) => Number.isInteger(t) && t >= 1 && t <= n);
  for (const t of xt) chart.append(svg("text", { x: X(t), y: plotBottom + 15, "text-anchor": "middle", text: String(t) }));
  chart.append(svg("line", { class: "axis", x1: left, x2: left + plotW, y1: plotBottom, y2: plotBottom }),
    svg("text", { x: left + plotW / 2, y: height - 6, "text-anchor": "middle", text: "deal pairs, in deal order" }));
  return chart;
}

function testLegend(test) {
  return el("p", { class: "chart-legend" },
    el("span", { class: "key key-h1" }), " evidence that the candidate is better (H1), ",
    el("span", { class: "key key-h0" }), " evidence that it is not (H0): each accepts its hypothesis where it reaches its dashed line",
    test.min_pairs > 1 ? [", ", el("span", { class: "key key-min" }), ` the first ${test.min_pairs} pairs, where the test decides nothing`] : null, ".");
}

// A fixed-size comparison has no sequential test: its chart is the mean difference after
// each pair with its 95% interval (as compare computes it: 1.96 standard errors), against
// 0. Once all pairs are in, where the interval lies is the verdict.
const Z95 = 1.959963984540054;

function meanChart(pairs, metric, width) {
  const left = 56, right = 16, top = 14, plotH = 200, bottom = 40;
  const height = top + plotH + bottom, plotW = width - left - right;
  const key = metric === "share" ? "share_diff" : "score_diff";
  const ordered = [...pairs].sort((a, b) => a.deal - b.deal);
  const pts = [];
  let sum = 0, sq = 0;
  ordered.forEach((p, i) => {
    const x = Number(p[key]); sum += x; sq += x * x;
    const k = i + 1, mean = sum / k;
    const sd = k > 1 ? Math.sqrt(Math.max(0, (sq - k * mean * mean) / (k - 1))) : null;
    pts.push({ k, mean, ci: sd === null ? null : (Z95 * sd) / Math.sqrt(k) });
  });
  const ys = [0, ...pts.flatMap((p) => (p.ci === null ? [p.mean] : [p.mean - p.ci, p.mean + p.ci]))];
  const yt = niceTicks(Math.min(...ys), Math.max(...ys), 5);
  const lo = yt[0], hi = yt[yt.length - 1];
  const n = Math.max(pts.length, 2);
  const X = (i) => left + ((i - 1) / (n - 1)) * plotW;
  const Y = (v) => top + plotH - ((v - lo) / (hi - lo)) * plotH;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", id: "mean-chart",
    "aria-label": "the mean difference after each pair with its 95% interval, against 0" });
  for (const t of yt) {
    chart.append(svg("line", { class: "grid", x1: left, x2: left + plotW, y1: Y(t), y2: Y(t) }),
      svg("text", { x: left - 6, y: Y(t) + 4, "text-anchor": "end", text: String(Math.round(t * 1000) / 1000) }));
  }
  const band = pts.filter((p) => p.ci !== null);
  if (band.length) {
    const upper = band.map((p) => `${X(p.k)},${Y(p.mean + p.ci)}`), lower = band.map((p) => `${X(p.k)},${Y(p.mean - p.ci)}`).reverse();
    chart.append(svg("polygon", { class: "ci-band", points: [...upper, ...lower].join(" ") }));
  }
  chart.append(svg("line", { class: "zero", x1: left, x2: left + plotW, y1: Y(0), y2: Y(0) }),
    svg("text", { class: "bound-label", x: left + plotW - 4, y: Y(0) - 5, "text-anchor": "end", text: "no difference" }),
    svg("polyline", { class: "path-mean", points: pts.map((p) => `${X(p.k)},${Y(p.mean)}`).join(" ") }));
  const xt = niceTicks(1, n, Math.max(2, Math.floor(plotW / 70))).filter((t) => Number.isInteger(t) && t >= 1 && t <= n);
  for (const t of xt) chart.append(svg("text", { x: X(t), y: top + plotH + 15, "text-anchor": "middle", text: String(t) }));
  chart.append(svg("line", { class: "axis", x1: left, x2: left + plotW, y1: top + plotH, y2: top + plotH }),
    svg("text", { x: left + plotW / 2, y: height - 6, "text-anchor": "middle", text: "deal pairs, in deal order" }));
  return chart;
}

function drawChart(doc) {
  const box = document.getElementById("chart");
  if (!box) return;
  const summary = doc.summary || {};
  const test = summary.test;
  if (!doc.pairs.length || !Object.keys(summary).length) { box.replaceChildren(); return; }
  if (test) {
    box.replaceChildren(el("h2", { text: "The test over the pairs" }), testChart(doc.pairs, test, chartWidth(box, 900)), testLegend(test));
  } else {
    const unit = summary.metric === "share" ? "of the opponents beaten" : "points per match";
    box.replaceChildren(el("h2", { text: "The mean difference over the pairs" }), meanChart(doc.pairs, summary.metric, chartWidth(box, 900)),
      el("p", { class: "chart-legend" }, el("span", { class: "key key-mean" }), ` the mean difference (candidate − baseline, ${unit}) after each pair, `,
        el("span", { class: "key key-band" }), ` its 95% interval; a fixed size of ${summary.max_pairs} pairs, judged once all are in.`));
  }
}

// -- one pair, side by side ---------------------------------------------------------------------
// Where two matches of one deal first part: the pain cards of a round, or a card of a
// trick (its seat or its card). {r, t, c, seat} with c counted from 1, or null when they
// never differ. A difference in the pain cards is at the deal's reveal (t = -1, c = 2:
// where the choices are seen; the pair view steps through the deal's moments as the
// match viewer does).
export function firstDifference(a, b) {
  const rounds = Math.min(a.rounds.length, b.rounds.length);
  for (let r = 0; r < rounds; r += 1) {
    const ra = a.rounds[r], rb = b.rounds[r];
    const painA = ra.pain.map((p) => [...p].sort().join()), painB = rb.pain.map((p) => [...p].sort().join());
    const seat = painA.findIndex((p, s) => p !== painB[s]);
    if (seat >= 0) return { r, t: -1, c: 2, seat };
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

function pairView(box, pair, docs, summary, signal) {
  const roles = [["candidate", summary.candidate, pair.candidate_match, pair.candidate_total, pair.candidate_place],
    ["baseline", summary.baseline, pair.baseline_match, pair.baseline_total, pair.baseline_place]];
  // The deal's three moments, as in the match viewer: dealt, chosen face down, revealed.
  const replays = docs.map((d) => new Replay(d, { moments: true }));
  const lead = replays[0];
  const diff = firstDifference(docs[0], docs[1]);
  // Under secret pain cards there is no reveal: a difference in them is at the choice.
  if (diff && diff.t < 0 && diff.c === 2 && lead.indexOf(diff.r, -1, 2) < 0) diff.c = 1;
  const diffAt = diff ? Math.max(0, lead.indexOf(diff.r, diff.t, diff.c)) : -1;
  const diffHash = diff && diffAt >= 0 ? lead.hashOf(diffAt) : "";
  let at = 0;
  // Each side is its heading, its trick and its seats: side by side on a desk (the rows
  // lined up across), one above the other on a phone.
  const boxes = roles.map(([role]) => el("div", { class: `pair-side felt-box side-${role}`, "data-role": role }));
  const seatBoxes = roles.map(([role]) => el("div", { class: `pair-seats side-${role}` }));
  const steps = replays.map(() => el("div", { class: "step muted" }));
  const label = el("span", { class: "step", id: "step-label", "aria-live": "polite" });
  const scrubber = el("input", { type: "range", id: "scrubber", min: 0, max: lead.last, value: 0, step: 1,
    "aria-label": "position in the deal", oninput: () => go(Number(scrubber.value)) });
  const button = stepButton;
  const jumpTrick = (delta) => go(lead.trickStep(at, delta));
  let summaryLine;
  if (!diff) summaryLine = el("p", { id: "first-diff", class: "first-diff", text: "The two matches are the same card for card." });
  else {
    const where = diff.t < 0 ? `round ${diff.r + 1}, the pain cards${diff.c === 1 ? " (chosen face down: secret until the round is scored)" : ""}` : `round ${diff.r + 1}, trick ${diff.t + 1}, card ${diff.c}`;
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
  // Worded step buttons (as the match viewer's), each at least 44 px.
  const controls = el("div", { class: "controls pair-controls", id: "pair-controls", role: "toolbar", "aria-label": "step through both matches" },
    el("div", { class: "buttons" },
      button("first", "⇤", "deal", "the deal (Home)", () => go(0)),
      button("prev-trick", "◀\uFE0E◀\uFE0E", "trick", "previous trick (↑)", () => jumpTrick(-1)),
      button("prev", "◀\uFE0E", "step", "previous step (←)", () => go(at - 1)),
      button("next", "▶\uFE0E", "step", "next step (→)", () => go(at + 1)),
      button("next-trick", "▶\uFE0E▶\uFE0E", "trick", "next trick (↓)", () => jumpTrick(1)),
      button("last", "⇥", "end", "end: the last card (End)", () => go(lead.last)),
      // Its name is its visible text (the tooltip adds the key).
      diff ? el("button", { id: "diff", title: "the first card where they differ (D)", onclick: () => go(diffAt), text: "≠ first difference" }) : null),
    el("div", { class: "scrub" }, scrubber, label));
  const heads = roles.map(([role, bot, mid, total, place], k) => el("div", { class: `pair-head side-${role}` },
    el("h3", {}, `${role}: `, el("span", { class: "bot-name", text: bot }), " ",
      el("a", { href: `/match?id=${encodeURIComponent(mid)}`, text: mid }), el("span", { class: "muted", text: ` ${signed(total)}, place ${place}` })),
    steps[k]));
  const columns = roles.map(([role], k) => el("section", { class: `pair-match side-${role}`, "aria-label": `the ${role}'s match` }, heads[k], boxes[k], seatBoxes[k]));
  const suits = Object.keys(SUITS).filter((s) => docs.some((d) => d.rounds.some((r) => r.hands.flat().some((c) => c[0] === s))));
  box.replaceChildren(
    el("h2", { id: "pair-title", text: `Deal ${pair.deal}: ${signed(pair.score_diff)} points for the candidate` }),
    summaryLine, controls, suitLegend(suits), el("div", { class: "pair-grid" }, columns));

  // Mark the first difference in both tables once the position reaches it: the two cards
  // (or the two seats' pain cards) where the matches part.
  function mark() {
    if (!diff) return;
    const s = lead.steps[at];
    // (the pain cards from where they are seen: the reveal, or the choice when secret)
    const here = diff.t < 0 ? s.r === diff.r && s.t < 0 && s.c >= diff.c : s.r === diff.r && s.t === diff.t && s.c >= diff.c;
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
  }, { signal });
  const open = () => {
    const h = location.hash;
    if (h === "#diff" || !h) return diffAt >= 0 ? diffAt : 0;
    const i = lead.parse(h);
    return i >= 0 ? i : 0;
  };
  window.addEventListener("hashchange", () => { const i = open(); if (i !== at) go(i, { keepHash: location.hash !== "#diff" }); }, { signal });
  go(open(), { keepHash: location.hash !== "#diff" && location.hash !== "" });
}

// The pair shown now: its key and hash listeners end when another is opened.
let shown = null;

async function showPair(doc, deal) {
  const box = document.getElementById("pair-view");
  if (!box) return;
  if (shown) shown.abort();
  shown = new AbortController();
  const { signal } = shown;
  for (const row of document.querySelectorAll("#pairs tr[data-deal]")) row.classList.toggle("current", Number(row.dataset.deal) === deal);
  const pair = doc.pairs.find((p) => p.deal === deal);
  if (!pair) { box.replaceChildren(el("p", { class: "error", text: `no finished pair for deal ${deal}` })); return; }
  box.replaceChildren(el("p", { class: "muted", text: `Loading deal ${deal}…` }));
  try {
    const docs = await Promise.all([pair.candidate_match, pair.baseline_match].map((m) => api(`/api/matches/${encodeURIComponent(m)}`)));
    if (signal.aborted) return;
    pairView(box, pair, docs, doc.summary, signal);
  } catch (e) {
    showError(box, e);
  }
}

// The pair view in sight: its title at the top of the window.
function toPair() {
  const title = document.getElementById("pair-title") || document.getElementById("pair-view");
  if (title) title.scrollIntoView({ block: "start" });
}

// The parts of the page the server writes (the verdict, the test, the pairs), put in place
// from the page it sends now: the pair being stepped through, the chart's box and the
// reader's scroll stay where they are.
async function replaceParts() {
  const url = new URL(location.href);
  url.hash = "";
  const response = await fetch(url, { headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const id of ["summary", "pair-list"]) {
    const now = document.getElementById(id), next = fresh.getElementById(id);
    if (now && next) now.replaceWith(document.adoptNode(next));
  }
}

// Make a change above the element `id` without moving it on the screen, when it is in the
// upper half of the window or above it (the reader is looking at it or below it).
async function keepingView(id, change) {
  const anchor = document.getElementById(id);
  const before = anchor ? anchor.getBoundingClientRect().top : Infinity;
  await change();
  if (anchor && before < window.innerHeight / 2) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
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
  if (pair !== null && /^\d+$/.test(pair)) {
    await showPair(doc, Number(pair));
    toPair();
  }
  main.dataset.drawn = "1";  // as fill() marks the other pages: the script has drawn it
  // A pair's link opens it here, in place, at its first difference (the address is the
  // pair's own, so a reload or a shared link opens the same; Back returns).
  main.addEventListener("click", async (event) => {
    const link = event.target instanceof Element && event.target.closest("a.pair-link");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    const deal = Number(new URL(link.href).searchParams.get("pair"));
    event.preventDefault();
    history.pushState({ deal }, "", link.href);
    await showPair(doc, deal);
    toPair();
  });
  window.addEventListener("popstate", async () => {
    const now = query("pair");
    if (now !== null && /^\d+$/.test(now)) { await showPair(doc, Number(now)); toPair(); }
    else { if (shown) shown.abort(); shown = null; document.getElementById("pair-view")?.replaceChildren(); }
  });
  if (doc.running) {
    // A running comparison: when a pair has finished, the verdict, the test, the chart and
    // the pairs are put in place; nothing reloads, so the scroll and the pair being stepped
    // through stay.
    // An event while the page is still putting the last one in place is not dropped: the
    // page looks again once done (the change may be the comparison's last).
    const updates = new EventSource("/api/updates");
    let busy = false, again = false;
    const follow = async () => {
      if (busy) { again = true; return; }
      busy = true;
      try {
        const now = await api("/api/compare");
        if (now.pairs.length !== doc.pairs.length || now.running !== doc.running
            || JSON.stringify(now.summary) !== JSON.stringify(doc.summary)) {
          doc = now;
          // What the reader looks at stays put: once the summary is mostly scrolled away,
          // the part after it holds its place on the screen, and the summary's new height
          // moves the scroll, not the view (likewise the chart's, for the pair view).
          await keepingView("chart", replaceParts);
          await keepingView("pair-view", async () => drawChart(doc));
          const current = query("pair");
          for (const row of document.querySelectorAll("#pairs tr[data-deal]")) row.classList.toggle("current", current !== null && Number(row.dataset.deal) === Number(current));
          main.dataset.updated = String(doc.pairs.length);
        }
        if (!doc.running) updates.close();
      } catch { /* the next update tries again */ } finally {
        busy = false;
        if (again) { again = false; follow(); }
      }
    };
    updates.onmessage = follow;
  }
}

start();
