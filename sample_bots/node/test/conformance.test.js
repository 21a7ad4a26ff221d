// The bot's rules (bot.js: deckCards, deal, trickWinner, scoreOf, places) against every
// file of the referee's rules conformance vectors (../../conformance/*.json). Run with
// `npm test` (node --test); STICHELN_CONFORMANCE_DIR names another copy of the vectors.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const bot = require("../bot.js");

const DIR = process.env.STICHELN_CONFORMANCE_DIR || path.join(__dirname, "..", "..", "..", "conformance");
const load = (name) => JSON.parse(fs.readFileSync(path.join(DIR, name), "utf8")).cases;
const rulesOf = (table) => ({ deck: `DECK_${table.deck.toUpperCase()}`, long_hands_3p: table.long_hands_3p });

// One dealt and played round (a rounds.json case, or a round of a matches.json case):
// the deal from the seed, every trick's winner, the round scores.
function checkRound(c, rules, players, seed, what) {
  const dealt = bot.deal(rulesOf(rules), players, seed, c.round_index, c.dealer);
  assert.deepEqual(dealt.hands, c.hands, `${what}: the hands dealt`);
  assert.deepEqual(dealt.setAside, c.set_aside, `${what}: the cards set aside at the deal`);
  const lastSuit = rules.trump_rule === "last_suit";
  for (const t of c.tricks) {
    const position = bot.trickWinner(t.cards, lastSuit);
    const expected = position < 0 ? (rules.all_zero_trick === "leader_takes" ? t.leader : -1)
      : (t.leader + position) % players;
    assert.equal(expected, t.winner, `${what}, trick led by ${t.leader}`);
  }
  const setAside = rules.pain_card === "set_aside";
  c.scores.forEach((score, seat) => {
    // The own pain card(s) count only when set aside; kept in hand, whoever captures it scores it.
    const pile = setAside ? [...c.captured[seat], ...c.pain[seat]] : c.captured[seat];
    const suits = new Set(c.pain[seat].map((card) => card >> 4));
    assert.equal(bot.scoreOf(pile, suits), score, `${what}, seat ${seat}`);
  });
}

test("decks.json: every preset's deck for every player count", () => {
  for (const c of load("decks.json")) {
    const deck = bot.deckCards(rulesOf(c.rules), c.players).sort((a, b) => a - b);
    assert.deepEqual(deck, c.cards, `${c.preset}, ${c.players} players`);
    assert.equal(Math.floor(deck.length / c.players), c.hand_size);
  }
});

test("deals.json: every seeded deal, the cards set aside included", () => {
  for (const [i, c] of load("deals.json").entries()) {
    const dealt = bot.deal(rulesOf(c.rules), c.players, c.seed, c.round_index, c.dealer);
    assert.deepEqual(dealt.hands, c.hands, `deal case ${i + 1}`);
    assert.deepEqual(dealt.setAside, c.set_aside, `deal case ${i + 1}`);
  }
});

test("tricks.json: the winning position under both trump rules", () => {
  for (const c of load("tricks.json")) {
    const position = bot.trickWinner(c.cards, c.trump_rule === "last_suit");
    assert.equal(position, c.position, `${c.name}: ${c.cards_text} (${c.trump_rule})`);
  }
});

test("rounds.json: every deal, every trick's winner and the round scores", () => {
  for (const [i, c] of load("rounds.json").entries()) {
    checkRound(c, c.rules, c.players, c.seed, `round case ${i + 1} (${c.name})`);
  }
});

test("matches.json: the dealer's rotation, every round, the running totals and the places", () => {
  for (const [i, c] of load("matches.json").entries()) {
    const what = `match case ${i + 1} (${c.name})`;
    const rounds = c.rules.rounds === "players" ? c.players : c.rules.rounds;
    assert.equal(c.rounds_total, rounds, what);
    assert.equal(c.rounds.length, rounds, what);
    const totals = new Array(c.players).fill(0);
    const positive = new Array(c.players).fill(0);
    c.rounds.forEach((r, k) => {
      assert.equal(r.round_index, k, what);
      assert.equal(r.dealer, k % c.players, `${what}: round ${k + 1} is dealt by seat ${k % c.players}`);
      checkRound(r, c.rules, c.players, c.seed, `${what}, round ${k + 1}`);
      r.scores.forEach((score, s) => {
        totals[s] += score;
        if (score > 0) positive[s] += 1;
      });
      assert.deepEqual(r.totals, totals, `${what}: the totals after round ${k + 1}`);
    });
    assert.deepEqual(c.totals, totals, what);
    assert.deepEqual(c.positive_rounds, positive, what);
    assert.deepEqual(bot.places(totals, positive, c.rules.match_ties), c.places, what);
  }
});

test("places.json: match places under both match_ties options, with forfeits", () => {
  for (const [i, c] of load("places.json").entries()) {
    const got = bot.places(c.totals, c.positive_rounds, c.match_ties, c.forfeited);
    assert.deepEqual(got, c.places, `place case ${i + 1}`);
  }
});
