// Head to head: for every two bots that met, the row bot's share of better places
// against the column bot and its mean score difference. The server writes the matrix
// (and a phone's lists); this script shades each cell by its share.
import { api, el, fmt, botLink, frame, showError, signed, scrollable, fill } from "/static/common.js";

const main = document.getElementById("main");

// Green where the row bot places better more often, red where worse: pale enough that
// the text on it keeps its contrast (WCAG AA).
function shade(node, share) {
  const t = Math.max(-1, Math.min(1, (share - 0.5) * 2));
  node.style.background = t >= 0 ? `rgba(30,132,73,${0.06 + 0.22 * t})` : `rgba(192,57,43,${0.06 - 0.22 * t})`;
}

async function render() {
  const doc = await api("/api/head-to-head");
  if (!doc.bots.length) {
    fill(main, el("h1", { text: "Head to head" }), el("p", { class: "muted", text: "No finished match yet." }));
    return;
  }
  const head = el("tr", {}, el("th", { class: "text", text: "row against column" }), doc.bots.map((b) => el("th", {}, botLink(b))));
  const rows = doc.bots.map((a, i) => el("tr", {}, el("th", { class: "text" }, botLink(a)), doc.bots.map((b, j) => {
    const c = doc.cells[i][j];
    if (i === j) return el("td", { class: "self", text: "" });
    if (!c) return el("td", { class: "none", text: "–" });
    const cell = el("td", { title: `${a} against ${b}: ${c.matches} matches together`, "data-share": c.better_share },
      el("span", { class: "share", text: `${fmt(c.better_share * 100)}%` }),
      el("span", { class: "diff", text: `${signed(c.score_diff, 1)} pts · ${c.matches}` }));
    return cell;
  })));
  fill(main, el("h1", { text: "Head to head" }),
    el("p", { class: "muted", text: "Each cell: how often the row bot placed better than the column bot when they sat at the same table (a shared place counts half), its mean score difference, and the matches they shared." }),
    scrollable(el("table", { class: "matrix", id: "matrix" }, el("thead", {}, head), el("tbody", {}, rows))));
}

await frame("Head to head · Sticheln referee");
try {
  if (!document.getElementById("matrix")) await render();  // the server could not write it
  for (const node of main.querySelectorAll("[data-share]")) shade(node, Number(node.dataset.share));
  main.dataset.drawn = "1";
} catch (e) { showError(main, e); }
