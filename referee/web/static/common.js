// Shared helpers of the pages: the API, elements built from data (always as text, never
// as markup), the navigation bar, numbers, cards and small SVG charts.

export async function api(path) {
  return (await apiTagged(path)).body;
}

// A document and its ETag (what the update stream names when it changes).
export async function apiTagged(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  if (!response.ok) {
    const err = new Error((body && body.error) || `${path}: HTTP ${response.status}`);
    err.status = response.status;
    throw err;
  }
  return { body, etag: response.headers.get("ETag") };
}

// The server's update stream (/api/updates: at once, then at most one event every few
// seconds while anything changes). Each event is the progress with `versions`: the
// standings' and the bots' ETags, the newest finished match, the running matches' tag.
// `on(event, changed)` gets the set of the versions that differ from `known` (what the
// page drew; a version it does not know is taken from the first event), so that a page
// asks only for what changed.
export function followUpdates(on, known = {}, url = "/api/updates") {
  const source = new EventSource(url);
  let first = true;
  source.onmessage = (msg) => {
    let ev;
    try { ev = JSON.parse(msg.data); } catch { return; }
    const v = ev.versions || {};
    const changed = new Set();
    for (const [key, value] of Object.entries(v)) {
      if (key in known ? known[key] !== value : !first) changed.add(key);
      known[key] = value;
    }
    first = false;
    on(ev, changed);
  };
  return source;
}

// A bot's page and the head-to-head page, left open, are drawn again at most this often
// when the standings are published again (their documents weigh more than the standings).
export const AGAIN_MS = 30000;

// `fn` run at most once every `ms`: a call within that runs it once the time is up (one
// request at a time; a call while it runs runs it again after).
export function paced(fn, ms) {
  let last = -Infinity, timer = null, busy = false, again = false;
  const run = async () => {
    timer = null;
    if (busy) { again = true; return; }
    busy = true; last = performance.now();
    try { await fn(); } finally {
      busy = false;
      if (again) { again = false; call(); }
    }
  };
  const call = () => {
    if (timer !== null) return;
    timer = setTimeout(run, Math.max(0, last + ms - performance.now()));
  };
  return call;
}

// An element with attributes and children; strings become text nodes.
// The skip link the server writes first in the header: to the first step button where
// there is one (the match page, a compared pair), else to the content; the address (a
// viewer's position) is left as it is.
document.addEventListener("click", (event) => {
  const link = event.target instanceof Element && event.target.closest("a.skip");
  if (!link) return;
  const target = document.querySelector(link.dataset.skip || "#main") || document.getElementById("main");
  if (!target) return;
  event.preventDefault();
  if (!target.matches("button, a[href], input, select")) target.setAttribute("tabindex", "-1");
  target.focus();
  target.scrollIntoView({ block: "nearest" });
});

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function fmt(x, digits = 0) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  return Number(x).toFixed(digits);
}

// In place of an interval the bootstrap cannot measure, and of the anchor's (as the
// server writes them, referee/web/render.py).
export const UNMEASURED = "not measurable", ANCHOR = "none: the anchor";

// A 95% interval as text; an end the data cannot bound is open ("> 1850", "< 1160").
export function interval(r) {
  if (r.anchor) return ANCHOR;
  if (r.unidentified) return UNMEASURED;
  const low = r.ci_low ?? null, high = r.ci_high ?? null;
  if (low !== null && high !== null) return `${fmt(low)}–${fmt(high)}`;
  if (low !== null && r.ci_high_open) return `> ${fmt(low)}`;
  if (high !== null && r.ci_low_open) return `< ${fmt(high)}`;
  return r.ci_low_open || r.ci_high_open ? "open" : "–";
}

export function signed(x, digits = 0) {
  if (x === null || x === undefined) return "–";
  const text = Number(x).toFixed(digits);
  return x > 0 ? `+${text}` : text;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return h ? `${h}h${String(m).padStart(2, "0")}m` : `${m}m${String(r).padStart(2, "0")}s`;
}

export function botLink(name) {
  return el("a", { href: `/bot?name=${encodeURIComponent(name)}`, text: name, class: "bot" });
}

