// A bot: its entry and versions, rating over matches, think times against the clock,
// faults by reason and its latest matches.
import { api, el, fmt, interval, signed, botLink, matchLink, frame, showError, query, lineChart, barsWithLimit, scrollable, chartWidth, fill, followUpdates, paced, AGAIN_MS } from "/static/common.js";

const main = document.getElementById("main");

function definitionList(pairs) {
  return el("table", { class: "entry" }, el("tbody", {}, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => el("tr", {}, el("th", { class: "text", text: k }), el("td", { class: "text" }, v)))));
}

// A table that fits a phone: below 600 px each row is a block of labelled lines
// (app.css, table.stacked), so no column runs off the screen.
function stacked(id, heads, rows) {
  return el("table", { id, class: "stacked" },
    el("thead", {}, el("tr", {}, heads.map((h) => el("th", { class: "text", text: h })))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c, i) =>
      el("td", { class: "text", "data-label": heads[i] }, c))))));
}

// Fair play (docs/fairplay.md): the figure, what it means, and for a flagged bot the
// decisions that weigh most, each a link to its moment in the match viewer.
function fairPlay(f) {
  const parts = [el("h2", { id: "fairplay", text: "Fair play" })];
  if (!f) {
    parts.push(el("p", { class: "muted", id: "fairplay-figure", text: "No fair-play figures here yet (referee fairplay writes them; a league computes them as matches arrive)." }));
    return parts;
  }
  const [low, high] = f.interval || [null, null];
  const range = low === null ? "" : ` (95% interval ${signed(low, 2)} to ${signed(high, 2)})`;
  parts.push(el("p", { id: "fairplay-figure" },
    el("strong", { text: f.flagged ? "Flagged: a question for the organiser. " : "Not flagged. " }),
    `Its choices fit the real deal by ${f.statistic === null ? "–" : signed(f.statistic, 2)} points per decision more than deals its seat could not tell from it${range}, over ${f.decisions} decisions; p-value ${f.p_value !== null && f.p_value < 0.001 ? "below 0.001" : fmt(f.p_value, 3)}.`));
  const alpha = (f.test && f.test.alpha) || 0.01;
  parts.push(el("p", { class: "muted", id: "fairplay-note", text:
    "For every decision, the referee plays the chosen card (or pain card) out on the real deal and on deals that agree with everything the bot's seat could see, and compares. " +
    "A bot that decides only from what its seat sees cannot do better on the real deal than on those, however strong it is: its figure is 0 up to chance. " +
    `A bot is flagged when chance would explain its figure less than once in ${Math.round(1 / alpha)} times, a bound that holds however often the figure is looked at. ` +
    "A flag asks the organiser to look at the decisions below; it is not a verdict: luck alone flags an honest bot now and then." }));
  if (f.flagged && f.weighing_most && f.weighing_most.length) {
    parts.push(el("p", { text: "The decisions that weigh most: open each at its moment in the match viewer." }),
      stacked("fairplay-decisions", ["Decision", "Match", "Fits the real deal by", "Rank among imagined deals"],
        f.weighing_most.map((d) => [
          el("a", { href: `/match?id=${encodeURIComponent(d.match_id)}#${d.moment}`, text: d.kind === "pain" ? `round ${d.round}, pain card` : `round ${d.round}, trick ${d.trick}` }),
          matchLink(d.match_id), signed(d.excess, 2), fmt(d.rank, 2)])));
  }
  return parts;
}

