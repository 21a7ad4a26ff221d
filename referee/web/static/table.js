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

// A think time in words: "0.4 ms", "12 ms", "1.3 s".
export function thinkText(us) {
  if (us === null || us === undefined) return "–";
  if (us === 0) return "0 ms";
  if (us < 1000) return `${(us / 1000).toFixed(us < 100 ? 2 : 1)} ms`;
  if (us < 1e6) return `${Math.round(us / 1000)} ms`;
  return `${(us / 1e6).toFixed(1)} s`;
}

// A decision's think time against the clock it was against (p: think_us, clock_ms,
// bank_ms): the time as text and a meter of the share of its limit it used.
export function thinkMeter(p) {
  if (p.think_us === null || p.think_us === undefined) return null;
  const limit = p.clock_ms === null || p.clock_ms === undefined ? null : p.clock_ms + (p.bank_ms || 0);
  const words = `thought ${thinkText(p.think_us)}${limit === null ? "" : ` of the ${p.clock_ms} ms allowed${p.bank_ms ? ` and a ${p.bank_ms} ms bank` : ""}`}`;
  return el("span", { class: "think", title: words },
    el("span", { class: "think-ms", text: thinkText(p.think_us) }),
    limit ? el("meter", { min: 0, max: limit, low: limit * 0.5, high: limit * 0.8, optimum: 0, value: Math.min(limit, p.think_us / 1000), "aria-label": words }) : null);
}

// A fault's reason in words ("illegal_card" → "illegal card").
export function faultWords(reason) {
  return String(reason || "").replaceAll("_", " ").toLowerCase();
}

// A taken card as a small chip with the points it brought.
function takenChip(c, points) {
  const [sym] = SUITS[c[0]] || ["?"];
  return el("span", { class: `chip suit-${c[0]}${points < 0 ? " hurt" : ""}`, "data-card": c, title: `${c.slice(1)} of ${suitName(c[0])}${points === null ? "" : `: ${signed(points)}`}` },
    `${sym}${c.slice(1)}`, points < 0 ? el("b", { text: ` ${signed(points)}` }) : null);
}

// A step button: a clear icon and a word on it; its name is the word with what it steps
// ("previous card": words a screen reader says, hidden around the visible one), its key
// in the tooltip.
export function stepButton(bid, icon, word, title, fn, cls = "") {
  const [before, after] = title.replace(/ \(.*\)$/, "").split(word);
  return el("button", { id: bid, class: cls || null, title, onclick: fn },
    el("span", { class: "icon", "aria-hidden": "true", text: icon }),
    before ? el("span", { class: "sr-only", text: before }) : null,
    el("span", { class: "word", text: word }),
    after ? el("span", { class: "sr-only", text: after }) : null);
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
  const known = (x) => x !== undefined && x !== null;
  const score = !known(p.round) && !known(p.total) ? null
    : el("div", { class: "score" },
      known(p.round) ? ["round ", el("b", { class: "round-score", "data-score": p.round, text: signed(p.round) })]
        : el("span", { class: "muted", title: "the round score is not known yet: it follows from the pain cards", text: "round ?" }),
      known(p.total) ? [" · match ", el("b", { class: "match-total", "data-total": p.total, text: signed(p.total) })] : null);
  // The pain card(s): face up, face down (chosen, not revealed: p.pain holds nulls), or
  // not chosen yet (p.pain empty and p.painNote says so).
  const pain = el("div", { class: "painrow" }, el("span", { class: "label", text: "pain" }),
    p.painNote && !(p.pain && p.pain.length) ? el("span", { class: "label pain-note", text: p.painNote })
      : el("span", { class: "cards" }, (p.pain && p.pain.length ? p.pain : [null]).flatMap((c, i) => [
        c ? card(c, "small pain") : el("span", { class: "card hidden small pain", title: "chosen, face down", role: "img", "aria-label": "a pain card, face down" }),
        c && p.painPoints ? el("span", { class: "pts", text: signed(p.painPoints[i]) }) : null]),
      p.painThink ? thinkMeter(p.painThink) : null));
  let taken = null;
  if (p.taken && p.taken.some(([, v]) => v === null)) {
    // What the cards bring is hidden with the pain cards (secret pain visibility).
    taken = el("div", { class: p.taken.length ? "taken" : "taken empty" },
      el("div", { class: "label", text: `taken: ${p.taken.length} card(s), their points hidden until the round is scored` }),
      el("div", { class: "chips" }, p.taken.map(([c]) => takenChip(c, null))));
  } else if (p.taken) {
    const plus = p.taken.filter(([, v]) => v > 0), minus = p.taken.filter(([, v]) => v < 0);
    const zero = p.taken.length - plus.length - minus.length;
    const sum = (xs) => xs.reduce((a, [, v]) => a + v, 0);
    const parts = [`${plus.length} card(s) ${signed(sum(plus))}`];
    if (minus.length) parts.push(`${minus.length} in pain suit ${signed(sum(minus))}`);
    if (zero) parts.push(`${zero} pain-suit zero(s) 0`);
    taken = el("div", { class: p.taken.length ? "taken" : "taken empty" },
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
    p.think_us !== undefined ? thinkMeter(p) : null,
    p.fault ? el("span", { class: "fault-mark", text: `⚠ ${p.faultWords || "fault"}` }) : null))),
    el("div", { class: "outcome", id: "trick-outcome" }, lines || ""));
}

