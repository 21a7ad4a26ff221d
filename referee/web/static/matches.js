// Running and recent matches, with the progress of a tournament. Left open, the page asks
// nothing more: its update stream (/api/updates?after=N) brings what finished since the
// newest match it shows and the running matches when they change.
import { api, el, fmt, signed, botLink, matchLink, frame, showError, progressLine, query, scrollable, fill, followUpdates } from "/static/common.js";

const main = document.getElementById("main");
const LIMIT = 100;  // the server's LIST_ROWS

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

// A league's seasons' finals (the newest page only): each one's state, and the matches of
// each that has ended, marked as its season's final (render.py's finals, in script).
let finals = [];
const FINAL_WAIT = "its matches are listed once it has ended (the seatings of a duplicate deal share their hands)";
const FINAL_UNRATED = "unrated: they change no rating on the ladder; the final's own standings are in the Seasons section of the standings page";

function finalState(f) {
  return f.status === "playing"
    ? `The final of season ${f.season} is being played (${f.finished} of ${f.planned} matches): ${FINAL_WAIT}.`
    : f.status === "cancelled"
      ? `The final of season ${f.season}, cancelled by the organiser after ${f.finished} of ${f.planned} matches: those matches, ${FINAL_UNRATED}.`
      : `The final of season ${f.season}: ${f.finished} matches, ${FINAL_UNRATED}.`;
}

function finalsPart() {
  if (!finals.length) return "";
  return el("div", { id: "finals-box" }, el("h2", { id: "finals", text: "Finals of the seasons" }),
    finals.map((f) => el("section", { class: "final", "data-season": f.season, "data-status": f.status },
      el("h3", { text: `Final of season ${f.season}` }),
      el("p", { class: "muted", text: finalState(f) }),
      f.matches.length
        ? scrollable(el("table", { id: `final-${f.season}` }, el("thead", {}, el("tr", {}, el("th", { class: "text", text: "Match" }), el("th", { class: "text", text: "Seating (place, score)" }), el("th", { text: "Strikes" }))),
          el("tbody", {}, f.matches.map((m) => el("tr", { "data-match": m.match_id },
            el("td", { class: "text id" }, matchLink(m.match_id), " ", el("span", { class: "pill final", text: `final of season ${f.season}` })),
            el("td", { class: "text" }, seatList(m.seating, m.places, m.totals)),
            el("td", { text: fmt(m.faults.reduce((a, b) => a + b, 0)) }))))))
        : "")));
}

let drawnProgress = "", drawnRunning = "";
const PROGRESS = ["finished", "planned", "running", "matches_per_s", "eta_s"];

function draw(doc) {
  const finished = shown.length
    ? [scrollable(el("table", { id: "finished" }, el("thead", {}, el("tr", {}, el("th", { class: "text", text: "Match" }), el("th", { class: "text", text: "Seating (place, score)" }), el("th", { text: "Strikes" }))),
      el("tbody", {}, shown.map(finishedRow)))),
      el("p", { class: "muted", id: "winner-key", text: "★ the winner (place 1)" })]
    : el("p", { class: "muted", text: before ? "No older match." : "No finished match yet." });
  fill(main, el("h1", { text: "Matches" }), progressLine(doc.progress),
    el("h2", { id: "running-now", text: "Running now" }), el("div", { id: "running-box" }, runningPart(doc)),
    el("h2", { text: "Finished, newest first" }), finished, pagesPart(), finalsPart());
  drawnProgress = JSON.stringify(doc.progress, PROGRESS);
  drawnRunning = JSON.stringify(doc.running);
}

async function render() {
  const doc = await api(`/api/matches?limit=${LIMIT}${before ? `&before=${encodeURIComponent(before)}` : ""}`);
  shown = doc.finished;
  finals = doc.finals || [];
  draw(doc);
}

// What an update event brings a list left open (/api/updates?after=N): the matches finished
// since the last event, as compact rows, newest first, and the running matches when they
// changed; each is put in place (the whole first page again only when the server's
// numbering moved under the page).
const unpack = ([match_id, finish_order, seating, places, totals, faults]) =>
  ({ match_id, finish_order, seating, places, totals, faults });

function update(ev) {
  const newest = shown.length ? shown[0].finish_order : 0;
  if (ev.versions.matches < newest) return refresh(render);
  const rows = (ev.new_matches || []).map(unpack).filter((m) => m.finish_order > newest);
  const body = document.querySelector("#finished tbody");
  const doc = { progress: ev, running: ev.running_matches };
  if (rows.length && (!body || rows.length >= LIMIT)) {
    shown = [...rows, ...shown].slice(0, LIMIT);
    return draw({ ...doc, running: doc.running || JSON.parse(drawnRunning || "[]") });
  }
  if (rows.length) {
    shown = [...rows, ...shown].slice(0, LIMIT);
    body.prepend(...rows.map(finishedRow));
    while (body.rows.length > LIMIT) body.lastElementChild.remove();
    document.getElementById("pages").replaceWith(pagesPart());
  }
  const progress = JSON.stringify(doc.progress, PROGRESS);
  if (progress !== drawnProgress && main.querySelector(".progress")) {
    main.querySelector(".progress").replaceWith(progressLine(doc.progress));
    drawnProgress = progress;
  }
  const running = JSON.stringify(doc.running);
  if (doc.running && running !== drawnRunning) {
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
  const newest = shown.length ? shown[0].finish_order : 0;
  followUpdates((ev, changed) => {
    // A final started or ended: the page is asked for again (its finals with it).
    if (changed.has("finals")) return refresh(render);
    try { update(ev); } catch (e) { showError(main, e); }
  }, {}, `/api/updates?after=${newest}`);
}
