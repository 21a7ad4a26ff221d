#include "rules.h"

#include <openssl/sha.h>

#include <algorithm>
#include <tuple>

namespace sticheln {

std::string card_text(Card card) {
  static const char kLetters[] = "?CSHDKWPR";
  const int s = suit_of(card);
  return std::string(1, s >= 1 && s <= 8 ? kLetters[s] : '?') + std::to_string(rank_of(card));
}

DeckInfo deck_cards(Deck deck, int players, bool long_hands_3p) {
  Cards cards;
  auto add = [&cards](int first_suit, int last_suit, const std::vector<int>& ranks) {
    for (int s = first_suit; s <= last_suit; ++s)
      for (int r : ranks) cards.push_back(static_cast<Card>(s * 16 + r));
  };
  auto range = [](int from, int to) {  // from .. to - 1
    std::vector<int> out;
    for (int r = from; r < to; ++r) out.push_back(r);
    return out;
  };
  switch (deck) {
    case Deck::amigo: {  // 6 suits x 0..14; fewer suits and ranks for fewer players
      const int top = players == 3 ? 9 : players == 4 ? 12 : 15;
      add(1, players >= 6 ? 6 : 5, range(0, top));
      break;
    }
    case Deck::french_zero_ace: {  // Ace = 0, then 2..13: there is no 1
      std::vector<int> ranks = {0};
      const int top = players == 3 ? (long_hands_3p ? 13 : 10) : 14;
      for (int r = 2; r < top; ++r) ranks.push_back(r);
      add(1, 4, ranks);
      if (players == 5)  // all but the 2 of clubs and the 2 of spades
        cards.erase(std::remove_if(cards.begin(), cards.end(),
                                   [](Card c) { return c == 1 * 16 + 2 || c == 2 * 16 + 2; }),
                    cards.end());
      if (players >= 6)  // all but the four 2s
        cards.erase(std::remove_if(cards.begin(), cards.end(),
                                   [](Card c) { return rank_of(c) == 2; }),
                    cards.end());
      break;
    }
    case Deck::french_2_14:
      add(1, 4, range(2, 15));
      break;
    case Deck::suits_per_player:
    default:
      add(1, players, range(0, 15));
  }
  std::sort(cards.begin(), cards.end());
  const int hand_size = players > 0 ? static_cast<int>(cards.size()) / players : 0;
  return {cards, hand_size};
}

const char* reason_name(TrickReason reason) {
  switch (reason) {
    case TrickReason::off_suit_highest: return "off_suit_highest";
    case TrickReason::off_suit_last_suit: return "off_suit_last_suit";
    case TrickReason::lead_suit_highest: return "lead_suit_highest";
    case TrickReason::all_zero: return "all_zero";
  }
  return "?";
}

TrickOutcome trick_winner(const Cards& cards, bool last_suit) {
  TrickOutcome out;
  if (cards.empty()) return out;
  const int lead = suit_of(cards[0]);
  if (!last_suit) {
    // The highest non-zero card of a suit other than the lead suit; earlier wins ties.
    int best_rank = 0;
    for (size_t i = 0; i < cards.size(); ++i) {
      const int r = rank_of(cards[i]);
      if (r == 0 || suit_of(cards[i]) == lead) continue;
      if (r > best_rank) {
        out = {static_cast<int>(i), TrickReason::off_suit_highest, false};
        best_rank = r;
      } else if (r == best_rank) {
        out.tie = true;
      }
    }
    if (out.position >= 0) return out;
  } else {
    // The off-suit played most recently takes priority; the highest card within it wins.
    int latest = -1;
    for (size_t i = cards.size(); i-- > 0;) {
      if (rank_of(cards[i]) && suit_of(cards[i]) != lead) {
        latest = suit_of(cards[i]);
        break;
      }
    }
    if (latest >= 0) {
      int best_rank = 0;
      for (size_t i = 0; i < cards.size(); ++i) {
        if (suit_of(cards[i]) == latest && rank_of(cards[i]) > best_rank) {
          out = {static_cast<int>(i), TrickReason::off_suit_last_suit, false};
          best_rank = rank_of(cards[i]);
        }
      }
      return out;
    }
  }
  // Only lead-suit cards and zeros were played: the highest lead-suit card wins.
  int best_rank = 0;
  for (size_t i = 0; i < cards.size(); ++i) {
    if (rank_of(cards[i]) > best_rank) {
      out = {static_cast<int>(i), TrickReason::lead_suit_highest, false};
      best_rank = rank_of(cards[i]);
    }
  }
  if (out.position >= 0) return out;
  return {-1, TrickReason::all_zero, false};
}

int score_of(const Cards& cards, const std::vector<int>& pain_suits) {
  int score = 0;
  for (Card c : cards) {
    const bool pain =
        std::find(pain_suits.begin(), pain_suits.end(), suit_of(c)) != pain_suits.end();
    score += pain ? -rank_of(c) : 1;
  }
  return score;
}

namespace {

void put_u64(unsigned char* out, uint64_t x) {
  for (int i = 7; i >= 0; --i, x >>= 8) out[i] = static_cast<unsigned char>(x & 0xff);
}

// The deal's byte stream: SHA-256 blocks in counter mode, read as big-endian u64 words.
class DealStream {
 public:
  DealStream(uint64_t seed, uint32_t round_index) {
    const std::string domain = "sticheln/deal/v1";
    std::copy(domain.begin(), domain.end(), prefix_);
    put_u64(prefix_ + 16, seed);
    for (int i = 0; i < 4; ++i)
      prefix_[24 + i] = static_cast<unsigned char>(round_index >> (24 - 8 * i));
  }

