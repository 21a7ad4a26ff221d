// The match at a glance, for the viewer: every seat's match total over the whole match as
// a graph (tap it: the viewer goes to that moment), and marks on the timeline for the
// moments one looks for, each a button too: the ends of the rounds, the faults and the
// largest swings. It draws only what the viewer document says (GET /api/matches/ID):
// under secret pain cards the totals move only at the rounds' ends, as the viewer shows.
import { el, signed, svg, niceTicks, chartWidth } from "/static/common.js";
import { faultWords } from "/static/table.js";

// The widest the graph is drawn (narrower where the page is).
export const GRAPH_WIDTH = 900;

// The largest swings marked: the tricks (or rounds) that moved a total the most.
const SWINGS = 3;

// The points of the graph (a position and every seat's total there) and the marks.
export function timeline(replay) {
  const doc = replay.doc, seating = doc.seating;
  const byAt = new Map();
  const point = (at, totals, where) => { if (at >= 0) byAt.set(at, { at, totals, where }); };
  const marks = [];
  doc.rounds.forEach((round, r) => {
    const before = round.totals_before;
    point(replay.indexOf(r, -1, 0), before, `round ${r + 1}, the deal`);
    if (!replay.secret) {
      if (round.scores_start) point(replay.indexOf(r, -1, 2), before.map((v, s) => v + round.scores_start[s]), `round ${r + 1}, the reveal`);
      round.tricks.forEach((tr, t) => {
        if (tr.scores_after) point(replay.indexOf(r, t, tr.cards.length), before.map((v, s) => v + tr.scores_after[s]), `round ${r + 1}, trick ${t + 1}`);
      });
    }
    const last = round.tricks.length - 1;
    const end = last >= 0 ? replay.indexOf(r, last, round.tricks[last].cards.length) : replay.indexOf(r, -1, 0);
    if (round.scores) {
      point(end, before.map((v, s) => v + round.scores[s]), `round ${r + 1}, scored`);
      marks.push({ at: end, kind: "round", text: `Round ${r + 1} ends` });
    }
  });
  const points = [...byAt.values()].sort((a, b) => a.at - b.at);
  const swings = [];
  points.forEach((p, i) => {
    if (!i) return;
    const deltas = p.totals.map((v, s) => v - points[i - 1].totals[s]);
    const seat = deltas.reduce((best, d, s) => (Math.abs(d) > Math.abs(deltas[best]) ? s : best), 0);
    if (deltas[seat]) swings.push({ at: p.at, kind: "swing", size: Math.abs(deltas[seat]), seat, text: `Swing: ${seating[seat]} ${signed(deltas[seat])} (${p.where})` });
  });
  swings.sort((a, b) => b.size - a.size || a.at - b.at);
  marks.push(...swings.slice(0, SWINGS));
  for (const f of replay.faults) {
    const where = f.card === null || f.card === undefined ? "pain choice" : `trick ${f.trick + 1}`;
    marks.push({ at: f.at, kind: "fault", seat: f.seat, text: `⚠ ${seating[f.seat]}: ${faultWords(f.reason)} (round ${f.round + 1}, ${where})` });
  }
  marks.sort((a, b) => a.at - b.at);
  return { points, marks };
}

// What may be shown at position `at`: everything, or (the result hidden) only what has
// happened by then (a round's end is no spoiler: it marks when, not what).
function shownAt(items, at, hiding) {
  return hiding ? items.filter((x) => x.at <= at || x.kind === "round") : items;
}

