// The standings: published ratings with their intervals, live Elo and statistics;
// fetched again whenever a match finishes.
import { api, el, fmt, interval, signed, botLink, frame, showError, errorBarChart, progressLine, scrollable, chartWidth, fill } from "/static/common.js";

const main = document.getElementById("main");

async function render() {
  const [standings, info, bots] = await Promise.all([api("/api/standings"), api("/api/info"), api("/api/bots")]);
  const rows = standings.standings;
  const body = rows.map((r) => el("tr", { "data-bot": r.bot },
    el("td", { text: r.rank ?? "–" }),
    el("td", { class: "text" }, botLink(r.bot), r.provisional ? [" ", el("span", { class: "pill", title: "too few matches to be ranked", text: "provisional" })] : null),
    el("td", { text: fmt(r.rating) }),
    el("td", { text: interval(r) }),
    el("td", { class: "live-elo", text: fmt(r.live_elo) }),
    el("td", { class: "matches", text: fmt(r.matches) }),
    el("td", { text: signed(r.mean_score, 1) }),
    el("td", { text: fmt(r.mean_place, 2) }),
    el("td", { text: fmt(r.faults) })));
  const table = el("table", { id: "standings" },
    el("thead", {}, el("tr", {}, ["Rank", "Bot", "Rating", "95% interval", "Live Elo", "Matches", "Mean score", "Mean place", "Faults"]
      .map((h, i) => el("th", { class: i === 1 ? "text" : null, text: h })))),
    el("tbody", {}, body));
  const published = standings.published_at ? new Date(standings.published_at * 1000).toLocaleTimeString() : "not yet";
  const rated = new Set(rows.map((r) => r.bot));
  const unrated = bots.bots.map((b) => b.name).filter((b) => !rated.has(b)).sort();
  fill(main, 
    el("h1", { text: "Standings" }),
    progressLine(info.progress),
    el("p", { class: "muted", id: "standings-meta", "data-matches": standings.matches,
      text: `Bradley–Terry ratings on the Elo scale with 95% bootstrap intervals, from ${standings.matches} finished matches (published ${published}); live Elo after the same matches. Provisional bots (too few matches) are listed after the others, unranked.` }),
    rows.length ? scrollable(table) : el("p", { class: "muted", id: "no-standings", text: "No finished match yet." }),
    unrated.length ? [el("h2", { text: "No rated match yet" }), el("p", { id: "unrated" }, unrated.flatMap((b, i) => [i ? ", " : "", botLink(b)]))] : null,
    rows.length ? el("h2", { text: "Ratings with their 95% intervals" }) : null,
    rows.length ? errorBarChart(rows, chartWidth(main, 770)) : null);
}

async function refresh() {
  try { await render(); } catch (e) { showError(main, e); }
}

await frame("Standings · Sticheln referee");
await refresh();
// Live: the server sends an event whenever a match starts or finishes or standings change.
const updates = new EventSource("/api/updates");
let pending = null;
updates.onmessage = () => {
  clearTimeout(pending);
  pending = setTimeout(refresh, 100);
};
