#!/usr/bin/env node
// A Sticheln bot in Node.js: the rule-of-thumb strategy of the Python heuristic bot, on
// the referee's gRPC bot protocol (proto/sticheln/v1/bot.proto), loaded at run time with
// @grpc/proto-loader from the copy of the project's proto files in ./proto (kept in step
// by tools/gen_proto.py), so a copy of this folder runs anywhere.
//
//   node bot.js [--referee HOST:PORT] [--token TOKEN] [--tls-ca PEM] [--name NAME]
//               [--seats N] [--proto DIR] [--strategy heuristic|random]
//
// The referee's address and the seat's token come from STICHELN_REFEREE and
// STICHELN_TOKEN when the referee starts the bot (or from --referee and --token). The
// bot opens one Referee.Play stream, says Hello, answers every DecisionRequest with one
// Decision, checks the seed commitment and re-deals its hands from the revealed seed at
// every MatchEnd, and exits 0 when the referee
// ends the stream with status OK; 1 (one line on stderr) when the referee refuses the
// stream or cannot be reached; 2 for a usage error.
//
// To join a league (referee serve), pass the bot token the league issued as the token,
// the registered name as --name (or STICHELN_BOT_NAME), and --seats N (or STICHELN_SEATS)
// to play N matches at once: the bot opens N streams, each declaring
// Hello.max_concurrent_matches = N, and exits once the league has ended all of them.
//
// The strategy, in the order it matters:
// - Pain choice: the card whose suit costs least: its own rank (it scores against us),
//   plus half the ranks of the other cards of that suit in the hand (each must be shed).
// - A card that does not take the trick now can never win it later, so it is a safe way
//   to shed a card of our pain suit, or to feed a card of the pain suit of the seat that
//   is winning the trick.
// - Take a trick only when it is worth it: never one holding our own pain cards.
// - Zeros never win a trick: they are safe leads and dumps, worth keeping.
//
// --strategy random plays a uniformly random legal choice instead, drawn from a generator
// seeded at every match with MatchStart.bot_seed: with the same cards and the same seed
// it plays the same cards, and in a comparison it plays with the same luck against the
// candidate and the baseline (docs/bot-protocol.md, 6.1).
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTOCOL_VERSION = 1;
const SEED_DOMAIN = Buffer.from("sticheln/seed/v1", "ascii");

// -- cards: suit * 16 + rank; a zero (rank 0) never wins a trick ----------------------------
const suit = (card) => card >> 4;
const rank = (card) => card & 15;
const SUIT_LETTERS = "?CSHDKWPR";
const cardText = (card) => `${SUIT_LETTERS[suit(card)] || "?"}${rank(card)}`;

// -- the rules a bot needs (docs/rules.md) ------------------------------------------------

// The position (0 = the leader's card) of the card winning `cards` so far, or -1 (none
// yet, or only zeros). The first card's suit is the lead suit; a non-zero card of another
// suit beats the lead suit: the highest such card wins ("highest"), or the highest of the
// off-suit played most recently ("last_suit"); otherwise the highest lead-suit card.
// Equal ranks: the earlier card wins.
function trickWinner(cards, lastSuit) {
  if (cards.length === 0) return -1;
  const lead = suit(cards[0]);
  let candidates = [];
  cards.forEach((c, i) => {
    if (rank(c) && suit(c) !== lead) candidates.push(i);
  });
  if (candidates.length && lastSuit) {
    const latest = suit(cards[candidates[candidates.length - 1]]);
    candidates = candidates.filter((i) => suit(cards[i]) === latest);
  }
  if (!candidates.length) {
    cards.forEach((c, i) => {
      if (rank(c)) candidates.push(i);
    });
  }
  let best = -1;
  for (const i of candidates) if (best < 0 || rank(cards[i]) > rank(cards[best])) best = i;
  return best;
}

// docs/rules.md rule 8: a card of one of the taker's pain suits costs its rank; any other +1.
function scoreOf(cards, painSuits) {
  return cards.reduce((sum, c) => sum + (painSuits.has(suit(c)) ? -rank(c) : 1), 0);
}