// The owner's logs: its bot's stderr in ranked matches and its validation reports, shown
// to whoever presents the entry's token (sent in a header, to this league only, not kept).
function ownerLogs(name) {
  const out = el("div", { id: "owner-logs" });
  const input = el("input", { type: "password", id: "owner-token", autocomplete: "off" });
  const show = async (ev) => {
    ev.preventDefault();
    const response = await fetch(`/api/logs?name=${encodeURIComponent(name)}`,
      { headers: { Accept: "application/json", Authorization: `Bearer ${input.value.trim()}` } });
    let body = null;
    try { body = await response.json(); } catch { body = null; }
    if (!response.ok) {
      fill(out, el("p", { class: "error", id: "logs-error", text: (body && body.error) || `HTTP ${response.status}` }));
      return;
    }
    const entry = (summary, text) => el("details", {}, el("summary", { text: summary }), el("pre", { class: "log", text }));
    fill(out,
      el("p", { class: "muted", text: `Match logs are kept ${body.retention_days} days, each its last part only.` }),
      body.matches.length ? body.matches.map((m) => entry(`${m.match_id} · submission ${m.submission} · seat ${m.seats.join(", ")}${m.truncated ? " · its beginning cut" : ""}`, m.text))
        : el("p", { class: "muted", text: "No ranked match's log yet." }),
      body.validation.map((v) => entry(`validation of submission ${v.submission} (${v.status})`, v.report)));
  };
  return el("div", {},
    el("p", { class: "muted", text: "The entry's owner reads its bot's stderr in ranked matches and its validation reports with its bot token." }),
    el("form", { id: "logs-form", onsubmit: show }, el("label", { for: "owner-token", text: "Bot token " }), input, " ",
      el("button", { type: "submit", text: "Show its logs" })),
    out);
}

