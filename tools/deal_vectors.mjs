#!/usr/bin/env node
// An independent implementation of the Sticheln deal (docs/deal.md), written from the
// document and docs/rules.md only, not from the Python engine. It prints test vectors as JSON:
//
//     node tools/deal_vectors.mjs > tests/vectors/deal_vectors.json
//
// tests/test_deck.py checks the engine against that file, which shows that a bot author
// in another language can re-derive every deal from a revealed match seed.

import { createHash } from "node:crypto";

const DOMAIN = Buffer.from("sticheln/deal/v1", "ascii");
const TWO64 = 1n << 64n;
const SUIT_LETTERS = "?CSHDKWPR";

// -- cards --------------------------------------------------------------------------------

const card = (suit, rank) => suit * 16 + rank;
const cardText = (c) => SUIT_LETTERS[c >> 4] + String(c & 15);
const range = (lo, hi) => Array.from({ length: hi - lo }, (_, i) => lo + i); // [lo, hi)

function cards(suits, ranks) {
  const out = [];
  for (const s of suits) for (const r of ranks) out.push(card(s, r));
  return out;
}

// -- decks (docs/rules.md "Rule options" and "Presets") ----------------------------------

const FRENCH_ZERO_ACE_RANKS = [0, ...range(2, 14)]; // A = 0, 2..10, J 11, Q 12, K 13

function deckFor(deck, players, longHands3p) {
  let out;
  switch (deck) {
    case "suits_per_player": // N suits x 0..14
      out = cards(range(1, players + 1), range(0, 15));
      break;
    case "amigo": // 6 x 0..14; 5 players drop suit 6; 4 also drop 12..14; 3 also drop 9..14
      out = cards(
        range(1, players >= 6 ? 7 : 6),
        range(0, players === 3 ? 9 : players === 4 ? 12 : 15),
      );
      break;
    case "french_zero_ace": {
      const C2 = card(1, 2);
      const S2 = card(2, 2);
      if (players === 3) {
        const top = longHands3p ? 12 : 9; // A..Q or A..9
        out = cards(range(1, 5), FRENCH_ZERO_ACE_RANKS.filter((r) => r <= top));
      } else {
        out = cards(range(1, 5), FRENCH_ZERO_ACE_RANKS);
        if (players === 5) out = out.filter((c) => c !== C2 && c !== S2);
        if (players === 6) out = out.filter((c) => (c & 15) !== 2);
      }
      break;
    }
    case "french_2_14":
      out = cards(range(1, 5), range(2, 15));
      break;
    default:
      throw new Error(`unknown deck ${deck}`);
  }
  out.sort((a, b) => a - b); // canonical order: ascending card number
  return { deck: out, handSize: Math.floor(out.length / players) };
}

// -- the random stream: SHA-256 in counter mode --------------------------------------------