// The graph at position `at`: a line per seat, the rounds' ends, the faults and the
// swings marked, the position as a line. `go(i)` is called with the moment tapped.
export function scoreGraph(container, replay, line, at, hiding, go) {
  const seating = replay.doc.seating, last = Math.max(1, replay.last);
  const width = chartWidth(container, GRAPH_WIDTH), left = 48, right = 14, top = 14, plotH = 170, bottom = 30;
  const height = top + plotH + bottom, plotW = width - left - right;
  const points = hiding ? line.points.filter((p) => p.at <= at) : line.points;
  const marks = shownAt(line.marks, at, hiding);
  const values = points.flatMap((p) => p.totals);
  const yt = niceTicks(Math.min(0, ...values), Math.max(0, ...values), 4);
  const lo = yt[0], hi = yt[yt.length - 1];
  const X = (i) => left + (i / last) * plotW;
  const Y = (v) => top + plotH - ((v - lo) / (hi - lo || 1)) * plotH;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", id: "graph-svg", class: "graph",
    "aria-label": `every seat's match total over the match${hiding ? " so far" : ""}; tap the graph to go to that moment` });
  for (const t of yt) {
    chart.append(svg("line", { class: "grid", x1: left, x2: left + plotW, y1: Y(t), y2: Y(t) }),
      svg("text", { x: left - 6, y: Y(t) + 4, "text-anchor": "end", text: String(t) }));
  }
  chart.append(svg("line", { class: "axis", x1: left, x2: left + plotW, y1: Y(0), y2: Y(0) }),
    svg("text", { x: left + plotW / 2, y: height - 8, "text-anchor": "middle", text: "the match, trick by trick" }));
  for (const m of marks) {
    if (m.kind === "round") chart.append(svg("line", { class: "round-end", x1: X(m.at), x2: X(m.at), y1: top, y2: top + plotH }));
  }
  seating.forEach((_, s) => {
    chart.append(svg("polyline", { class: `seat-line seat-line-${s}`, "data-seat": s,
      points: points.map((p) => `${X(p.at).toFixed(1)},${Y(p.totals[s]).toFixed(1)}`).join(" ") }));
  });
  const byAt = new Map(line.points.map((p) => [p.at, p]));
  for (const m of marks) {
    if (m.kind === "fault") {
      chart.append(svg("path", { class: "fault-mark", d: `M${X(m.at)} ${top}l-5 -9h10z` }, svg("title", { text: m.text })));
    } else if (m.kind === "swing" && byAt.has(m.at)) {
      const y = Y(byAt.get(m.at).totals[m.seat]);
      chart.append(svg("path", { class: "swing-mark", d: `M${X(m.at)} ${y - 6}l6 6l-6 6l-6 -6z` }, svg("title", { text: m.text })));
    }
  }
  chart.append(svg("line", { class: "cursor", id: "graph-cursor", x1: X(at), x2: X(at), y1: top - 4, y2: top + plotH }));
  // The whole plot takes the tap: the nearest moment with a total.
  const pad = svg("rect", { class: "tap", x: left - 8, y: 0, width: plotW + 16, height: top + plotH + 8 });
  chart.append(pad);
  chart.addEventListener("click", (e) => {
    const box = chart.getBoundingClientRect();
    const i = Math.round(((e.clientX - box.left) * (width / box.width) - left) / plotW * last);
    const near = line.points.reduce((best, p) => (Math.abs(p.at - i) < Math.abs(best.at - i) ? p : best), line.points[0]);
    if (near) go(near.at);
  });
  const legend = el("p", { class: "graph-legend", id: "graph-legend" },
    seating.map((b, s) => el("span", { class: "key" }, el("span", { class: `swatch seat-line-${s}`, "aria-hidden": "true" }), b)));
  const list = el("ul", { class: "marks-list", id: "marks-list", "aria-label": "marks: the rounds' ends, the faults, the largest swings" },
    marks.map((m) => el("li", {}, el("button", { type: "button", class: `mark mark-${m.kind}`, "data-step": m.at, onclick: () => go(m.at), text: m.text }))));
  const note = hiding ? [el("p", { class: "muted", text: "Drawn up to the moment shown: the result is hidden." })] : [];
  container.replaceChildren(el("h2", { id: "graph-title", text: "The match at a glance" }), chart, legend, ...note, list);
}

// The marks on the scrubber's track (a picture only: the buttons under the graph go there).
export function trackMarks(strip, line, last, at, hiding) {
  strip.replaceChildren(...shownAt(line.marks, at, hiding).map((m) => el("span", { class: `tick tick-${m.kind}`, "data-at": m.at })));
  // (placed through the style object: the pages' CSP allows no style attribute)
  for (const tick of strip.children) tick.style.left = `calc(8px + (100% - 16px) * ${Number(tick.dataset.at) / Math.max(1, last)})`;
}