// The table: the trick on the felt, the seats in seat order beside or below it (a grid
// that reflows from one column on a phone to several on a desk).
export function table(panels, middle, n) {
  return el("div", { class: `table-felt seats-${n}${n >= 5 ? " compact" : ""}`, id: "table" }, el("div", { class: "felt" }, middle),
    el("div", { class: "seats" }, panels));
}

// -- a finished match, position by position ------------------------------------------------
// A replay of a viewer document (GET /api/matches/ID): its positions (a round's deal, then
// every card of every trick), their addresses (#r2, #r2t7c3), and the card table at any
// of them. Two replays of the same deal step together by position (the same r, t, c).
//
// With `moments`, a round begins with the deal's moments as their own positions: the
// hands as dealt (c 0, #r2), the pain cards chosen face down (c 1, #r2pick), and their
// simultaneous reveal (c 2, #r2reveal). Under secret pain visibility there is no reveal
// before the first lead: the pain cards, and what the cards taken bring, stay hidden
// until the round is scored (its last trick complete). Without `moments` (the comparison)
// the deal is one position with the pain cards chosen and shown (set aside: out of the
// hand).
export class Replay {
  constructor(doc, { moments = false } = {}) {
    this.doc = doc;
    this.n = doc.seating.length;
    this.kept = String((doc.rules || {}).pain_card || "") === "kept_in_hand";
    this.moments = moments;
    this.secret = moments && /secret/i.test(String((doc.rules || {}).pain_visibility || ""));
    this.steps = [];
    doc.rounds.forEach((r, ri) => {
      this.steps.push({ r: ri, t: -1, c: 0 });
      if (moments) this.steps.push({ r: ri, t: -1, c: 1 });
      if (moments && !this.secret) this.steps.push({ r: ri, t: -1, c: 2 });
      r.tricks.forEach((tr, ti) => tr.cards.forEach((_, ci) => this.steps.push({ r: ri, t: ti, c: ci + 1 })));
    });
    // A fault is shown from the card it caused (or the deal, for one in the pain choice).
    this.faults = [];
    doc.rounds.forEach((r, ri) => r.faults.forEach((f) => {
      let at = f.card === null || f.card === undefined ? this.indexOf(ri, -1, moments ? 1 : 0) : this.indexOf(ri, f.trick, f.card + 1);
      if (at < 0) at = this.steps.findLastIndex((s) => s.r === ri);  // after the round's last card
      this.faults.push({ ...f, round: ri, at });
    }));
    this.forfeitAt = doc.seating.map((_, s) => {
      const f = this.faults.find((x) => x.seat === s && x.forfeited);
      if (f) return f.at;
      return doc.end && (doc.end.forfeited || []).includes(s) ? 0 : Infinity;
    });
  }

  get last() { return this.steps.length - 1; }

  indexOf(r, t, c) {
    return this.steps.findIndex((s) => s.r === r && s.t === t && s.c === c);
  }

  // A stop of "next trick": a trick complete, or a round's deal.
  complete(s) {
    return s.t < 0 ? s.c === 0 : s.c === this.doc.rounds[s.r].tricks[s.t].cards.length;
  }

  // The next (delta > 0) or previous complete trick from position `at`, or a round's deal:
  // from inside a trick forward is that trick complete, so no winner is ever skipped.
  trickStep(at, delta) {
    if (delta > 0) {
      const i = this.steps.findIndex((s, k) => k > at && this.complete(s));
      return i < 0 ? this.last : i;
    }
    const i = this.steps.findLastIndex((s, k) => k < at && this.complete(s));
    return i < 0 ? 0 : i;
  }

  hashOf(i) {
    const { r, t, c } = this.steps[i];
    if (t < 0) return `r${r + 1}${["", "pick", "reveal"][c]}`;
    return `r${r + 1}t${t + 1}c${c}`;
  }