function u64be(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

function u32be(n) {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

class Stream {
  constructor(seed, roundIndex) {
    if (seed < 0n || seed >= TWO64) throw new Error(`seed ${seed} out of range`);
    this.prefix = Buffer.concat([DOMAIN, u64be(seed), u32be(roundIndex)]);
    this.counter = 0n;
    this.block = Buffer.alloc(0);
    this.pos = 0;
  }

  nextWord() {
    if (this.pos === this.block.length) {
      this.block = createHash("sha256")
        .update(Buffer.concat([this.prefix, u64be(this.counter)]))
        .digest();
      this.counter += 1n;
      this.pos = 0;
    }
    const x = this.block.readBigUInt64BE(this.pos);
    this.pos += 8;
    return x;
  }

  // A uniform integer in [0, n) by rejection sampling.
  below(n) {
    const bn = BigInt(n);
    const limit = TWO64 - (TWO64 % bn);
    for (;;) {
      const x = this.nextWord();
      if (x < limit) return Number(x % bn);
    }
  }
}

function shuffled(deck, seed, roundIndex) {
  const out = deck.slice();
  const stream = new Stream(seed, roundIndex);
  for (let i = out.length - 1; i >= 1; i--) {
    const j = stream.below(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function deal(deckName, players, seed, roundIndex, dealer, longHands3p) {
  const { deck, handSize } = deckFor(deckName, players, longHands3p);
  const order = shuffled(deck, seed, roundIndex);
  const hands = Array.from({ length: players }, () => []);
  for (let k = 0; k < handSize * players; k++) hands[(dealer + 1 + k) % players].push(order[k]);
  for (const h of hands) h.sort((a, b) => a - b);
  return { deck, handSize, order, hands, setAside: order.slice(handSize * players) };
}

// -- the vectors ---------------------------------------------------------------------------

// Each preset's deck, from docs/rules.md's presets section.
const PRESET_DECK = {
  sticheln: "suits_per_player",
  amigo: "amigo",
  "sore-spot": "french_zero_ace",
  "french-2-14": "french_2_14",
  "stick-em-secret": "suits_per_player",
};

const CASES = [
  // [preset, overrides, players, seed, round, dealer]
  ["sticheln", {}, 4, 0n, 0, 0],
  ["sticheln", {}, 3, 42n, 1, 1],
  ["sticheln", {}, 5, 20260101n, 2, 2],
  ["sticheln", {}, 8, TWO64 - 1n, 7, 7],
  ["stick-em-secret", {}, 6, 123456789012345678n, 3, 3],
  ["amigo", {}, 3, 7n, 0, 0],
  ["amigo", {}, 4, 1n, 3, 3],
  ["amigo", {}, 5, 99n, 4, 4],
  ["amigo", {}, 6, 2n ** 63n, 5, 5],
  ["sore-spot", {}, 3, 5n, 2, 2],
  ["sore-spot", { long_hands_3p: true }, 3, 5n, 2, 2],
  ["sore-spot", {}, 4, 1993n, 1, 1],
  ["sore-spot", {}, 5, 31337n, 0, 0],
  ["sore-spot", {}, 6, 424242n, 5, 5],
  ["french-2-14", {}, 4, 11n, 0, 0],
  // Leftover cards set aside: the 52-card deck at 5 players (10 each, 2 set aside).
  ["sticheln", { deck: "french_2_14" }, 5, 8n, 1, 1],
  // A dealer that is not round % players: the deal formula does not depend on the round.
  ["sticheln", {}, 4, 42n, 0, 2],
];

const vectors = CASES.map(([preset, overrides, players, seed, roundIndex, dealer]) => {
  const deckName = overrides.deck ?? PRESET_DECK[preset];
  const long = overrides.long_hands_3p === true;
  const d = deal(deckName, players, seed, roundIndex, dealer, long);
  return {
    preset,
    overrides,
    deck: deckName,
    players,
    seed: seed.toString(), // a decimal string: u64 seeds do not fit a JSON double
    round: roundIndex,
    dealer,
    deck_size: d.deck.length,
    hand_size: d.handSize,
    canonical_deck: d.deck,
    shuffled: d.order,
    first10: d.order.slice(0, 10),
    first10_text: d.order.slice(0, 10).map(cardText).join(" "),
    hands: d.hands,
    seat0_hand_text: d.hands[0].map(cardText).join(" "),
    set_aside: d.setAside,
  };
});

const out = {
  algorithm: "sticheln/deal/v1",
  generator: "tools/deal_vectors.mjs (independent Node.js implementation of docs/deal.md)",
  card_code: "suit * 16 + rank; suits 1..8 = C S H D K W P R",
  vectors,
};
// One line per array of numbers keeps the file readable and its diffs small.
const text = JSON.stringify(out, null, 2).replace(
  /\[\s+([-\d,\s]+?)\s+\]/g,
  (_, inner) => `[${inner.split(/\s*,\s*/).join(", ")}]`,
);
process.stdout.write(text + "\n");
