// The bot's rules (bot.js: deckCards, trickWinner, scoreOf) against the referee's rules
// conformance vectors (../../conformance/*.json). Run with `npm test` (node --test).
// deals.json and places.json are not run: this bot neither re-derives deals nor ranks.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const bot = require("../bot.js");

const DIR = process.env.STICHELN_CONFORMANCE_DIR || path.join(__dirname, "..", "..", "..", "conformance");
const load = (name) => JSON.parse(fs.readFileSync(path.join(DIR, name), "utf8")).cases;
const rulesOf = (table) => ({ deck: `DECK_${table.deck.toUpperCase()}`, long_hands_3p: table.long_hands_3p });

test("decks.json: every preset's deck for every player count", () => {
  for (const c of load("decks.json")) {
    const deck = bot.deckCards(rulesOf(c.rules), c.players).sort((a, b) => a - b);
    assert.deepEqual(deck, c.cards, `${c.preset}, ${c.players} players`);
    assert.equal(Math.floor(deck.length / c.players), c.hand_size);
  }
});

test("tricks.json: the winning position under both trump rules", () => {
  for (const c of load("tricks.json")) {
    const position = bot.trickWinner(c.cards, c.trump_rule === "last_suit");
    assert.equal(position, c.position, `${c.name}: ${c.cards_text} (${c.trump_rule})`);
  }
});

test("rounds.json: every trick's winner and the round scores", () => {
  for (const [i, c] of load("rounds.json").entries()) {
    const lastSuit = c.rules.trump_rule === "last_suit";
    for (const t of c.tricks) {
      const position = bot.trickWinner(t.cards, lastSuit);
      const expected = position < 0 ? (c.rules.all_zero_trick === "leader_takes" ? t.leader : -1)
        : (t.leader + position) % c.players;
      assert.equal(expected, t.winner, `round case ${i + 1}, trick led by ${t.leader}`);
    }
    const setAside = c.rules.pain_card === "set_aside";
    c.scores.forEach((score, seat) => {
      // The own pain card(s) count only when set aside; kept in hand, whoever captures it scores it.
      const pile = setAside ? [...c.captured[seat], ...c.pain[seat]] : c.captured[seat];
      const suits = new Set(c.pain[seat].map((card) => card >> 4));
      assert.equal(bot.scoreOf(pile, suits), score, `round case ${i + 1}, seat ${seat}`);
    });
  }
});
