// Head to head: for every two bots that met, the row bot's share of better places
// against the column bot and its mean score difference. The server writes the matrix
// (and a phone's lists); this script shades each cell by its share, and puts the server's
// page in place again when the standings are published again (as the standings page
// asks for them), keeping what the reader opened.
import { api, el, fmt, botLink, frame, showError, signed, scrollable, fill, followUpdates, paced, AGAIN_MS } from "/static/common.js";

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

// The page as the server writes it now, put in place: the switch and the lists opened
// stay as they were.
async function again() {
  const response = await fetch(location.href, { headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html").getElementById("main");
  if (!fresh || !document.getElementById("matrix") || !fresh.querySelector("#matrix")) return;
  const whole = document.getElementById("whole-matrix")?.checked;
  const open = new Set([...main.querySelectorAll(".h2h-list details[open] summary")].map((s) => s.firstChild.textContent));
  main.replaceChildren(...[...fresh.childNodes].map((n) => document.adoptNode(n)));
  const box = document.getElementById("whole-matrix");
  if (box) box.checked = Boolean(whole);
  for (const d of main.querySelectorAll(".h2h-list details")) if (open.has(d.querySelector("summary").firstChild.textContent)) d.open = true;
  for (const node of main.querySelectorAll("[data-share]")) shade(node, Number(node.dataset.share));
  main.dataset.drawn = "1";
  main.dataset.updated = String(Number(main.dataset.updated || 0) + 1);
}
const step = paced(() => again().catch(() => { /* the next publication tries again */ }), AGAIN_MS);
followUpdates((ev, changed) => { if (changed.has("standings")) step(); });
