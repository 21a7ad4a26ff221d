// The standings: published ratings with their intervals, live Elo and statistics;
// fetched again when they are published again (the update stream names their version).
import { api, apiTagged, el, fmt, interval, signed, botLink, frame, showError, errorBarChart, progressLine, scrollable, chartWidth, fill, followUpdates, redrawOnResize, UNMEASURED } from "/static/common.js";
import { seasonsSection } from "/static/seasons.js";

const main = document.getElementById("main");
// What Rating and Live Elo are: the server writes it; kept across redraws.
const terms = document.getElementById("terms");
const HEADS = ["Rank", "Bot", "Rating", "95% interval", "Live Elo", "Matches", "Mean score", "Mean place", "Strikes"];
// On a phone these wait behind the "more columns" switch (its state survives a redraw).
const MORE = new Set([3, 5, 6, 7, 8]);
let progress = null;
// The versions drawn: the standings' and the bots' ETags.
const known = {};

let standings = null, bots = null;

// `what`: the documents to ask for again (both at first; then what the update stream says
// changed).
async function render(what = ["standings", "bots"]) {
  const asked = await Promise.all(what.map((name) => apiTagged(`/api/${name}`)));
  what.forEach((name, i) => {
    known[name] = asked[i].etag;
    if (name === "standings") standings = asked[i].body;
    else bots = asked[i].body;
  });
  if (!progress) progress = (await api("/api/info")).progress;
  const seasons = await seasonsSection();  // a league's finals, under the ladder
  const rows = standings.standings;
  const more = (i) => (MORE.has(i) ? "more" : null);
  const body = rows.map((r) => el("tr", { "data-bot": r.bot },
    el("td", { text: r.rank ?? "–" }),
    el("td", { class: "text" }, botLink(r.bot), r.provisional ? [" ", el("span", { class: "pill", title: "too few matches to be ranked", text: "provisional" })] : null),
    el("td", { text: fmt(r.rating) }),
    el("td", { class: "more", text: interval(r) }),
    el("td", { class: "live-elo", text: fmt(r.live_elo) }),
    el("td", { class: "matches more", text: fmt(r.matches) }),
    el("td", { class: "more", text: signed(r.mean_score, 1) }),
    el("td", { class: "more", text: fmt(r.mean_place, 2) }),
    el("td", { class: "more", text: fmt(r.faults) })));
  const table = el("table", { id: "standings" },
    el("thead", {}, el("tr", {}, HEADS.map((h, i) => el("th", { class: [i === 1 ? "text" : "", more(i) || ""].join(" ").trim() || null, text: h })))),
    el("tbody", {}, body));
  const open = document.getElementById("all-columns")?.checked;
  const toggle = [el("input", { type: "checkbox", class: "more-toggle", id: "all-columns", checked: open ? "checked" : null }),
    el("label", { class: "more-label", for: "all-columns", text: `Show ${MORE.size} more columns` })];
  const published = standings.published_at ? new Date(standings.published_at * 1000).toLocaleTimeString() : "not yet";
  const rated = new Set(rows.map((r) => r.bot));
  const unrated = bots.bots.map((b) => b.name).filter((b) => !rated.has(b)).sort();
  // What "not measurable" and the anchor's interval mean, where they appear.
  const notes = [
    rows.some((r) => r.unidentified) ? `“${UNMEASURED}”: the bootstrap cannot measure this rating's spread (every resample gave the same order, or a match or two are all that link the bot to the others), so no interval is claimed.` : null,
    rows.some((r) => r.anchor) ? "The anchor's rating is the scale's fixed point (1500), not an estimate." : null,
  ].filter(Boolean);
  fill(main,
    el("h1", { text: "Standings" }),
    progressLine(progress),
    el("p", { class: "muted", id: "standings-meta", "data-matches": standings.matches,
      text: `From ${standings.matches} finished matches (published ${published}). Provisional bots (too few matches) are listed after the others, unranked.` }),
    terms,
    rows.length ? [toggle, scrollable(table)] : el("p", { class: "muted", id: "no-standings", text: "No finished match yet." }),
    notes.length ? el("p", { class: "muted", id: "interval-note", text: notes.join(" ") }) : null,
    unrated.length ? [el("h2", { text: "No rated match yet" }), el("p", { id: "unrated" }, unrated.flatMap((b, i) => [i ? ", " : "", botLink(b)]))] : null,
    rows.length ? el("h2", { text: "Ratings with their 95% intervals" }) : null,
    rows.length ? errorBarChart(rows, chartWidth(main, CHART_WIDTH)) : null,
    seasons);
  charted = rows;
}

// The chart drawn again at the width it has when the window is resized.
const CHART_WIDTH = 770;
let charted = [];
redrawOnResize(main, CHART_WIDTH, () => {
  const chart = document.getElementById("ratings-chart");
  return chart ? Number(chart.getAttribute("width")) : null;
}, (width) => document.getElementById("ratings-chart").replaceWith(errorBarChart(charted, width)));

async function refresh(what) {
  try { await render(what); } catch (e) { showError(main, e); }
}

const info = await frame("Standings · Sticheln referee");
if (info) progress = info.progress;
await refresh();
// Live: the update stream says what changed (at most every few seconds). The progress
// comes in the event itself; the standings and the bots are asked again only when they
// were published again.
let pending = false;
followUpdates((ev, changed) => {
  progress = ev;
  const what = ["standings", "bots"].filter((name) => changed.has(name));
  if (what.length) {
    if (pending) return;
    pending = true;
    refresh(what).finally(() => { pending = false; });
  } else {
    const line = main.querySelector(".progress");
    if (line) line.replaceWith(progressLine(progress));
  }
}, known);