export function matchLink(id, text = id) {
  return el("a", { href: `/match?id=${encodeURIComponent(id)}`, text });
}

export function query(name) {
  return new URLSearchParams(location.search).get(name);
}

const PAGES = [
  ["/", "Standings"],
  ["/matches", "Matches"],
  ["/head-to-head", "Head to head"],
];

// The header: links to every page, and what is being served. The server writes it into
// the page; it is built here only when missing.
export async function frame(title) {
  let where = document.querySelector("body > header .where");
  if (!where) {
    const nav = el("nav", {}, PAGES.map(([href, text]) =>
      el("a", { href, text, "aria-current": location.pathname === href ? "page" : null })));
    where = el("span", { class: "where" });
    document.body.prepend(el("header", {}, el("span", { class: "brand", text: "Sticheln referee" }), nav, where));
  }
  document.title = title;
  try {
    const info = await api("/api/info");
    where.textContent = `${info.kind} ${info.name}`;
    return info;
  } catch (e) {
    where.textContent = "";
    return null;
  }
}

// Finished and planned matches; running, rate and ETA only while something is left.
export function progressLine(p) {
  const parts = [el("span", { id: "progress-done", text: p.planned === null ? `${p.finished} matches finished` : `${p.finished} / ${p.planned} matches` })];
  if (p.planned) parts.push(el("progress", { max: p.planned, value: p.finished }));
  if (p.planned !== null && p.finished >= p.planned && !p.running) {
    parts.push(el("span", { id: "progress-over", text: "all finished" }));
  } else {
    // The running matches are one click away: each opens its live table.
    parts.push(p.running ? el("a", { id: "progress-running", href: "/matches#running-now", text: `running ${p.running}` }) : el("span", { text: "running 0" }));
    parts.push(el("span", { text: `${p.matches_per_s === null ? "–" : fmt(p.matches_per_s * 60, 1)} matches/min` }));
    if (p.planned !== null) parts.push(el("span", { text: `ETA ${p.eta_s === null ? "–" : duration(p.eta_s)}` }));
  }
  return el("div", { class: "progress" }, parts);
}

// A wide table scrolls inside its box; the page itself never scrolls sideways.
export function scrollable(table) {
  return el("div", { class: "table-wrap" }, table);
}

// The width a chart is drawn at: its container's, within bounds (text stays 12 px).
export function chartWidth(container, wanted) {
  let w = document.documentElement.clientWidth - 24;
  if (container && container.clientWidth) {
    const style = getComputedStyle(container);
    w = container.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  }
  return Math.max(280, Math.min(wanted, Math.floor(w)));
}

// `draw(width)` again when the width a chart may take in `container` is no longer the
// width it was drawn at (`drawn()`: its width, null while there is none): a window
// resized, a phone turned. The redraw waits for the next frame, outside the observer.
export function redrawOnResize(container, wanted, drawn, draw) {
  let pending = false;
  new ResizeObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const width = chartWidth(container, wanted), was = drawn();
      if (was !== null && was !== width) draw(width);
    });
  }).observe(container);
}

// Put parts into a container; a missing part (null, undefined, false) is left out, never
// written as text.
// (It marks the container data-drawn: the script has drawn it, not only the server.)
export function fill(container, ...parts) {
  container.replaceChildren(...parts.flat(3).filter((x) => x !== null && x !== undefined && x !== false));
  container.dataset.drawn = "1";
}

export function showError(container, error) {
  container.replaceChildren(el("p", { class: "error", text: error.message }));
}

// -- cards ------------------------------------------------------------------------------
export const SUITS = {
  C: ["♣", "clubs"], S: ["♠", "spades"], H: ["♥", "hearts"], D: ["♦", "diamonds"],
  K: ["▲", "caps"], W: ["⇄", "switches"], P: ["◉", "planets"], R: ["★", "stars"],
};