  // The position an address names (#end: the last card), or -1.
  parse(hash) {
    if (hash === "#end") return this.last;
    const m = /^#?r(\d+)(?:(pick|reveal)|t(\d+)(?:c(\d+))?)?$/.exec(hash || "");
    if (!m) return -1;
    const r = Number(m[1]) - 1;
    const round = this.doc.rounds[r];
    if (!round) return -1;
    if (m[2]) {  // a moment of the deal, or the nearest one before it that there is
      for (let c = m[2] === "pick" ? 1 : 2; c > 0; c -= 1) {
        const i = this.indexOf(r, -1, c);
        if (i >= 0) return i;
      }
      return this.indexOf(r, -1, 0);
    }
    m.splice(2, 1);
    if (m[2] === undefined) return this.indexOf(r, -1, 0);
    const t = Math.min(Number(m[2]), round.tricks.length) - 1;
    if (t < 0) return this.indexOf(r, -1, 0);
    const size = round.tricks[t].cards.length;
    const c = m[3] === undefined ? size : Math.max(1, Math.min(Number(m[3]), size));
    return this.indexOf(r, t, c);
  }

  // What is true at position `at`: the running scores (the server's), the totals, the
  // cards taken, the hands, whose turn, the faults so far.
  state(at) {
    const { doc, n } = this;
    const { r, t, c } = this.steps[at];
    const round = doc.rounds[r];
    const trick = t >= 0 ? round.tricks[t] : null;
    const complete = trick ? c === trick.cards.length : false;
    const lastTrick = Boolean(trick) && t === round.tricks.length - 1;
    const done = t < 0 ? 0 : (complete ? t + 1 : t);  // tricks taken by now
    // The moment of the deal: 0 dealt, 1 chosen face down, 2 revealed (-1: no moments).
    const moment = !this.moments ? -1 : (t < 0 ? c : 3);
    const painShown = moment === -1 || moment === 2 || (moment === 3 && (!this.secret || (lastTrick && complete)));
    const running = !painShown ? null : (done ? round.tricks[done - 1].scores_after : round.scores_start);
    const painSet = round.pain.map((p) => new Set(p));
    let hands;
    if (t < 0 && (moment === 0 || this.kept)) hands = round.hands;
    else if (t < 0) hands = round.hands.map((h, s) => h.filter((x) => !painSet[s].has(x)));
    else {
      const before = t > 0 ? round.tricks[t - 1].hands_after : round.hands.map((h, s) => (this.kept ? h : h.filter((x) => !painSet[s].has(x))));
      const played = new Set(trick.cards.slice(0, c).map((x, i) => `${(trick.leader + i) % n}:${x}`));
      hands = before.map((h, s) => h.filter((x) => !played.has(`${s}:${x}`)));
    }
    const taken = doc.seating.map(() => []);
    round.tricks.slice(0, done).forEach((tr) => {
      if (tr.winner >= 0) tr.cards.forEach((x, i) => taken[tr.winner].push([x, painShown ? tr.points[i] : null]));
    });
    let toPlay = -1, leads = -1;
    if (t < 0) leads = round.tricks.length ? round.tricks[0].leader : -1;
    else if (!complete) { toPlay = (trick.leader + c) % n; leads = trick.leader; }
    else if (!lastTrick) leads = round.tricks[t + 1].leader;
    return {
      r, t, c, round, trick, complete, lastTrick, running, hands, taken, toPlay, leads, painSet, moment, painShown,
      totals: round.totals_before.map((v, s) => v + (running ? running[s] : 0)),
      faults: this.faults.filter((f) => f.at <= at),
      faultsHere: this.faults.filter((f) => f.at === at),
    };
  }