async function render(name) {
  const doc = await api(`/api/bot?name=${encodeURIComponent(name)}`);
  const e = doc.entry || {};
  const s = doc.standing;
  const parts = [el("h1", { id: "bot-name", text: doc.bot })];
  parts.push(definitionList([
    ["Description", e.description ? el("span", { id: "bot-description", text: e.description }) : null],
    ["Registered", e.registered_at ? new Date(e.registered_at * 1000).toLocaleString() : null],
    ["Status", e.active === undefined ? null : e.hosted
      ? el("span", { id: "bot-status", text: `hosted: ${e.status}${e.playing_submission ? `, playing submission ${e.playing_submission}` : ""}${e.refusal ? ` (submission ${e.submission} refused: ${e.refusal})` : ""}` })
      : `${e.active ? "active" : "revoked"}, ${e.connected_streams || 0} stream(s) connected`],
    ["Rating", s ? `${fmt(s.rating)} (95% interval ${interval(s)}), ${s.rank === null || s.rank === undefined ? "provisional, not ranked" : `rank ${s.rank}`}` : "not rated yet"],
    ["Live Elo", s ? fmt(s.live_elo) : null],
    ["Matches", String(doc.matches)],
    ["Mean score", signed(doc.mean_score, 1)],
    ["Mean place", fmt(doc.mean_place, 2)],
  ]));
  if (doc.versions && doc.versions.length > 1) {
    parts.push(el("h2", { text: "Versions" }), stacked("versions", ["Version", "Entry", "Succeeds", "Description", "Active"],
      doc.versions.map((v) => [`v${v.version}`, botLink(v.name), v.previous_version ? botLink(v.previous_version) : "–",
        v.description || "", v.active ? "yes" : "no"])));
  }
  if (doc.submissions && doc.submissions.length) {
    const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");
    const rated = (u) => (u.rating === null || u.rating === undefined ? "–"
      : `${fmt(u.rating)}${u.ci_low === null || u.ci_low === undefined ? "" : ` (${fmt(u.ci_low)} to ${fmt(u.ci_high)})`}`);
    parts.push(el("h2", { text: "Submissions" }), el("p", { class: "muted", text: "Each submission is rated on its own matches alone; the entry's rating is its playing submission's." }),
      stacked("submissions", ["#", "Status", "Rating (95% interval)", "Matches", "Submitted", "Decided", "SHA-256", "Refusal"],
        doc.submissions.map((u) => [String(u.number), u.status, rated(u), String(u.matches || 0), when(u.submitted_at), when(u.decided_at),
          el("span", { class: "hash", title: u.sha256, text: u.sha256.slice(0, 12) }), u.refusal || ""])));
  }
  if (e.hosted) parts.push(el("h2", { text: "Its logs (for its owner)" }), ownerLogs(doc.bot));
  parts.push(el("h2", { text: "Live Elo over its matches" }));
  parts.push(doc.rating_history.length
    ? lineChart(doc.rating_history.map((h) => ({ x: h.nth, y: h.elo, title: `${h.match_id}: place ${h.place}, Elo ${fmt(h.elo)}` })), "live Elo over matches", chartWidth(main, 696))
    : el("p", { class: "muted", text: "No finished match yet." }));
  if (doc.rating_history.length > 1 && doc.rating_history[doc.rating_history.length - 1].nth > doc.rating_history.length) {
    parts.push(el("p", { class: "muted", id: "history-note", text: "Long histories are thinned: the Elo after every k-th match (at most 200 points, evenly spaced) and after the latest." }));
  }
  const think = doc.think;
  parts.push(el("h2", { text: `Think time per decision (${think.decisions} decisions)` }));
  parts.push(barsWithLimit(think.percentiles.map((p) => ({ label: p.q === 1 ? "max" : `p${Math.round(p.q * 100)}`, value: p.ms })), think.decision_ms, "ms", chartWidth(main, 650)));
  parts.push(el("p", { class: "muted", id: "think-note", text: `Percentiles from a log-scale histogram of every decision: within ${fmt(100 * think.relative_error, 1)}% of the exact value; the max is exact.` }));
  parts.push(el("h2", { text: "Faults by reason" }));
  const reasons = Object.entries(doc.faults);
  parts.push(reasons.length
    ? el("table", { id: "faults" }, el("tbody", {}, reasons.map(([r, n]) => el("tr", {}, el("th", { class: "text", text: r }), el("td", { text: n })))))
    : el("p", { class: "muted", text: "No fault." }));
  parts.push(...fairPlay(doc.fairplay));
  parts.push(el("h2", { text: "Latest matches" }));
  parts.push(doc.recent_matches.length
    ? scrollable(el("table", { id: "recent" }, el("thead", {}, el("tr", {}, ["Match", "Seating", "Place", "Score"].map((h, i) => el("th", { class: i < 2 ? "text" : null, text: h })))),
      el("tbody", {}, doc.recent_matches.map((m) => {
        const seat = m.seating.indexOf(doc.bot);
        return el("tr", {}, el("td", { class: "text id" }, matchLink(m.match_id)),
          el("td", { class: "text" }, m.seating.flatMap((b, i) => [i ? ", " : "", botLink(b)])),
          el("td", { text: m.places[seat] }), el("td", { text: signed(m.totals[seat]) }));
      }))))
    : el("p", { class: "muted", text: "None yet." }));
  if (doc.finals && doc.finals.length) {
    // Its matches in the seasons' finals that have ended: unrated on the ladder.
    parts.push(el("h2", { id: "finals", text: "Its matches in the seasons' finals" }),
      el("p", { class: "muted", text: "Unrated: they change no rating on the ladder; the final's own standings are in the Seasons section of the standings page." }),
      scrollable(el("table", { id: "final-matches" }, el("thead", {}, el("tr", {}, ["Match", "Seating", "Place", "Score"].map((h, i) => el("th", { class: i < 2 ? "text" : null, text: h })))),
        el("tbody", {}, doc.finals.map((m) => {
          const seat = m.seating.indexOf(doc.bot);
          return el("tr", { "data-match": m.match_id, "data-season": m.season },
            el("td", { class: "text id" }, matchLink(m.match_id), " ", el("span", { class: "pill final", text: `final of season ${m.season}` })),
            el("td", { class: "text" }, m.seating.flatMap((b, i) => [i ? ", " : "", botLink(b)])),
            el("td", { text: m.places[seat] }), el("td", { text: signed(m.totals[seat]) }));
        })))));
  }
  fill(main, ...parts);
}

await frame("Bot · Sticheln referee");
const name = query("name");
if (!name) showError(main, new Error("no bot named: add ?name=BOT to the address"));
else {
  document.title = `${name} · Sticheln referee`;
  try { await render(name); } catch (e) { showError(main, e); }
  // Drawn again when the standings are published again, as the standings page is.
  const step = paced(() => render(name).then(() => { main.dataset.updated = String(Number(main.dataset.updated || 0) + 1); }).catch(() => { /* the next one tries again */ }), AGAIN_MS);
  followUpdates((ev, changed) => { if (changed.has("standings")) step(); });
}