export function card(text, extra = "") {
  if (!text) return el("span", { class: `card hidden ${extra}`, title: "hidden" });
  const suit = text[0], rank = text.slice(1);
  const [sym, name] = SUITS[suit] || ["?", suit];
  return el("span", { class: `card suit-${suit} ${extra}`, "data-card": text, title: `${rank} of ${name}` },
    el("span", { class: "rank", text: rank }), el("span", { class: "sym", text: sym }));
}

// -- SVG --------------------------------------------------------------------------------
const NS = "http://www.w3.org/2000/svg";

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined) continue;
    if (key === "text") node.textContent = String(value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

// Evenly spaced round ticks (steps of 1, 2 or 5 times a power of ten), so that the
// labels are evenly spaced numbers too.
export function niceTicks(lo, hi, count = 6) {
  const raw = Math.max(hi - lo, 1) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const ticks = [];
  const first = Math.floor(lo / step), last = Math.ceil(hi / step);
  for (let k = first; k <= last; k += 1) ticks.push(k * step);
  return ticks.length > 1 ? ticks : [lo, lo + step];
}

function tickText(t) {
  return String(Math.round(t * 1000) / 1000);
}

// Ratings as dots with their 95% intervals as error bars, one row per bot. An open end
// (the data cannot bound it) is an arrow running off the plot, not a closed bar; a
// provisional bot's name is marked.
export function errorBarChart(rows, width = 770) {
  const labelW = Math.min(190, Math.round(width * 0.34)), plotW = width - labelW - 20, rowH = 24, top = 10, bottom = 34;
  const values = rows.flatMap((r) => [r.rating, r.ci_low, r.ci_high]).filter((v) => v !== null && v !== undefined);
  const ticks = niceTicks(Math.min(...values, 1500), Math.max(...values, 1500), Math.max(3, Math.floor(plotW / 70)));
  const lo = ticks[0], hi = ticks[ticks.length - 1];
  const x = (v) => labelW + ((v - lo) / (hi - lo)) * plotW;
  const axisY = top + rowH * rows.length, height = axisY + bottom;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "ratings with 95% intervals", id: "ratings-chart" });
  for (const t of ticks) {
    chart.append(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: top, y2: axisY }),
      svg("text", { x: x(t), y: axisY + 16, "text-anchor": "middle", text: tickText(t) }));
  }
  chart.append(svg("line", { class: "axis", x1: labelW, x2: labelW + plotW, y1: axisY, y2: axisY }));
  const chars = Math.max(8, Math.floor(labelW / 7.5));
  rows.forEach((r, i) => {
    const y = top + rowH * i + rowH / 2;
    const full = r.provisional ? `${r.bot} (prov.)` : r.bot;
    const name = full.length > chars ? `${full.slice(0, chars - 1)}…` : full;
    chart.append(svg("text", { x: labelW - 8, y: y + 4, "text-anchor": "end", class: r.provisional ? "provisional" : null, text: name }));
    let tip = `${r.bot}: ${fmt(r.rating)}`;
    const low = r.ci_low ?? (r.ci_low_open ? lo : null), high = r.ci_high ?? (r.ci_high_open ? hi : null);
    if (low !== null && high !== null && !r.anchor) {
      tip += ` (95% interval ${interval(r)})`;
      const x1 = x(low), x2 = x(high);
      const openLow = r.ci_low === null || r.ci_low === undefined, openHigh = r.ci_high === null || r.ci_high === undefined;
      const end = (xe, open, dir) => (open
        ? svg("path", { class: "open-end", d: `M${xe} ${y}l${-6 * dir} -5v10z` })
        : svg("line", { class: "bar", x1: xe, x2: xe, y1: y - 5, y2: y + 5 }));
      chart.append(svg("g", { class: `errorbar${openLow || openHigh ? " open" : ""}${r.unidentified ? " unidentified" : ""}` }, svg("title", { text: tip }),
        svg("line", { class: `bar${openLow || openHigh ? " dashed" : ""}`, x1, x2, y1: y, y2: y }),
        end(x1, openLow, -1), end(x2, openHigh, 1)));
    }
    chart.append(svg("circle", { class: "dot", cx: x(r.rating), cy: y, r: 4 }, svg("title", { text: tip })));
  });
  return chart;
}

