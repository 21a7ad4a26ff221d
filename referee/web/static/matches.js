// Running and recent matches, with the progress of a tournament. Left open, the page asks
// only for what finished since the newest match it shows (/api/matches?after=N), and
// only when the update stream says that a match finished or started (at most every
// LIST_EVERY_MS).
import { api, el, fmt, signed, botLink, matchLink, frame, showError, progressLine, query, scrollable, fill, followUpdates, paced } from "/static/common.js";

const main = document.getElementById("main");
const LIMIT = 100;
// A busy league finishes a match every few seconds: the list takes them in together.
const LIST_EVERY_MS = 10000;

// The seats in order, each on one line; with the result, each seat's place and score,
// the winners (place 1) marked.
function seatList(seating, places, totals) {
  return el("span", {}, seating.flatMap((bot, s) => {
    const comma = s < seating.length - 1 ? "," : "";
    if (!places) return [s ? " " : "", el("span", { class: "seat-entry" }, botLink(bot), comma)];
    const won = places[s] === 1;
    return [s ? " " : "", el("span", { class: `seat-entry${won ? " winner" : ""}`, title: won ? "winner" : null },
      won ? [el("span", { class: "win-mark", "aria-hidden": "true", text: "★" }), " "] : null,
      botLink(bot), " ", el("span", { class: "result", text: `(${places[s]}. ${signed(totals[s])})` }),
      won ? el("span", { class: "sr-only", text: " (winner)" }) : null, comma)];
  }));
}

// ?before=N: the page of older matches that finished before the N-th.
const before = query("before");
let shown = [];  // the finished matches on the page, newest first

function runningPart(doc) {
  return doc.running.length
    ? scrollable(el("table", { id: "running" }, el("thead", {}, el("tr", {}, el("th", { class: "text", text: "Match" }), el("th", { class: "text", text: "Seating" }))),
      el("tbody", {}, doc.running.map((m) => el("tr", { "data-match": m.match_id },
        el("td", { class: "text id" }, matchLink(m.match_id), " ", el("span", { class: "pill live", text: "live" })),
        el("td", { class: "text" }, seatList(m.seating)))))))
    : el("p", { class: "muted", text: "No match is running." });
}

function finishedRow(m) {
  return el("tr", { "data-match": m.match_id },
    el("td", { class: "text id" }, matchLink(m.match_id)),
    el("td", { class: "text" }, seatList(m.seating, m.places, m.totals)),
    el("td", { text: fmt(m.faults.reduce((a, b) => a + b, 0)) }));
}

function pagesPart() {
  const nextBefore = shown.length === LIMIT ? shown[LIMIT - 1].finish_order : null;
  return el("p", { id: "pages" },
    before ? el("a", { href: "/matches", text: "← newest" }) : "",
    before && nextBefore ? " · " : "",
    nextBefore ? el("a", { id: "older", href: `/matches?before=${nextBefore}`, text: "older →" }) : "");
}

let drawnProgress = "", drawnRunning = "";

function draw(doc) {
  const finished = shown.length
    ? [scrollable(el("table", { id: "finished" }, el("thead", {}, el("tr", {}, el("th", { class: "text", text: "Match" }), el("th", { class: "text", text: "Seating (place, score)" }), el("th", { text: "Strikes" }))),
      el("tbody", {}, shown.map(finishedRow)))),
      el("p", { class: "muted", id: "winner-key", text: "★ the winner (place 1)" })]
    : el("p", { class: "muted", text: before ? "No older match." : "No finished match yet." });
  fill(main, el("h1", { text: "Matches" }), progressLine(doc.progress),
    el("h2", { id: "running-now", text: "Running now" }), el("div", { id: "running-box" }, runningPart(doc)),
    el("h2", { text: "Finished, newest first" }), finished, pagesPart());
  drawnProgress = JSON.stringify(doc.progress);
  drawnRunning = JSON.stringify(doc.running);
}

async function render() {
  const doc = await api(`/api/matches?limit=${LIMIT}${before ? `&before=${encodeURIComponent(before)}` : ""}`);
  shown = doc.finished;
  draw(doc);
}

// What changed since the newest match shown: the progress, the running matches and the
// matches finished since, each put in place (the whole first page again only when more
// than a page came, or the server's numbering moved under the page).
async function update() {
  const newest = shown.length ? shown[0].finish_order : 0;
  const doc = await api(`/api/matches?limit=${LIMIT}&after=${newest}`);
  if (doc.newest < newest || doc.finished.length === LIMIT) return render();
  const body = document.querySelector("#finished tbody");
  if (doc.finished.length && !body) {
    shown = [...doc.finished, ...shown].slice(0, LIMIT);
    return draw(doc);
  }
  if (doc.finished.length) {
    shown = [...doc.finished, ...shown].slice(0, LIMIT);
    body.prepend(...doc.finished.map(finishedRow));
    while (body.rows.length > LIMIT) body.lastElementChild.remove();
    document.getElementById("pages").replaceWith(pagesPart());
  }
  const progress = JSON.stringify(doc.progress), running = JSON.stringify(doc.running);
  if (progress !== drawnProgress) {
    main.querySelector(".progress").replaceWith(progressLine(doc.progress));
    drawnProgress = progress;
  }
  if (running !== drawnRunning) {
    document.getElementById("running-box").replaceChildren(runningPart(doc));
    drawnRunning = running;
  }
}

async function refresh(step) {
  try { await step(); } catch (e) { showError(main, e); }
}

await frame("Matches · Sticheln referee");
await refresh(render);
if (!before) {  // an older page does not change
  // A failed ask (the server gone a moment) leaves the list as it is: the next event asks again.
  const step = paced(() => update().catch(() => { /* the next event asks again */ }), LIST_EVERY_MS);
  followUpdates((ev, changed) => {
    const newest = shown.length ? shown[0].finish_order : 0;
    if (ev.versions && (ev.versions.matches !== newest || changed.has("running"))) step();
    else {
      const progress = JSON.stringify(ev, ["finished", "planned", "running", "matches_per_s", "eta_s"]);
      if (progress !== drawnProgress && main.querySelector(".progress")) {
        main.querySelector(".progress").replaceWith(progressLine(ev));
        drawnProgress = progress;
      }
    }
  });
}
