// A Sticheln bot in C++: the referee's gRPC bot protocol (proto/sticheln/v1/bot.proto)
// on the stubs CMake generates from the repository's proto files, with the strategy of
// the Python heuristic sample bot (or the random one, --strategy random).
//
//   sticheln-bot [--referee ADDRESS] [--token TOKEN] [--tls-ca PEM] [--name NAME]
//                [--seats N] [--strategy heuristic|random]
//
// ADDRESS is host:port or unix:/path/to/socket (default $STICHELN_REFEREE); the token
// comes from $STICHELN_TOKEN, the CA certificate for TLS from $STICHELN_TLS_CA, the
// number of streams from $STICHELN_SEATS (a tournament sets it for a bot file that
// declares `seats`). Each stream says Hello, answers every DecisionRequest with one
// Decision, checks the seed commitment and its dealt hands at every MatchEnd, and serves
// match after match until the referee ends it. Exit status: 0 when the referee ended
// every stream with status OK; 1 (one line on stderr) when it refused a stream or could
// not be reached; 2 for a usage error.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "decide.h"
#include "rules.h"
#include "sticheln/v1/bot.grpc.pb.h"
#include "strategy.h"

namespace v1 = sticheln::v1;
using sticheln::Card;
using sticheln::Cards;

namespace {

constexpr uint32_t kProtocolVersion = 1;
const char* const kVersion = "1.0";

struct Options {
  std::string referee, token, tls_ca, name = "cpp-heuristic", strategy = "heuristic";
  int seats = 1;
};

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

[[noreturn]] void usage_error(const std::string& what) {
  std::cerr << "sticheln-bot: " << what << "\n";
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  o.referee = env("STICHELN_REFEREE");
  o.token = env("STICHELN_TOKEN");
  o.tls_ca = env("STICHELN_TLS_CA");
  std::string seats = env("STICHELN_SEATS"), name = env("STICHELN_BOT_NAME");
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--referee") o.referee = value();
    else if (arg == "--token") o.token = value();
    else if (arg == "--tls-ca") o.tls_ca = value();
    else if (arg == "--name") name = value();
    else if (arg == "--seats") seats = value();
    else if (arg == "--strategy") o.strategy = value();
    else usage_error("unknown option " + arg +
                     "; allowed: --referee --token --tls-ca --name --seats --strategy");
  }
  if (o.strategy != "heuristic" && o.strategy != "random")
    usage_error("--strategy " + o.strategy + " is not allowed; allowed: heuristic, random");
  o.name = name.empty() ? "cpp-" + o.strategy : name;
  if (!seats.empty()) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(seats.c_str(), &end, 10);
    if (errno || *end || n < 1 || n > 1024)
      usage_error("seats " + seats + " is not allowed; allowed: 1 to 1024");
    o.seats = static_cast<int>(n);
  }
  if (o.referee.empty())
    usage_error("no referee address: set STICHELN_REFEREE or pass --referee host:port");
  return o;
}

// The name of a gRPC status code, as the referee's messages and docs spell it.
const char* code_name(grpc::StatusCode code) {
  static const char* const kNames[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
      "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i <= 16 ? kNames[i] : "UNKNOWN";
}

std::mutex log_mutex;  // one line at a time on stderr from several streams

void log_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mutex);
  std::cerr << line << std::endl;
}

// One stream: one seat at a time, match after match, until the referee ends it.
class Seat {
 public:
  Seat(const Options& options, std::shared_ptr<grpc::Channel> channel, unsigned rng_seed)
      : options_(options), stub_(v1::Referee::NewStub(channel)) {
    if (options.strategy == "random")
      strategy_ = std::make_unique<sticheln::RandomStrategy>(rng_seed);
    else
      strategy_ = std::make_unique<sticheln::HeuristicStrategy>();
  }

  // Plays until the stream ends; its status says how (OK: the referee is done with us).
  grpc::Status play() {
    grpc::ClientContext context;
    auto stream = stub_->Play(&context);
    v1::BotMessage hello;
    auto* h = hello.mutable_hello();
    h->set_bot_name(options_.name);
    h->set_bot_version(kVersion);
    h->set_protocol_version(kProtocolVersion);
    h->set_token(options_.token);
    h->set_max_concurrent_matches(static_cast<uint32_t>(options_.seats));
    if (stream->Write(hello)) {
      v1::RefereeMessage message;
      while (stream->Read(&message)) {
        for (const auto& event : message.events()) on_event(event);
        if (message.has_request()) {
          // A failed write means the referee ended the stream: Finish() says how.
          if (!stream->Write(answer(message.request()))) break;
        } else if (message.has_match_start()) {
          start_ = message.match_start();
          strategy_->start_match(start_.bot_seed());
          dealt_.clear();
        } else if (message.has_match_end()) {
          on_match_end(message.match_end());
        }
      }
    }
    stream->WritesDone();
    return stream->Finish();
  }