// A line chart of points {x, y}; the x axis counts, the y axis is labelled.
export function lineChart(points, yLabel, width = 696) {
  const left = 56, plotW = width - left - 20, plotH = 200, top = 10, bottom = 34;
  const height = top + plotH + bottom;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": yLabel });
  if (!points.length) return chart;
  const ys = points.map((p) => p.y), xs = points.map((p) => p.x);
  // A flat series still gets a readable scale; matches are counted in whole numbers.
  const ylo = Math.min(...ys), yhi = Math.max(...ys), pad = Math.max(0, 10 - (yhi - ylo)) / 2;
  const yt = niceTicks(ylo - pad, yhi + pad, 5);
  const xt = niceTicks(Math.min(...xs), Math.max(...xs, Math.min(...xs) + 1), Math.max(2, Math.floor(plotW / 90)))
    .filter((t) => Number.isInteger(t) && t >= Math.min(...xs) && t <= Math.max(...xs, Math.min(...xs) + 1));
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  const X = (v) => left + ((v - x0) / (x1 - x0)) * plotW;
  const Y = (v) => top + plotH - ((v - yt[0]) / (yt[yt.length - 1] - yt[0])) * plotH;
  for (const t of yt) {
    chart.append(svg("line", { class: "grid", x1: left, x2: left + plotW, y1: Y(t), y2: Y(t) }),
      svg("text", { x: left - 6, y: Y(t) + 4, "text-anchor": "end", text: tickText(t) }));
  }
  for (const t of xt) chart.append(svg("text", { x: X(t), y: top + plotH + 15, "text-anchor": "middle", text: tickText(t) }));
  chart.append(svg("line", { class: "axis", x1: left, x2: left + plotW, y1: top + plotH, y2: top + plotH }),
    svg("text", { x: left + plotW / 2, y: height - 6, "text-anchor": "middle", text: "matches played" }));
  chart.append(svg("polyline", { class: "line", points: points.map((p) => `${X(p.x)},${Y(p.y)}`).join(" ") }));
  if (points.length <= 80) for (const p of points) chart.append(svg("circle", { class: "dot", cx: X(p.x), cy: Y(p.y), r: 2.5 }, svg("title", { text: p.title || "" })));
  return chart;
}

// Horizontal bars (label, value) against a dashed limit line.
// A bar too short to see is drawn 3 px wide, its value written beside it; so is a
// measured 0 (a think time under the clock's resolution). No bar where there is no value.
export function barsWithLimit(bars, limit, unit, width = 650) {
  const labelW = 50, plotW = width - labelW - 90, rowH = 22, top = 8, bottom = 34;
  const height = top + rowH * bars.length + bottom;
  const max = Math.max(limit || 0, ...bars.map((b) => b.value || 0), 1e-9) * 1.05;
  const X = (v) => labelW + (v / max) * plotW;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "think times against the clock" });
  bars.forEach((b, i) => {
    const y = top + rowH * i;
    chart.append(svg("text", { x: labelW - 6, y: y + 15, "text-anchor": "end", text: b.label }),
      svg("rect", { class: "hbar", x: labelW, y: y + 3, width: b.value === null || b.value === undefined ? 0 : Math.max(3, X(b.value) - labelW), height: rowH - 6 }),
      svg("text", { x: Math.max(X(b.value || 0), labelW + 3) + 4, y: y + 15, text: `${fmt(b.value, b.value !== null && b.value < 1 ? 2 : 1)} ${unit}` }));
  });
  const axisY = top + rowH * bars.length;
  chart.append(svg("line", { class: "axis", x1: labelW, x2: labelW + plotW, y1: axisY, y2: axisY }));
  if (limit) {
    chart.append(svg("line", { class: "limit", x1: X(limit), x2: X(limit), y1: top, y2: axisY }),
      svg("text", { x: X(limit), y: axisY + 16, "text-anchor": X(limit) > width - 60 ? "end" : "middle", text: `clock ${fmt(limit)} ${unit}` }));
  }
  return chart;
}
