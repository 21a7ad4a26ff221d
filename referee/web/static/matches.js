// Running and recent matches, with the progress of a tournament.
import { api, el, fmt, signed, botLink, matchLink, frame, showError, progressLine, query, scrollable, fill } from "/static/common.js";

const main = document.getElementById("main");

function seatList(seating, places, totals) {
  return el("span", {}, seating.flatMap((bot, s) => [
    s ? ", " : "",
    botLink(bot),
    places ? el("span", { class: "muted", text: ` (${places[s]}. ${signed(totals[s])})` }) : "",
  ]));
}

// ?before=N: the page of older matches that finished before the N-th.
const before = query("before");

async function render() {
  const doc = await api(`/api/matches?limit=100${before ? `&before=${encodeURIComponent(before)}` : ""}`);
  const running = doc.running.length
    ? scrollable(el("table", { id: "running" }, el("thead", {}, el("tr", {}, el("th", { class: "text", text: "Match" }), el("th", { class: "text", text: "Seating" }))),
      el("tbody", {}, doc.running.map((m) => el("tr", { "data-match": m.match_id },
        el("td", { class: "text" }, matchLink(m.match_id), " ", el("span", { class: "pill live", text: "live" })),
        el("td", { class: "text" }, seatList(m.seating)))))))
    : el("p", { class: "muted", text: "No match is running." });
  const finished = doc.finished.length
    ? scrollable(el("table", { id: "finished" }, el("thead", {}, el("tr", {}, el("th", { class: "text", text: "Match" }), el("th", { class: "text", text: "Seating (place, score)" }), el("th", { text: "Faults" }))),
      el("tbody", {}, doc.finished.map((m) => el("tr", { "data-match": m.match_id },
        el("td", { class: "text" }, matchLink(m.match_id)),
        el("td", { class: "text" }, seatList(m.seating, m.places, m.totals)),
        el("td", { text: fmt(m.faults.reduce((a, b) => a + b, 0)) }))))))
    : el("p", { class: "muted", text: before ? "No older match." : "No finished match yet." });
  const pages = el("p", { id: "pages" },
    before ? el("a", { href: "/matches", text: "← newest" }) : "",
    before && doc.next_before ? " · " : "",
    doc.next_before ? el("a", { id: "older", href: `/matches?before=${doc.next_before}`, text: "older →" }) : "");
  fill(main, el("h1", { text: "Matches" }), progressLine(doc.progress),
    el("h2", { text: "Running now" }), running, el("h2", { text: "Finished, newest first" }), finished, pages);
}

async function refresh() {
  try { await render(); } catch (e) { showError(main, e); }
}

await frame("Matches · Sticheln referee");
await refresh();
if (!before) {  // an older page does not change
  const updates = new EventSource("/api/updates");
  updates.onmessage = () => refresh();
}
