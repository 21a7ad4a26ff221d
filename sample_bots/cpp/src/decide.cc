#include "decide.h"

#include <algorithm>

namespace sticheln {

// The proto View as the plain values the strategies read.
PlainView plain_view(const v1::View& v) {
  PlainView p;
  p.deck = static_cast<Deck>(v.rules().deck());
  p.long_hands_3p = v.rules().long_hands_3p();
  p.kept_in_hand = v.rules().pain_card() == v1::PAIN_CARD_RULE_KEPT_IN_HAND;
  p.pain_revealed = v.rules().pain_visibility() == v1::PAIN_VISIBILITY_REVEALED;
  p.last_suit = v.rules().trump_rule() == v1::TRUMP_RULE_LAST_SUIT;
  p.players = static_cast<int>(v.players());
  p.seat = static_cast<int>(v.seat());
  p.leader = v.leader();
  p.hand.assign(v.hand().begin(), v.hand().end());
  for (const auto& pick : v.pain()) p.pain.emplace_back(pick.cards().begin(), pick.cards().end());
  p.pain.resize(p.players);
  p.trick.assign(v.trick().begin(), v.trick().end());
  for (const auto& t : v.tricks()) p.tricks.emplace_back(t.cards().begin(), t.cards().end());
  return p;
}

// The lowest card(s): a legal answer when a strategy fails (it should not).
Cards lowest_cards(Cards hand, int count) {
  std::sort(hand.begin(), hand.end());
  if (count == 1 || hand.size() < 2) return {hand.at(0)};
  for (Card c : hand)
    if (suit_of(c) != suit_of(hand[0])) return {hand[0], c};
  return {hand[0], hand[1]};
}

Cards decide(Strategy& strategy, const v1::DecisionRequest& request) {
  const auto view = plain_view(request.view());
  if (request.kind() == v1::DECISION_KIND_PAIN_CHOICE)
    return strategy.choose_pain(view, std::max(1, static_cast<int>(request.count())));
  return {strategy.choose_card(view)};
}

}  // namespace sticheln
