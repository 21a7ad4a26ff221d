#include "strategy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace sticheln {

std::vector<int> PlainView::pain_suits(int s) const {
  std::vector<int> out;
  if (s < 0 || s >= static_cast<int>(pain.size())) return out;
  for (Card c : pain[s]) out.push_back(suit_of(c));
  return out;
}

Cards unseen_cards(const PlainView& view) {
  std::set<Card> seen(view.hand.begin(), view.hand.end());
  seen.insert(view.trick.begin(), view.trick.end());
  for (const auto& t : view.tricks) seen.insert(t.begin(), t.end());
  // Under kept_in_hand another seat's revealed pain card is still in its hand: unseen.
  for (int s = 0; s < static_cast<int>(view.pain.size()); ++s)
    if (!view.kept_in_hand || s == view.seat) seen.insert(view.pain[s].begin(), view.pain[s].end());
  Cards out;
  for (Card c : deck_cards(view.deck, view.players, view.long_hands_3p).cards)
    if (!seen.count(c)) out.push_back(c);
  return out;
}

// -- random ----------------------------------------------------------------------------------

Cards RandomStrategy::choose_pain(const PlainView& view, int count) {
  std::uniform_int_distribution<size_t> pick(0, view.hand.size() - 1);
  if (count == 1 || view.hand.size() < 2) return {view.hand[pick(rng_)]};
  std::set<int> suits;
  for (Card c : view.hand) suits.insert(suit_of(c));
  for (;;) {  // rejection sampling keeps every legal pair equally likely
    const size_t a = pick(rng_), b = pick(rng_);
    if (a == b) continue;
    if (suits.size() == 1 || suit_of(view.hand[a]) != suit_of(view.hand[b]))
      return {view.hand[a], view.hand[b]};
  }
}

Card RandomStrategy::choose_card(const PlainView& view) {
  std::uniform_int_distribution<size_t> pick(0, view.hand.size() - 1);
  return view.hand[pick(rng_)];
}

// -- heuristic -------------------------------------------------------------------------------
// The weights of the card-play evaluation, in points of the round score, as in
// sample_bots/python/heuristic_bot.py.

namespace {

constexpr double kShedOwnPain = 0.8;  // shedding a card of the own pain suit, per rank
constexpr double kFeedFinal = 0.7;    // feeding a pain card to the seat that takes the trick
constexpr double kFeedOpen = 0.5;     // ... to the seat winning now, when others still play
constexpr double kGift = 0.2;         // any other card lost to another seat scores +1 for it
constexpr double kKeepZero = 0.4;     // a zero is worth keeping as a future safe dump
constexpr double kKeepHigh = 0.05;    // a high card is worth keeping, per rank
constexpr double kContest = 0.6;      // the chance that a seat holding a beater plays it

bool has(const std::vector<int>& suits, int s) {
  return std::find(suits.begin(), suits.end(), s) != suits.end();
}

// The estimated cost of each card of the hand as the pain card: its own rank (halved
// under kept_in_hand, where it costs only if we capture it), half the ranks of the other
// cards of its suit in the hand (each must be shed), a little for its suit in other hands.
std::map<Card, double> pain_card_costs(const PlainView& view) {
  std::map<int, int> in_hand, outside;
  for (Card c : view.hand) in_hand[suit_of(c)] += rank_of(c);
  for (Card c : deck_cards(view.deck, view.players, view.long_hands_3p).cards)
    outside[suit_of(c)] += rank_of(c);
  const double pick_weight = view.kept_in_hand ? 0.5 : 1.0;
  std::map<Card, double> costs;
  for (Card c : view.hand) {
    const int s = suit_of(c), r = rank_of(c);
    costs[c] = pick_weight * r + 0.5 * (in_hand[s] - r) + 0.04 * (outside[s] - in_hand[s]);
  }
  return costs;
}

// True when `other`, played after `card` (which takes the trick now), takes it instead.
bool beats(Card other, Card card, int lead, bool last_suit) {
  if (!rank_of(other)) return false;
  if (suit_of(card) == lead) return suit_of(other) != lead || rank_of(other) > rank_of(card);
  if (suit_of(other) == lead) return false;
  if (last_suit) return suit_of(other) != suit_of(card) || rank_of(other) > rank_of(card);
  return rank_of(other) > rank_of(card);
}

// What every candidate card of one card play is judged against.
class Context {
 public:
  explicit Context(const PlainView& view)
      : view_(view),
        lead_(suit_of(view.trick[0])),
        later_(view.players - static_cast<int>(view.trick.size()) - 1),
        own_(view.pain_suits(view.seat)),
        unseen_(unseen_cards(view)),
        held_(static_cast<int>(view.hand.size())) {
    future_ = future_card_value();
  }

