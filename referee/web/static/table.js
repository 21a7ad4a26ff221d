// The card table, shared by every page that draws a match: seat panels (name, markers,
// the running round score and match total, the pain card, the cards taken with what
// each brings, the hand), the trick in the middle, the suit legend. It only draws what
// it is given: the scores come from the server (GET /api/matches/ID), never from here.
import { el, card, signed, SUITS } from "/static/common.js";

export const REASONS = {
  off_suit_highest: ["highest card of a suit other than the lead suit", "rule-6-3"],
  off_suit_last_suit: ["highest card of the off-suit played last", "trump-rule"],
  lead_suit_highest: ["no other suit was played: highest card of the lead suit", "rule-6-4"],
  all_zero: ["only zeros: nobody wins", "rule-6-6"],
};

// "Ann wins: highest card …" and a link to the rule it follows.
export function reasonLine(trick, seating) {
  const [why, anchor] = REASONS[trick.reason] || [trick.reason, "rule-6"];
  const who = trick.winner < 0 ? "Nobody wins" : `${seating[trick.winner]} wins`;
  const tie = trick.tie ? " (an equal card played later lost: rule 6.5)" : "";
  return [`${who}: ${why}${tie} `, el("a", { class: "rule-link", href: `/rules#${anchor}`, text: "(the rule)" })];
}

export function reasonText(trick, seating) {
  return reasonLine(trick, seating).slice(0, 1).join("");
}

export function suitName(letter) {
  return (SUITS[letter] || ["?", letter])[1];
}

// The suits present, each with its symbol and colour.
export function suitLegend(letters) {
  return el("div", { class: "legend", id: "suit-legend", "aria-label": "suits" },
    letters.map((s) => el("span", { class: `legend-item suit-${s}` }, el("span", { class: "sym", text: SUITS[s][0] }), ` ${SUITS[s][1]}`)));
}

// A taken card as a small chip with the points it brought.
function takenChip(c, points) {
  const [sym] = SUITS[c[0]] || ["?"];
  return el("span", { class: `chip suit-${c[0]}${points < 0 ? " hurt" : ""}`, "data-card": c, title: `${c.slice(1)} of ${suitName(c[0])}: ${signed(points)}` },
    `${sym}${c.slice(1)}`, points < 0 ? el("b", { text: ` ${signed(points)}` }) : null);
}

// One seat. `p`: dealer, leads, toPlay, forfeited (text or null), round (running round
// score), total (running match total), pain (cards), painPoints (or null: not scored
// yet / hidden), painSuits, taken ([card, points] pairs), hand (cards or null), handNote.
export function seatPanel(s, name, p) {
  const classes = ["seat", p.toPlay ? "to-play" : "", p.forfeited ? "forfeited" : ""].filter(Boolean).join(" ");
  const tags = [
    p.dealer ? el("span", { class: "tag dealer", text: "dealer" }) : null,
    p.leads ? el("span", { class: "tag leads", text: "leads" }) : null,
    p.toPlay ? el("span", { class: "tag turn", text: p.toPlay === true ? "to play" : p.toPlay }) : null,
    p.forfeited ? el("span", { class: "tag forfeit", title: p.forfeited, text: "forfeited" }) : null,
  ];
  const score = p.round === undefined || p.round === null ? null
    : el("div", { class: "score" },
      "round ", el("b", { class: "round-score", "data-score": p.round, text: signed(p.round) }),
      p.total === undefined || p.total === null ? null : [" · match ", el("b", { class: "match-total", "data-total": p.total, text: signed(p.total) })]);
  const pain = el("div", { class: "painrow" }, el("span", { class: "label", text: "pain" }),
    el("span", { class: "cards" }, (p.pain && p.pain.length ? p.pain : [null]).flatMap((c, i) => [card(c, "small pain"),
      c && p.painPoints ? el("span", { class: "pts", text: signed(p.painPoints[i]) }) : null])));
  let taken = null;
  if (p.taken) {
    const plus = p.taken.filter(([, v]) => v > 0), minus = p.taken.filter(([, v]) => v < 0);
    const zero = p.taken.length - plus.length - minus.length;
    const sum = (xs) => xs.reduce((a, [, v]) => a + v, 0);
    const parts = [`${plus.length} card(s) ${signed(sum(plus))}`];
    if (minus.length) parts.push(`${minus.length} in pain suit ${signed(sum(minus))}`);
    if (zero) parts.push(`${zero} pain-suit zero(s) 0`);
    taken = el("div", { class: "taken" },
      el("div", { class: "label", text: p.taken.length ? `taken: ${parts.join(", ")}` : "taken: nothing yet" }),
      p.taken.length ? el("div", { class: "chips" }, p.taken.map(([c, v]) => takenChip(c, v))) : null);
  }
  return el("div", { class: classes, "data-seat": s },
    el("div", { class: "head" }, el("span", { class: "name", text: name }), tags),
    score, pain, taken,
    p.hand ? el("div", { class: "hand cards", "data-hand": s }, p.hand) : null,
    p.handNote ? el("div", { class: "label", text: p.handNote }) : null);
}

// The trick: the cards played so far, the leader's card and the winning card marked
// apart; fallback plays and faults marked at their card.
export function trickArea(plays, seating, lines, attrs) {
  return el("div", { class: "trick", id: "trick", ...attrs },
    el("div", { class: "cards" }, plays.map((p, i) => el("span", {
      class: `played${p.won ? " winner" : ""}${i === 0 ? " lead" : ""}${p.fallback ? " fallback" : ""}${p.fault ? " faulted" : ""}`,
      "data-seat": p.seat,
      title: [p.fallback ? "a fallback card, played by the referee for the seat" : "", p.fault || ""].filter(Boolean).join("; ") || null,
    },
    el("span", { class: "mark", text: i === 0 ? "lead" : (p.won ? "wins" : (p.fallback ? "fallback" : "")) }),
    card(p.card, `small${p.won ? " won" : ""}`),
    el("span", { class: "who", text: seating[p.seat] }),
    p.points !== undefined && p.points !== null ? el("span", { class: "pts", text: signed(p.points) }) : null,
    p.fault ? el("span", { class: "fault-mark", text: "⚠ fault" }) : null))),
    el("div", { class: "outcome", id: "trick-outcome" }, lines || ""));
}

// The table: the trick on the felt, the seats in seat order beside or below it (a grid
// that reflows from one column on a phone to several on a desk).
export function table(panels, middle, n) {
  return el("div", { class: `table-felt seats-${n}`, id: "table" }, el("div", { class: "felt" }, middle),
    el("div", { class: "seats" }, panels));
}
