// From a DecisionRequest to the cards that answer it: the proto View as the plain values
// the strategies read, and the strategy's choice for the request's kind.
#pragma once

#include "rules.h"
#include "sticheln/v1/bot.pb.h"
#include "strategy.h"

namespace sticheln {

// The proto View (game.proto) as the plain values of PlainView.
PlainView plain_view(const v1::View& view);

// The card(s) answering `request`: `count` pain cards, or one card to play.
Cards decide(Strategy& strategy, const v1::DecisionRequest& request);

// The lowest card(s), the referee's fallback: a legal answer when a strategy fails.
Cards lowest_cards(Cards hand, int count);

}  // namespace sticheln