 private:
  v1::BotMessage answer(const v1::DecisionRequest& request) {
    Cards cards;
    try {
      cards = sticheln::decide(*strategy_, request);
    } catch (const std::exception& e) {
      log_line(options_.name + ": strategy failed (" + e.what() + "); answering the lowest card");
      const auto& hand = request.view().hand();
      cards = sticheln::lowest_cards(Cards(hand.begin(), hand.end()),
                                     std::max(1, static_cast<int>(request.count())));
    }
    v1::BotMessage out;
    out.mutable_decision()->set_request_id(request.request_id());
    for (Card c : cards) out.mutable_decision()->add_cards(c);
    return out;
  }

  void on_event(const v1::Event& event) {
    if (event.has_round_start()) {
      const auto& rs = event.round_start();
      dealt_.push_back({rs.round_index(), rs.dealer(), Cards(rs.hand().begin(), rs.hand().end())});
    } else if (event.has_fault()) {
      const auto& f = event.fault();
      log_line(options_.name + ": fault " + v1::FaultReason_Name(f.reason()) + " (request " +
               std::to_string(f.request_id()) + ", strikes " + std::to_string(f.strikes()) +
               "): " + f.detail());
    }
  }

  // The seed commitment of MatchStart, checked against the revealed seed; then every hand
  // this seat was dealt, re-derived from the seed (docs/deal.md).
  void on_match_end(const v1::MatchEnd& end) {
    const std::string& match = start_.match_id();
    if (!end.seed_withheld().empty()) {  // a later match plays the same deal (duplicate mode)
      log_line(options_.name + ": match " + match +
               ": the seed is withheld, the seed commitment is not checked: " +
               end.seed_withheld());
      return;
    }
    if (end.seed_nonce().empty()) {
      log_line(options_.name + ": match " + match +
               ": the seed was not revealed; the seed commitment is not checked");
      return;
    }
    if (!sticheln::seed_matches(start_.seed_commitment(), end.seed(), end.seed_nonce())) {
      log_line(options_.name + ": warning: the revealed seed " + std::to_string(end.seed()) +
               " does not match the seed commitment of match " + match);
      return;
    }
    const auto& rules = start_.rules();
    const int players = start_.seating_size();
    const auto deck = sticheln::deck_cards(static_cast<sticheln::Deck>(rules.deck()), players,
                                           rules.long_hands_3p());
    for (const auto& d : dealt_) {
      const auto derived =
          sticheln::deal(deck, players, end.seed(), d.round_index, static_cast<int>(d.dealer));
      if (derived.hands.at(start_.seat()) != d.hand) {
        log_line(options_.name + ": warning: match " + match + " round " +
                 std::to_string(d.round_index + 1) +
                 ": the hand dealt differs from the one the seed gives");
        return;
      }
    }
    log_line(options_.name + ": match " + match + ": seed commitment and " +
             std::to_string(dealt_.size()) + " dealt hands verified");
  }

  struct Dealt {
    uint32_t round_index;
    uint32_t dealer;
    Cards hand;
  };

  const Options& options_;
  std::unique_ptr<v1::Referee::Stub> stub_;
  std::unique_ptr<sticheln::Strategy> strategy_;
  v1::MatchStart start_;
  std::vector<Dealt> dealt_;
};

std::shared_ptr<grpc::Channel> make_channel(const Options& o) {
  if (o.tls_ca.empty()) return grpc::CreateChannel(o.referee, grpc::InsecureChannelCredentials());
  std::ifstream file(o.tls_ca, std::ios::binary);
  if (!file) usage_error("cannot read the TLS CA certificate " + o.tls_ca);
  std::ostringstream pem;
  pem << file.rdbuf();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem.str();
  return grpc::CreateChannel(o.referee, grpc::SslCredentials(ssl));
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  auto channel = make_channel(options);
  // One stream per seat, each on its own thread with its own strategy state.
  std::vector<grpc::Status> statuses(options.seats);
  std::vector<std::thread> threads;
  std::random_device entropy;
  for (int i = 0; i < options.seats; ++i) {
    const unsigned rng_seed = entropy();
    threads.emplace_back(
        [&, i, rng_seed] { statuses[i] = Seat(options, channel, rng_seed).play(); });
  }
  for (auto& t : threads) t.join();
  for (const auto& status : statuses) {
    if (status.ok()) continue;
    const bool unreachable = status.error_code() == grpc::StatusCode::UNAVAILABLE;
    std::cerr << options.name << ": "
              << (unreachable ? "cannot reach the referee at " : "the referee at ")
              << options.referee << (unreachable ? "" : " refused the stream") << ": "
              << code_name(status.error_code()) << ": " << status.error_message() << "\n";
    return 1;
  }
  return 0;
}