  // A uniform integer in [0, n) by rejection sampling (no modulo bias).
  uint64_t below(uint64_t n) {
    // 2**64 - (2**64 mod n), computed without 128-bit arithmetic.
    const uint64_t rem = (UINT64_MAX % n + 1) % n;
    for (;;) {
      const uint64_t x = next();
      if (rem == 0 || x < 0 - rem) return x % n;
    }
  }

 private:
  uint64_t next() {
    if (used_ == 4) {
      unsigned char data[36];
      std::copy(prefix_, prefix_ + 28, data);
      put_u64(data + 28, counter_++);
      SHA256(data, sizeof data, block_);
      used_ = 0;
    }
    uint64_t x = 0;
    for (int i = 0; i < 8; ++i) x = (x << 8) | block_[8 * used_ + i];
    ++used_;
    return x;
  }

  unsigned char prefix_[28] = {};
  unsigned char block_[32] = {};
  uint64_t counter_ = 0;
  int used_ = 4;
};

}  // namespace

Deal deal(const DeckInfo& deck, int players, uint64_t seed, uint32_t round_index, int dealer) {
  Cards order = deck.cards;
  DealStream stream(seed, round_index);
  for (size_t i = order.size(); i-- > 1;) std::swap(order[i], order[stream.below(i + 1)]);
  Deal out;
  out.hands.resize(players);
  const size_t dealt = static_cast<size_t>(deck.hand_size) * players;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k < dealt)
      out.hands[(dealer + 1 + k) % players].push_back(order[k]);
    else
      out.set_aside.push_back(order[k]);
  }
  for (auto& hand : out.hands) std::sort(hand.begin(), hand.end());
  return out;
}

std::vector<int> places(const std::vector<int>& totals, const std::vector<int>& positive_rounds,
                        bool positive_rounds_break_ties, const std::vector<int>& forfeited) {
  const size_t n = totals.size();
  auto key = [&](size_t s) {
    const bool out = std::find(forfeited.begin(), forfeited.end(), static_cast<int>(s)) !=
                     forfeited.end();
    return std::make_tuple(out, -totals[s], positive_rounds_break_ties ? -positive_rounds[s] : 0);
  };
  std::vector<int> result(n, 1);
  for (size_t s = 0; s < n; ++s)
    for (size_t o = 0; o < n; ++o)
      if (key(o) < key(s)) ++result[s];
  return result;
}

bool seed_matches(const std::string& commitment, uint64_t seed, const std::string& nonce) {
  std::string data = "sticheln/seed/v1";
  unsigned char be[8];
  put_u64(be, seed);
  data.append(reinterpret_cast<const char*>(be), 8);
  data += nonce;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return commitment == std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

}  // namespace sticheln