// The deck of the rule set for `players` (docs/rules.md, docs/deal.md), as card codes.
function deckCards(rules, players) {
  const cards = (suits, ranks) => suits.flatMap((su) => ranks.map((r) => su * 16 + r));
  const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
  const zeroAce = [0, ...range(2, 14)];
  switch (rules.deck) {
    case "DECK_AMIGO": {
      const top = { 3: 9, 4: 12 }[players] || 15;
      return cards(range(1, players >= 6 ? 7 : 6), range(0, top));
    }
    case "DECK_FRENCH_ZERO_ACE": {
      if (players === 3) return cards(range(1, 5), zeroAce.filter((r) => r <= (rules.long_hands_3p ? 12 : 9)));
      const deck = cards(range(1, 5), zeroAce);
      if (players === 5) return deck.filter((c) => c !== 18 && c !== 34);
      return players >= 6 ? deck.filter((c) => rank(c) !== 2) : deck;
    }
    case "DECK_FRENCH_2_14":
      return cards(range(1, 5), range(2, 15));
    default: // DECK_SUITS_PER_PLAYER
      return cards(range(1, players + 1), range(0, 15));
  }
}

// The seeded deal of docs/deal.md: the deck (canonical order) shuffled by Fisher-Yates
// with draws from SHA-256("sticheln/deal/v1" || seed u64 || round u32 || counter u64),
// dealt one card at a time from the dealer's left; the rest is set aside. `seed` is the
// decimal string of MatchEnd.seed (or a BigInt).
function deal(rules, players, seed, roundIndex, dealer) {
  const TWO64 = 1n << 64n;
  const prefix = Buffer.alloc(28);
  prefix.write("sticheln/deal/v1", 0, "ascii");
  prefix.writeBigUInt64BE(BigInt(seed), 16);
  prefix.writeUInt32BE(roundIndex, 24);
  let counter = 0n;
  let words = [];
  const next = () => {
    if (!words.length) {
      const c = Buffer.alloc(8);
      c.writeBigUInt64BE(counter++);
      const block = crypto.createHash("sha256").update(prefix).update(c).digest();
      words = [0, 8, 16, 24].map((i) => block.readBigUInt64BE(i));
    }
    return words.shift();
  };
  const order = deckCards(rules, players).sort((a, b) => a - b);
  for (let i = order.length - 1; i >= 1; i--) {
    const n = BigInt(i + 1);
    const limit = TWO64 - (TWO64 % n); // rejection sampling: no modulo bias
    let x = next();
    while (x >= limit) x = next();
    const j = Number(x % n);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const handSize = Math.floor(order.length / players);
  const hands = Array.from({ length: players }, () => []);
  for (let k = 0; k < handSize * players; k++) hands[(dealer + 1 + k) % players].push(order[k]);
  hands.forEach((h) => h.sort((a, b) => a - b));
  return { hands, setAside: order.slice(handSize * players) };
}

// docs/rules.md rule 10: every seat's place (1 = best, shared places competition style): the
// higher total first, then (under "positive_rounds") more rounds with a positive score;
// forfeited seats rank below all others.
function places(totals, positiveRounds, matchTies, forfeited = []) {
  const usePositive = matchTies !== "MATCH_TIES_SHARED" && matchTies !== "shared";
  const key = (s) => [forfeited.includes(s) ? 1 : 0, -totals[s], usePositive ? -positiveRounds[s] : 0];
  const before = (a, b) => a[0] < b[0] || (a[0] === b[0] && (a[1] < b[1] || (a[1] === b[1] && a[2] < b[2])));
  return totals.map((_, s) => 1 + totals.filter((__, o) => before(key(o), key(s))).length);
}

// The cards this seat has not seen: in other hands, or set aside at the deal. Under
// "kept in hand" another seat's revealed pain card is still unseen (it is in its hand).
function unseenCards(view) {
  const seen = new Set([...view.hand, ...view.trick]);
  for (const t of view.tricks) for (const c of t.cards) seen.add(c);
  const keptInHand = view.rules.pain_card === "PAIN_CARD_RULE_KEPT_IN_HAND";
  view.pain.forEach((pick, seat) => {
    if (!keptInHand || seat === view.seat) for (const c of pick.cards) seen.add(c);
  });
  return deckCards(view.rules, view.players).filter((c) => !seen.has(c));
}

// True when `other`, played after `card` (which takes the trick now), takes it instead.
function beats(other, card, lead, lastSuit) {
  if (!rank(other)) return false;
  if (suit(card) === lead) return suit(other) !== lead || rank(other) > rank(card);
  if (suit(other) === lead) return false;
  if (lastSuit) return suit(other) !== suit(card) || rank(other) > rank(card);
  return rank(other) > rank(card);
}

// -- the strategy ----------------------------------------------------------------------------

// The pain card(s): `count` cards of the hand, two of different suits when it has two.
function choosePain(view, count) {
  const hand = view.hand;
  const keptInHand = view.rules.pain_card === "PAIN_CARD_RULE_KEPT_IN_HAND";
  const suitRanks = new Map();
  for (const c of hand) suitRanks.set(suit(c), (suitRanks.get(suit(c)) || 0) + rank(c));
  const deckRanks = new Map();
  for (const c of deckCards(view.rules, view.players)) deckRanks.set(suit(c), (deckRanks.get(suit(c)) || 0) + rank(c));
  // Its own rank, half the rest of its suit in the hand (to shed later), and a little for
  // the suit's cards in other hands (they may be fed to us).
  const cost = (c) => {
    const inHand = suitRanks.get(suit(c));
    return (keptInHand ? 0.5 : 1) * rank(c) + 0.5 * (inHand - rank(c)) + 0.04 * ((deckRanks.get(suit(c)) || 0) - inHand);
  };
  const sorted = [...hand].sort((a, b) => cost(a) - cost(b) || a - b);
  if (count === 1) return [sorted[0]];
  let best = null;
  for (let i = 0; i < hand.length; i++) {
    for (let j = i + 1; j < hand.length; j++) {
      if (suit(hand[i]) === suit(hand[j])) continue;
      const total = cost(hand[i]) + cost(hand[j]);
      if (best === null || total < best.total) best = { total, cards: [hand[i], hand[j]] };
    }
  }
  return best ? best.cards : sorted.slice(0, 2); // a hand of one suit: any two cards
}

// The pain suits of `seat` as far as this seat knows them (empty while secret).
function painSuits(view, seat) {
  const pick = view.pain[seat];
  return new Set(pick ? pick.cards.map(suit) : []);
}

// The card to play: any card of the hand is legal (there is no duty to follow suit).
function chooseCard(view) {
  const own = painSuits(view, view.seat);
  const hand = view.hand;
  const trick = view.trick;
  const keep = (c) => (rank(c) === 0 ? 0.4 : own.has(suit(c)) ? 0 : 0.05 * rank(c));
  if (trick.length === 0) {
    // Lead: a zero if we have one (it never takes the trick), else our lowest safe card.
    const zeros = hand.filter((c) => rank(c) === 0);
    const pool = zeros.length ? zeros : hand;
    return pool.reduce((a, b) => (leadKey(b, own) < leadKey(a, own) ? b : a));
  }
  const lastSuit = view.rules.trump_rule === "TRUMP_RULE_LAST_SUIT";
  const later = view.players - trick.length - 1; // seats still to play after us
  const lead = suit(trick[0]);
  const unseen = unseenCards(view);
  const held = hand.length; // each seat after us holds as many cards as we do
  // The chance that no seat after us beats `card`, from the unseen cards that would.
  const hold = (card) => {
    if (later === 0) return 1;
    const beaters = unseen.filter((u) => beats(u, card, lead, lastSuit)).length;
    if (!beaters || !unseen.length) return 1;
    const noneHeld = Math.pow(1 - beaters / unseen.length, held);
    return Math.pow(1 - 0.6 * (1 - noneHeld), later);
  };
  // What one more card in a trick we take is worth to us: once our pain suit is known,
  // a seat holding one of its cards will feed it to us.
  let future = 1;
  const ownPainCards = unseen.filter((u) => own.has(suit(u)));
  if (own.size && view.rules.pain_visibility === "PAIN_VISIBILITY_REVEALED" && ownPainCards.length) {
    const fed = 1 - Math.pow(1 - ownPainCards.length / unseen.length, held);
    const meanRank = ownPainCards.reduce((sum, u) => sum + rank(u), 0) / ownPainCards.length;
    future = 1 - fed - fed * meanRank;
  }
  let best = hand[0];
  let bestValue = -Infinity;
  for (const card of hand) {
    const cards = [...trick, card];
    const position = trickWinner(cards, lastSuit);
    const shed = own.has(suit(card)) ? 0.8 * rank(card) : 0;
    let value;
    if (position === trick.length) {
      // We take the trick, at least for now; later seats may still beat us.
      const h = hold(card);
      value = h * (scoreOf(cards, own) + later * future) + (1 - h) * (shed - 0.2) - keep(card);
    } else {
      const winner = position < 0 ? -1 : (view.leader + position) % view.players;
      const feeds = winner >= 0 && painSuits(view, winner).has(suit(card));
      value = shed + (feeds ? (later ? 0.5 : 0.7) * rank(card) : -0.2) - keep(card);
    }
    if (value > bestValue || (value === bestValue && card < best)) {
      best = card;
      bestValue = value;
    }
  }
  return best;
}

function leadKey(card, own) {
  return (own.has(suit(card)) ? 1000 : 0) + rank(card) * 200 + card;
}

// -- the random strategy ---------------------------------------------------------------------

// SplitMix64 (Steele, Lea, Flood 2014): a small 64-bit generator, seeded with the bot seed.
// uint64 fields arrive as decimal strings (proto-loader's longs: String), so BigInt.
function seededRandom(seed) {
  const MASK = (1n << 64n) - 1n;
  let state = BigInt(seed) & MASK;
  return () => {
    state = (state + 0x9e3779b97f4a7c15n) & MASK;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
    z ^= z >> 31n;
    return Number(z >> 11n) / 2 ** 53; // uniform in [0, 1)
  };
}

// A uniformly random legal answer: `count` cards, two of two suits when the hand has two.
function chooseRandom(view, count, random) {
  const hand = view.hand;
  const pick = () => hand[Math.floor(random() * hand.length)];
  if (count === 1 || hand.length < 2) return [pick()];
  const oneSuit = new Set(hand.map(suit)).size === 1;
  for (;;) {
    // Rejection sampling keeps every legal pair equally likely.
    const a = pick();
    const b = pick();
    if (a !== b && (oneSuit || suit(a) !== suit(b))) return [a, b];
  }
}

// The answer to one request; a strategy bug answers the lowest card(s) instead of timing out.
// `random` is the stream's generator for this match (the random strategy's only).
function decide(request, strategy = "heuristic", random = Math.random) {
  const view = request.view;
  try {
    if (strategy === "random") return chooseRandom(view, request.kind === "DECISION_KIND_PAIN_CHOICE" ? request.count : 1, random);
    if (request.kind === "DECISION_KIND_PAIN_CHOICE") return choosePain(view, request.count);
    return [chooseCard(view)];
  } catch (err) {
    console.error(err);
    const sorted = [...view.hand].sort((a, b) => a - b);
    const other = sorted.find((c) => suit(c) !== suit(sorted[0]));
    return request.count === 2 ? [sorted[0], other === undefined ? sorted[1] : other] : [sorted[0]];
  }
}

// True when the revealed seed and nonce are the ones MatchStart committed to:
// SHA-256("sticheln/seed/v1" || seed as u64 big-endian || nonce).
function seedMatches(commitment, seed, nonce) {
  const seedBytes = Buffer.alloc(8);
  seedBytes.writeBigUInt64BE(BigInt(seed));
  const digest = crypto.createHash("sha256").update(SEED_DOMAIN).update(seedBytes).update(nonce).digest();
  return digest.equals(Buffer.from(commitment));
}

// -- the protocol loop -----------------------------------------------------------------------

function parseArgs(argv) {
  const args = {
    referee: process.env.STICHELN_REFEREE || "",
    token: process.env.STICHELN_TOKEN || "",
    "tls-ca": process.env.STICHELN_TLS_CA || "",
    name: process.env.STICHELN_BOT_NAME || "node-heuristic",
    seats: process.env.STICHELN_SEATS || "1",
    proto: process.env.STICHELN_PROTO_DIR || path.join(__dirname, "proto"),
    strategy: "heuristic",
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args) || i + 1 >= argv.length) {
      console.error(`node bot: unknown or incomplete option ${argv[i]}; allowed: --referee, --token, --tls-ca, --name, --seats, --proto, --strategy`);
      process.exit(2);
    }
    args[key] = argv[i + 1];
  }
  if (!args.referee) {
    console.error("node bot: no referee address: set STICHELN_REFEREE or pass --referee host:port");
    process.exit(2);
  }
  const seats = Number(args.seats);
  if (!Number.isInteger(seats) || seats < 1 || seats > 1024) {
    console.error(`node bot: --seats ${args.seats} is not allowed; allowed: a whole number from 1 to 1024`);
    process.exit(2);
  }
  args.seats = seats;
  if (args.strategy !== "heuristic" && args.strategy !== "random") {
    console.error(`node bot: --strategy ${args.strategy} is not allowed; allowed: heuristic, random`);
    process.exit(2);
  }
  return args;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const definition = protoLoader.loadSync("sticheln/v1/bot.proto", {
    includeDirs: [args.proto],
    keepCase: true, // field names as in the .proto: request_id, match_start, ...
    longs: String, // uint64 (request ids, the seed) as decimal strings
    enums: String, // enum values by name: "DECISION_KIND_CARD_PLAY"
    defaults: true, // unset fields as their defaults (0, [], "")
    oneofs: true, // message.kind names the field set
  });
  const v1 = grpc.loadPackageDefinition(definition).sticheln.v1;
  // With --tls-ca the stream is TLS, trusting that CA certificate (PEM).
  const credentials = args["tls-ca"]
    ? grpc.credentials.createSsl(fs.readFileSync(args["tls-ca"]))
    : grpc.credentials.createInsecure();
  const client = new v1.Referee(args.referee, credentials);
  let open = args.seats;
  for (let n = 0; n < args.seats; n++) {
    playStream(client, args, () => {
      open -= 1;
      if (open === 0) {
        client.close();
        process.exit(0);
      }
    });
  }
}