  // The card table at position `at`.
  table(at) {
    const { doc, n } = this;
    const seating = doc.seating;
    const st = this.state(at);
    const { r, t, c, round, trick, complete } = st;
    const { moment, painShown } = st;
    // A pain card kept in the hand is outlined there once it is known: at the deal without
    // moments and at the reveal. One set aside has left the hand for the pain row.
    const outline = t < 0 && this.kept && (moment === -1 || moment === 2);
    const panels = seating.map((name, s) => seatPanel(s, name, {
      dealer: round.dealer === s,
      leads: st.leads === s,
      toPlay: st.toPlay === s ? "to play" : false,
      forfeited: this.forfeitAt[s] <= at ? "forfeited: the referee plays its cards" : null,
      round: st.running ? st.running[s] : null,
      total: st.totals[s],
      pain: moment === 0 ? [] : (painShown ? round.pain[s] : round.pain[s].map(() => null)),
      painNote: moment === 0 ? "not chosen yet" : null,
      painThink: moment === 1 && round.pain_plays ? round.pain_plays[s] : null,
      painPoints: painShown ? round.pain_points[s] : null,
      taken: st.taken[s],
      hand: st.hands[s].map((x) => card(x, `small${outline && st.painSet[s].has(x) ? " pain" : ""}`)),
    }));
    let plays = [], lines = [];
    if (trick) {
      const recorded = trick.plays.length ? trick.plays : trick.cards.map((x, i) => ({ seat: (trick.leader + i) % n, card: x }));
      plays = recorded.slice(0, c).map((p, i) => {
        const here = this.faults.filter((x) => x.round === r && x.trick === t && x.card === i);
        const f = here.find((x) => x.seat === p.seat) || here[0];
        return { ...p, won: complete && p.seat === trick.winner,
          points: complete && trick.points && painShown ? trick.points[i] : null,
          fault: f ? `${seating[f.seat]}: ${f.reason}${f.detail ? ` (${f.detail})` : ""}` : null,
          faultWords: f ? faultWords(f.reason) : null };
      });
      const lead = trick.cards[0][0];
      if (complete) {
        const suits = trick.winner >= 0 ? round.pain_suits[trick.winner] : [];
        let takes = "The cards are set aside; the same seat leads again.";
        if (trick.winner >= 0 && painShown) takes = `${seating[trick.winner]} takes ${signed(trick.points.reduce((a, b) => a + b, 0))} (its pain suit${suits.length > 1 ? "s" : ""}: ${suits.map(suitName).join(", ") || "–"})`;
        else if (trick.winner >= 0) takes = `${seating[trick.winner]} takes ${trick.cards.length} cards; what they bring stays hidden with the pain cards until the round is scored`;
        lines = [el("div", {}, reasonLine(trick, seating)), el("div", { class: "sub", text: takes })];
        if (st.lastTrick && this.secret) lines.push(el("div", { class: "sub", text: "The round is over: the secret pain cards are revealed." }));
        if (st.lastTrick && round.scores) lines.push(el("div", { class: "sub", text: `Round ${r + 1} scored: ${round.scores.map((v, s) => `${seating[s]} ${signed(v)}`).join(", ")}` }));
      } else {
        lines = [el("div", {}, "Lead suit ", el("span", { class: `suit-${lead} lead-suit`, text: `${SUITS[lead][0]} ${suitName(lead)}` }), ` · ${seating[st.toPlay]} to play`)];
      }
    } else if (moment === 0) {
      const aside = (round.set_aside || []).length;
      lines = [el("div", { text: `Round ${r + 1} dealt by ${seating[round.dealer]}${aside ? `; ${aside} card(s) set aside face down, unseen by all` : ""}` }),
        el("div", { class: "sub", text: `Next, every seat chooses its pain card${round.pain[0] && round.pain[0].length > 1 ? "s" : ""} without seeing anyone else's choice.` })];
    } else if (moment === 1) {
      lines = [el("div", { text: `Every seat has chosen: the pain cards lie face down${this.kept ? " (each stays in its hand)" : ", set aside"}` }),
        el("div", { class: "sub", text: this.secret ? "Secret pain cards: they stay hidden until the round is scored."
          : "Next, all are revealed at once." })];
      if (this.secret && st.leads >= 0) lines.push(el("div", { class: "sub", text: `${seating[st.leads]} leads the first trick` }));
    } else if (moment === 2) {
      lines = [el("div", { text: "The pain cards are revealed, all at once" }),
        st.leads >= 0 ? el("div", { class: "sub", text: `${seating[st.leads]} leads the first trick` }) : null];
    } else {
      lines = [el("div", { text: `Round ${r + 1} dealt by ${seating[round.dealer]}; pain cards ${this.kept ? "chosen (kept in the hand)" : "chosen and set aside"}` }),
        st.leads >= 0 ? el("div", { class: "sub", text: `${seating[st.leads]} leads the first trick` }) : null];
    }
    lines.push(...st.faultsHere.map((f) => el("div", { class: "fault-line", text: `⚠ ${seating[f.seat]}: ${faultWords(f.reason)}${f.detail ? ` (${f.detail})` : ""}, strike ${f.strikes}${f.forfeited ? " — forfeited" : ""}` })));
    return table(panels, trickArea(plays, seating, lines, { "data-round": r, "data-trick": t, "data-card": c }), n);
  }

  // "Round 2 · trick 7 / 14 · card 3 / 4"
  label(at) {
    const { r, t, c } = this.steps[at];
    const round = this.doc.rounds[r];
    if (t < 0) return `Round ${r + 1} · ${["the deal", "pain cards chosen, face down", "pain cards revealed"][this.moments ? c : 0]}`;
    return `Round ${r + 1} · trick ${t + 1} / ${round.tricks.length} · card ${c} / ${round.tricks[t].cards.length}`;
  }
}
