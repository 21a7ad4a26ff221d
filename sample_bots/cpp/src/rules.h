// The rules of Sticheln a bot needs (docs/rules.md), free of gRPC so that they can be tested
// on their own against the conformance vectors (../../conformance/).
//
// A card is an int, suit * 16 + rank: suits 1..8 (clubs, spades, hearts, diamonds, caps,
// switches, planets, stars), ranks 0..15. A rank-0 card (a zero) never wins a trick.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sticheln {

using Card = uint32_t;
using Cards = std::vector<Card>;

inline int suit_of(Card card) { return static_cast<int>(card >> 4); }
inline int rank_of(Card card) { return static_cast<int>(card & 15); }

// "H12" for rank 12 of hearts, as the referee writes cards in its logs and records.
std::string card_text(Card card);

// The deck options of RuleSet, by their proto enum numbers (game.proto `Deck`).
enum class Deck { suits_per_player = 1, amigo = 2, french_zero_ace = 3, french_2_14 = 4 };

// The deck in canonical (ascending) order and the hand size for `players` players.
struct DeckInfo {
  Cards cards;
  int hand_size = 0;
};
DeckInfo deck_cards(Deck deck, int players, bool long_hands_3p);

// Why a trick went where it went (game.proto `TrickReason`, in the engine's words).
enum class TrickReason { off_suit_highest, off_suit_last_suit, lead_suit_highest, all_zero };
const char* reason_name(TrickReason reason);

struct TrickOutcome {
  int position = -1;  // index into the cards (0 = the leader's card); -1: nobody (all zeros)
  TrickReason reason = TrickReason::all_zero;
  bool tie = false;  // under "highest": an equal rank played later lost to the winner
};

// docs/rules.md rule 6 for the cards of a trick in play order (complete or in progress): the
// first card's suit is the lead suit, even a zero; zeros never win; a non-zero card of
// another suit beats the lead suit: the highest such card (last_suit = false), or the
// highest of the off-suit played most recently (last_suit = true); otherwise the highest
// lead-suit card; of equal ranks the earlier card wins.
TrickOutcome trick_winner(const Cards& cards, bool last_suit);

// docs/rules.md rule 8: a card of one of `pain_suits` scores minus its rank, any other +1.
int score_of(const Cards& cards, const std::vector<int>& pain_suits);

// The seeded deal of docs/deal.md: hands by seat (each sorted) and the cards set aside.
struct Deal {
  std::vector<Cards> hands;
  Cards set_aside;
};
Deal deal(const DeckInfo& deck, int players, uint64_t seed, uint32_t round_index, int dealer);

// docs/rules.md rule 10: every seat's place (1 = best; equal keys share a place, competition
// style 1, 2, 2, 4): the higher total first, then, with `positive_rounds_break_ties`, more
// rounds with a positive score; the seats in `forfeited` rank below all others.
std::vector<int> places(const std::vector<int>& totals, const std::vector<int>& positive_rounds,
                        bool positive_rounds_break_ties, const std::vector<int>& forfeited);

// True when sha256("sticheln/seed/v1" || seed as u64 big-endian || nonce) == commitment.
bool seed_matches(const std::string& commitment, uint64_t seed, const std::string& nonce);

}  // namespace sticheln