// One Referee.Play stream: one seat at a time; done() when the referee ends it with OK.
function playStream(client, args, done) {
  const call = client.Play();
  let start = null;
  let random = Math.random; // replaced at every MatchStart by one seeded with its bot_seed
  let dealt = []; // this match's round_start events: the hands to check at MatchEnd

  call.write({
    hello: {
      bot_name: args.name,
      bot_version: "1.0",
      protocol_version: PROTOCOL_VERSION,
      token: args.token,
      max_concurrent_matches: args.seats,
    },
  });
  call.on("data", (message) => {
    if (message.kind === "request") {
      const request = message.request;
      call.write({ decision: { request_id: request.request_id, cards: decide(request, args.strategy, random) } });
    } else if (message.kind === "match_start") {
      start = message.match_start;
      random = seededRandom(start.bot_seed);
      dealt = [];
    } else if (message.kind === "match_end") {
      const end = message.match_end;
      if (end.seed_withheld) {
        // A later match plays the same deal (duplicate mode): the seed stays secret until
        // then, so there is nothing to check yet.
        console.error(`${args.name}: the seed of match ${start ? start.match_id : "?"} is withheld, commitment not checked: ${end.seed_withheld}`);
      } else if (start && !seedMatches(start.seed_commitment, end.seed, end.seed_nonce)) {
        console.error(`${args.name}: warning: the revealed seed ${end.seed} does not match the commitment of match ${start.match_id}`);
      } else if (start) {
        // Re-deal every round from the revealed seed (docs/deal.md) and compare our hand.
        const wrong = dealt.filter((d) => {
          const hands = deal(start.rules, start.seating.length, end.seed, d.round_index, d.dealer).hands;
          return hands[start.seat].join(",") !== [...d.hand].sort((a, b) => a - b).join(",");
        });
        for (const d of wrong) console.error(`${args.name}: warning: match ${start.match_id}, round ${d.round_index + 1}: the hand dealt differs from the one the seed gives`);
        if (!wrong.length) console.error(`${args.name}: match ${start.match_id}: seed commitment and ${dealt.length} dealt hands verified`);
      }
      // The stream may carry the next MatchStart; the referee ends it when it is done.
    }
    for (const event of message.events) {
      if (event.kind === "round_start") dealt.push(event.round_start);
      if (event.kind === "fault") {
        const f = event.fault;
        console.error(`${args.name}: fault on request ${f.request_id}: ${f.reason}: ${f.detail} (strikes ${f.strikes})`);
      }
    }
  });
  call.on("end", () => call.end());
  call.on("error", (err) => {
    const what = err.code === grpc.status.UNAVAILABLE ? "cannot reach the referee at" : "the referee refused the stream at";
    console.error(`${args.name}: ${what} ${args.referee}: ${grpc.status[err.code]}: ${err.details}`);
    process.exit(1);
  });
  call.on("status", (status) => {
    if (status.code === grpc.status.OK) done();
  });
}

if (require.main === module) main();

module.exports = { trickWinner, scoreOf, deckCards, deal, places, choosePain, chooseCard, chooseRandom, seededRandom, seedMatches, cardText };
