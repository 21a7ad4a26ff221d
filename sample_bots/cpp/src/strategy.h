// The two decisions of a bot, on a plain copy of the proto View: which pain card(s) to
// pick and which card to play. Two strategies, the same as the Python sample bots':
// "heuristic" (sample_bots/python/heuristic_bot.py) and "random" (random_bot.py).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "rules.h"

namespace sticheln {

// What the strategies read of the proto View (game.proto), as plain values.
struct PlainView {
  Deck deck = Deck::suits_per_player;
  bool long_hands_3p = false;
  bool kept_in_hand = false;     // PAIN_CARD_RULE_KEPT_IN_HAND: the pain card is played
  bool pain_revealed = true;     // PAIN_VISIBILITY_REVEALED
  bool last_suit = false;        // TRUMP_RULE_LAST_SUIT
  int players = 0;
  int seat = 0;
  int leader = 0;                // who led the trick in progress
  Cards hand;                    // ascending
  std::vector<Cards> pain;       // pain[s]: seat s's pick, empty while this seat may not see it
  Cards trick;                   // the trick in progress, from the leader
  std::vector<Cards> tricks;     // the cards of this round's completed tricks

  std::vector<int> pain_suits(int s) const;
};

// The cards this seat has not seen: in other hands, or set aside at the deal.
Cards unseen_cards(const PlainView& view);

class Strategy {
 public:
  virtual ~Strategy() = default;
  // `count` pain cards of the hand (two of two suits when the hand has two suits).
  virtual Cards choose_pain(const PlainView& view, int count) = 0;
  // One card of the hand; any card is legal (there is no duty to follow suit).
  virtual Card choose_card(const PlainView& view) = 0;
  // A new match begins: `bot_seed` is MatchStart.bot_seed, the seed for the bot's own
  // random choices (the same for the seat in every match of the deal).
  virtual void start_match(uint64_t bot_seed) { (void)bot_seed; }
};

// A uniformly random legal choice, from a generator seeded at every match with its bot
// seed: the same cards and the same seed give the same choices.
class RandomStrategy : public Strategy {
 public:
  explicit RandomStrategy(uint64_t seed) : rng_(seed) {}
  Cards choose_pain(const PlainView& view, int count) override;
  Card choose_card(const PlainView& view) override;
  void start_match(uint64_t bot_seed) override { rng_.seed(bot_seed); }

 private:
  std::mt19937_64 rng_;
};

// A cheap pain suit; shed own pain cards and feed revealed pain suits into tricks others
// take; never take a trick holding own pain cards; keep zeros as safe dumps.
class HeuristicStrategy : public Strategy {
 public:
  Cards choose_pain(const PlainView& view, int count) override;
  Card choose_card(const PlainView& view) override;
};

}  // namespace sticheln
