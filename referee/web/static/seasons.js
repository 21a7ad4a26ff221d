// A league's seasons, drawn under the ladder's standings: each ended season's final (its
// finalists with their frozen submissions, its standings, its deal key, its matches).
// A source without seasons (a tournament) has none: nothing is drawn.
import { api, el, fmt, interval, botLink, matchLink, scrollable } from "/static/common.js";

const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");
// The seasons whose list of matches is open: kept when the page is drawn again (a ladder
// match finishing redraws it).
const opened = new Set();

export async function seasonsSection() {
  let doc;
  try { doc = await api("/api/seasons"); } catch { return null; }  // drawn next time
  if (!doc.seasons.length) return null;
  return el("section", { id: "seasons" },
    el("h2", { text: "Seasons" }),
    el("p", { class: "muted", id: "current-season", "data-season": doc.current,
      text: `The standings above are the ladder's, in season ${doc.current} (since ${when(doc.current_since)}). Each season that ended froze every entry's playing submission and played a final of them: a duplicate round robin.` }),
    doc.seasons.map(final));
}

function final(s) {
  const sub = new Map(s.finalists.map((f) => [f.bot, f]));
  const done = s.status === "finished";
  const state = done
    ? `Final ended ${when(s.finished_at)}: ${s.finished} matches, ${s.deals} deals per table of ${s.table_size}, every deal played once per seat rotation.`
    : s.status === "cancelled"
      ? `Final cancelled by the organiser ${when(s.finished_at)}, after ${s.finished} of ${s.planned} matches: no standings; the matches that had finished are shown.`
      : `Final being played: ${s.finished} of ${s.planned} matches. Its standings and matches are shown once it has ended.`;
  const key = `Deal key commitment ${s.deal_key_commitment}` + (s.deal_key ? `; the key: ${s.deal_key}` : " (the key is published when the final has ended).");
  const rows = done && s.standings.length
    ? s.standings.map((r) => el("tr", { "data-bot": r.bot },
      el("td", { text: r.rank ?? "–" }),
      el("td", { class: "text" }, botLink(r.bot)),
      el("td", { class: "submission", text: `#${sub.get(r.bot)?.submission ?? "?"}` }),
      el("td", { text: fmt(r.rating) }),
      el("td", { text: interval(r) }),
      el("td", { text: fmt(r.matches) }),
      el("td", { text: fmt(r.mean_place, 2) })))
    : s.finalists.map((f) => el("tr", { "data-bot": f.bot },
      el("td", { text: "–" }),
      el("td", { class: "text" }, botLink(f.bot)),
      el("td", { class: "submission", text: `#${f.submission}` }),
      el("td", { text: "–" }), el("td", { text: "–" }), el("td", { text: "–" }), el("td", { text: "–" })));
  const heads = ["Rank", "Bot", "Submission", "Rating", "95% interval", "Matches", "Mean place"];
  const table = el("table", { class: "season-standings" },
    el("thead", {}, el("tr", {}, heads.map((h, i) => el("th", { class: i === 1 ? "text" : null, text: h })))),
    el("tbody", {}, rows));
  const matches = s.matches.length
    ? el("details", { class: "season-matches", open: opened.has(s.season) ? "open" : null },
      el("summary", { text: `The final's ${s.matches.length} matches` }),
      el("ul", {}, s.matches.map((m) => el("li", {}, matchLink(m.match_id), ` ${m.seating.join(", ")}`))))
    : null;
  matches?.addEventListener("toggle", () => {
    if (matches.open) opened.add(s.season); else opened.delete(s.season);
  });
  return el("div", { class: "season", "data-season": s.season, "data-status": s.status },
    el("h3", { text: `Season ${s.season} (${when(s.started_at)} to ${when(s.ended_at)})` }),
    el("p", { class: "muted", text: state }),
    el("p", { class: "muted deal-key", text: key }),
    scrollable(table),
    matches);
}
