// Runs every file of the rules conformance vectors (conformance/*.json, generated from the
// referee's engine) against this bot's rules (rules.h): decks, seeded deals (the cards set
// aside included), trick winners with their reason, whole rounds, whole matches (the
// dealer's rotation, running totals, places) and match places.
//
//   conformance_test ../../conformance      # exit 0 when every case agrees, 77 when the
//                                           # folder holds no vectors (ctest: skipped)
//
// The JSON is read with protobuf's own JSON parser into a google.protobuf.Struct, so the
// test needs nothing beyond the bot's own libraries.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>

#include "rules.h"

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;
using sticheln::Cards;

namespace {

const Value& field(const Struct& s, const std::string& name) {
  auto it = s.fields().find(name);
  if (it == s.fields().end()) throw std::runtime_error("missing field " + name);
  return it->second;
}
int num(const Struct& s, const std::string& name) {
  return static_cast<int>(field(s, name).number_value());
}
std::string str(const Struct& s, const std::string& name) { return field(s, name).string_value(); }
Cards cards_of(const Value& v) {
  Cards out;
  for (const auto& c : v.list_value().values())
    out.push_back(static_cast<sticheln::Card>(c.number_value()));
  return out;
}
Cards cards(const Struct& s, const std::string& name) { return cards_of(field(s, name)); }
std::vector<Cards> card_lists(const Struct& s, const std::string& name) {
  std::vector<Cards> out;
  for (const auto& v : field(s, name).list_value().values()) out.push_back(cards_of(v));
  return out;
}

sticheln::Deck deck_of(const std::string& name) {
  if (name == "amigo") return sticheln::Deck::amigo;
  if (name == "french_zero_ace") return sticheln::Deck::french_zero_ace;
  if (name == "french_2_14") return sticheln::Deck::french_2_14;
  if (name == "suits_per_player") return sticheln::Deck::suits_per_player;
  throw std::runtime_error("unknown deck " + name);
}
sticheln::DeckInfo deck_for(const Struct& c) {
  const Struct& rules = field(c, "rules").struct_value();
  return sticheln::deck_cards(deck_of(str(rules, "deck")), num(c, "players"),
                              field(rules, "long_hands_3p").bool_value());
}

std::string text(const Cards& cs) {
  std::string out;
  for (auto c : cs) out += (out.empty() ? "" : " ") + sticheln::card_text(c);
  return out;
}

// Every case of one file; `check` returns "" when the case agrees, else what differs.
int run_file(const std::string& dir, const std::string& name,
             const std::function<std::string(const Struct&)>& check) {
  std::ifstream in(dir + "/" + name);
  if (!in) {
    std::cout << name << ": cannot read " << dir << "/" << name << "\n";
    return 1;
  }
  std::stringstream json;
  json << in.rdbuf();
  Struct file;
  if (!google::protobuf::util::JsonStringToMessage(json.str(), &file).ok()) {
    std::cout << name << ": not valid JSON\n";
    return 1;
  }
  int failed = 0, n = 0;
  for (const auto& v : field(file, "cases").list_value().values()) {
    ++n;
    std::string why;
    try {
      why = check(v.struct_value());
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty() && ++failed <= 10) std::cout << name << ": case " << n << ": " << why << "\n";
  }
  std::cout << name << ": " << n - failed << " of " << n << " cases agree\n";
  return failed ? 1 : 0;
}

std::string check_deck(const Struct& c) {
  const auto deck = deck_for(c);
  if (deck.cards != cards(c, "cards")) return "deck " + text(deck.cards);
  if (deck.hand_size != num(c, "hand_size")) return "hand size " + std::to_string(deck.hand_size);
  return "";
}

std::string check_deal(const Struct& c) {
  const uint64_t seed = std::stoull(str(c, "seed"));
  const auto d = sticheln::deal(deck_for(c), num(c, "players"), seed,
                                static_cast<uint32_t>(num(c, "round_index")), num(c, "dealer"));
  if (d.hands != card_lists(c, "hands")) return "hands differ, seat 0: " + text(d.hands.at(0));
  if (d.set_aside != cards(c, "set_aside")) return "set aside " + text(d.set_aside);
  return "";
}

std::string check_trick(const Struct& c) {
  const Cards cs = cards(c, "cards");
  const auto got = sticheln::trick_winner(cs, str(c, "trump_rule") == "last_suit");
  std::ostringstream out;
  if (got.position != num(c, "position") || sticheln::reason_name(got.reason) != str(c, "reason") ||
      got.tie != field(c, "tie").bool_value())
    out << text(cs) << ": position " << got.position << " " << sticheln::reason_name(got.reason)
        << (got.tie ? " tie" : "");
  return out.str();
}

// One dealt and played round `c` (a rounds.json case, or a round of a matches.json case)
// under `rules` (the case's or its match's) from the match seed.
std::string check_played_round(const Struct& c, const Struct& rules, const sticheln::DeckInfo& deck,
                               int players, uint64_t seed) {
  const auto d = sticheln::deal(deck, players, seed, static_cast<uint32_t>(num(c, "round_index")),
                                num(c, "dealer"));
  if (d.hands != card_lists(c, "hands")) return "the deal differs";
  if (d.set_aside != cards(c, "set_aside")) return "the cards set aside differ: " + text(d.set_aside);
  const bool last_suit = str(rules, "trump_rule") == "last_suit";
  int t = 0;
  for (const auto& tv : field(c, "tricks").list_value().values()) {
    const Struct& trick = tv.struct_value();
    const auto got = sticheln::trick_winner(cards(trick, "cards"), last_suit);
    const int leader = num(trick, "leader");
    ++t;
    if (got.position < 0) {  // all zeros: set aside, or the leader takes it
      const int want = str(rules, "all_zero_trick") == "leader_takes" ? leader : -1;
      if (num(trick, "winner") != want) return "trick " + std::to_string(t) + ": all zeros";
    } else if ((leader + got.position) % players != num(trick, "winner")) {
      return "trick " + std::to_string(t) + ": winner seat " +
             std::to_string((leader + got.position) % players);
    }
  }
  // Rule 8 over the captured cards, plus the own pain card(s) when they are set aside.
  const bool set_aside = str(rules, "pain_card") == "set_aside";
  const auto captured = card_lists(c, "captured");
  const auto pain = card_lists(c, "pain");
  const auto& scores = field(c, "scores").list_value().values();
  for (int s = 0; s < players; ++s) {
    Cards pile = captured.at(s);
    std::vector<int> suits;
    for (auto p : pain.at(s)) suits.push_back(sticheln::suit_of(p));
    if (set_aside) pile.insert(pile.end(), pain.at(s).begin(), pain.at(s).end());
    const int score = sticheln::score_of(pile, suits);
    if (score != static_cast<int>(scores.Get(s).number_value()))
      return "seat " + std::to_string(s) + " scores " + std::to_string(score);
  }
  return "";
}

std::string check_round(const Struct& c) {
  return check_played_round(c, field(c, "rules").struct_value(), deck_for(c), num(c, "players"),
                            std::stoull(str(c, "seed")));
}

std::vector<int> ints(const Struct& s, const std::string& name) {
  std::vector<int> out;
  for (const auto& v : field(s, name).list_value().values())
    out.push_back(static_cast<int>(v.number_value()));
  return out;
}

std::string check_match(const Struct& c) {
  const Struct& rules = field(c, "rules").struct_value();
  const int players = num(c, "players");
  const uint64_t seed = std::stoull(str(c, "seed"));
  const auto deck = deck_for(c);
  const Value& fixed = field(rules, "rounds");
  const int rounds = fixed.has_number_value() ? static_cast<int>(fixed.number_value()) : players;
  const auto& played = field(c, "rounds").list_value().values();
  if (num(c, "rounds_total") != rounds || played.size() != rounds)
    return "rounds: " + std::to_string(played.size()) + ", expected " + std::to_string(rounds);
  std::vector<int> totals(players, 0), positive(players, 0);
  for (int r = 0; r < rounds; ++r) {
    const Struct& round = played.Get(r).struct_value();
    const std::string where = "round " + std::to_string(r + 1) + ": ";
    if (num(round, "round_index") != r) return where + "round_index";
    if (num(round, "dealer") != r % players)  // the deal passes to the left
      return where + "dealt by seat " + std::to_string(num(round, "dealer"));
    const std::string why = check_played_round(round, rules, deck, players, seed);
    if (!why.empty()) return where + why;
    const auto scores = ints(round, "scores");
    for (int s = 0; s < players; ++s) {
      totals[s] += scores.at(s);
      positive[s] += scores.at(s) > 0;
    }
    if (totals != ints(round, "totals")) return where + "the running totals differ";
  }
  if (totals != ints(c, "totals") || positive != ints(c, "positive_rounds"))
    return "the match totals differ";
  if (sticheln::places(totals, positive, str(rules, "match_ties") == "positive_rounds", {}) !=
      ints(c, "places"))
    return "the places differ";
  return "";
}

std::string check_places(const Struct& c) {
  const auto got = sticheln::places(ints(c, "totals"), ints(c, "positive_rounds"),
                                    str(c, "match_ties") == "positive_rounds", ints(c, "forfeited"));
  if (got != ints(c, "places")) {
    std::string out = "places";
    for (int p : got) out += " " + std::to_string(p);
    return out;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "../../conformance";
  if (!std::ifstream(dir + "/decks.json")) {
    // A starter copied out of the repository has no vectors beside it: say where they are
    // and how to point the build at them, and exit 77, which ctest reports as skipped
    // (not as "no tests found", and not as a pass).
    std::cout << "no conformance vectors in " << dir
              << ": they are the repository's conformance/ folder; configure with "
                 "-DSTICHELN_CONFORMANCE_DIR=/path/to/the/repository/conformance (or copy "
                 "that folder) and run ctest again\n";
    return 77;
  }
  int failed = 0;
  failed += run_file(dir, "decks.json", check_deck);
  failed += run_file(dir, "deals.json", check_deal);
  failed += run_file(dir, "tricks.json", check_trick);
  failed += run_file(dir, "rounds.json", check_round);
  failed += run_file(dir, "matches.json", check_match);
  failed += run_file(dir, "places.json", check_places);
  std::cout << (failed ? "FAILED" : "all vectors agree") << "\n";
  return failed ? 1 : 0;
}
