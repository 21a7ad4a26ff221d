// Answers DecisionRequests read from stdin, one JSON object per line (protobuf's JSON
// mapping), with the bot's strategy, printing the chosen card codes, one line each: the
// tests compare its choices with the Python heuristic bot's on the same requests.
//
//   strategy_probe [heuristic|random] < requests.jsonl
#include <google/protobuf/util/json_util.h>

#include <iostream>
#include <memory>
#include <string>

#include "decide.h"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "heuristic";
  std::unique_ptr<sticheln::Strategy> strategy;
  if (name == "random")
    strategy = std::make_unique<sticheln::RandomStrategy>(1);
  else
    strategy = std::make_unique<sticheln::HeuristicStrategy>();
  std::string line;
  int n = 0;
  while (std::getline(std::cin, line)) {
    ++n;
    sticheln::v1::DecisionRequest request;
    if (!google::protobuf::util::JsonStringToMessage(line, &request).ok()) {
      std::cerr << "strategy_probe: line " << n << " is not a DecisionRequest in JSON\n";
      return 1;
    }
    std::string out;
    for (auto c : sticheln::decide(*strategy, request))
      out += (out.empty() ? "" : " ") + std::to_string(c);
    std::cout << out << "\n";
  }
  return 0;
}