  // The estimated worth of playing `card` now, in round points.
  double value(Card card) const {
    Cards trick = view_.trick;
    trick.push_back(card);
    const int position = trick_winner(trick, view_.last_suit).position;
    const int r = rank_of(card);
    const bool pain = has(own_, suit_of(card));
    const double keep = r == 0 ? kKeepZero : (pain ? 0.0 : kKeepHigh * r);
    const double shed = pain ? kShedOwnPain * r : 0.0;
    if (position == static_cast<int>(view_.trick.size())) {  // our card takes it, for now
      const double hold = hold_probability(card);
      const double win = score_of(trick, own_) + later_ * future_;
      return hold * win + (1 - hold) * (shed - kGift) - keep;
    }
    const int winner = position >= 0 ? (view_.leader + position) % view_.players : -1;
    double feed = -kGift;
    if (winner >= 0 && has(view_.pain_suits(winner), suit_of(card)))
      feed = (later_ ? kFeedOpen : kFeedFinal) * r;
    return shed + feed - keep;
  }

 private:
  // The chance that no seat after us beats `card`, from the cards still unseen.
  double hold_probability(Card card) const {
    if (!later_) return 1.0;
    int beaters = 0;
    for (Card u : unseen_) beaters += beats(u, card, lead_, view_.last_suit);
    const double total = static_cast<double>(unseen_.size());
    if (!beaters || !total) return 1.0;
    const double none_held = std::pow(1 - beaters / total, held_);
    return std::pow(1 - kContest * (1 - none_held), later_);
  }

  // What one more card in a trick we take is worth to us, on average: once our pain suit
  // is known, a seat holding one of its cards will feed it to us.
  double future_card_value() const {
    if (own_.empty() || !view_.pain_revealed) return 1.0;
    Cards pain_cards;
    for (Card u : unseen_)
      if (has(own_, suit_of(u))) pain_cards.push_back(u);
    if (pain_cards.empty() || unseen_.empty()) return 1.0;
    const double held =
        1 - std::pow(1 - static_cast<double>(pain_cards.size()) / unseen_.size(), held_);
    double mean_rank = 0;
    for (Card u : pain_cards) mean_rank += rank_of(u);
    mean_rank /= pain_cards.size();
    return (1 - held) - held * mean_rank;
  }

  const PlainView& view_;
  int lead_;
  int later_;  // seats still to play after us
  std::vector<int> own_;
  Cards unseen_;
  int held_;  // the seats after us hold as many cards as we do
  double future_ = 1.0;
};

}  // namespace

Cards HeuristicStrategy::choose_pain(const PlainView& view, int count) {
  const auto costs = pain_card_costs(view);
  Cards hand = view.hand;
  std::sort(hand.begin(), hand.end());
  if (count == 1 || hand.size() < 2) {
    Card best = hand[0];
    for (Card c : hand)
      if (std::make_tuple(costs.at(c), c) < std::make_tuple(costs.at(best), best)) best = c;
    return {best};
  }
  std::set<int> suits;
  for (Card c : hand) suits.insert(suit_of(c));
  const bool one_suit = suits.size() == 1;  // a hand of one suit: any two cards
  bool found = false;
  std::tuple<double, Card, Card> best{};
  for (size_t i = 0; i < hand.size(); ++i)
    for (size_t j = i + 1; j < hand.size(); ++j) {
      if (!one_suit && suit_of(hand[i]) == suit_of(hand[j])) continue;
      auto key = std::make_tuple(costs.at(hand[i]) + costs.at(hand[j]), hand[i], hand[j]);
      if (!found || key < best) best = key, found = true;
    }
  return {std::get<1>(best), std::get<2>(best)};
}

Card HeuristicStrategy::choose_card(const PlainView& view) {
  const auto own = view.pain_suits(view.seat);
  if (view.trick.empty()) {
    // Leading: a lead card only wins if nobody plays a non-zero card of another suit;
    // lead a zero (it surely loses), else the lowest card outside the own pain suit.
    auto key = [&](Card c) {
      return std::make_tuple(rank_of(c) != 0, has(own, suit_of(c)), rank_of(c), c);
    };
    return *std::min_element(view.hand.begin(), view.hand.end(),
                             [&](Card a, Card b) { return key(a) < key(b); });
  }
  const Context ctx(view);
  Card best = view.hand[0];
  double best_value = ctx.value(best);
  for (Card c : view.hand) {  // the best value; of equal values the lower card
    const double v = ctx.value(c);
    if (v > best_value || (v == best_value && c < best)) best = c, best_value = v;
  }
  return best;
}

}  // namespace sticheln
