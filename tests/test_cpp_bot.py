"""The C++ sample bot (sample_bots/cpp/): its rules agree with every conformance vector,
it passes every check-bot scenario, plays real matches among the Python sample bots (in
the clear and over TLS), checks the seed commitment and its dealt hands at MatchEnd (and
says so when the seed is not revealed), dials a Unix socket, and reports a refused or
unreachable referee in one line.

The bot is built (incrementally) with CMake before the tests; the tests are skipped only
when the C++ toolchain or the gRPC development packages are not installed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from test_bot_seed import assert_same_seed_same_cards
from test_server import _self_signed

from referee.config.bots import load_bot
from referee.convert import view_to_proto
from referee.match.record import replay
from referee.match.runner import seed_commitment
from referee.match.server import RefereeServer
from referee.rules import Match, Phase, deal, preset, view
from sticheln.v1 import bot_pb2, bot_pb2_grpc, game_pb2

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_BOTS = ROOT / "sample_bots"
CPP_DIR = SAMPLE_BOTS / "cpp"
BUILD = CPP_DIR / "build"
BOT = BUILD / "sticheln-bot"
CONFORMANCE_TEST = BUILD / "conformance_test"
PROBE = BUILD / "strategy_probe"

TOOLS = ("cmake", "g++", "protoc", "grpc_cpp_plugin")
HEADERS = ("/usr/include/grpcpp/grpcpp.h", "/usr/include/openssl/sha.h")


def _missing_toolchain() -> str:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    missing += [h for h in HEADERS if not Path(h).is_file()]
    return ", ".join(missing)


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    """Build the bot and its conformance test (a no-op when they are up to date)."""
    missing = _missing_toolchain()
    if missing:
        pytest.skip(
            f"the C++ toolchain is not installed (missing: {missing}); scripts/test.sh "
            "installs cmake g++ libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev libssl-dev"
        )
    # One build at a time: test processes that run side by side share the build folder,
    # and a second configure rewrites the makefiles the first one's build reads.
    BUILD.mkdir(exist_ok=True)
    with open(BUILD / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for argv in (
            ["cmake", "-S", str(CPP_DIR), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release"],
            ["cmake", "--build", str(BUILD), "-j2"],
        ):
            done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert BOT.is_file() and CONFORMANCE_TEST.is_file() and PROBE.is_file()


def _env(**extra: str) -> dict[str, str]:
    # The Python bot files say "python3": this interpreter's folder first on PATH.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, **extra}


# -- the rules ---------------------------------------------------------------------------------


def test_the_cpp_rules_agree_with_every_conformance_vector() -> None:
    done = subprocess.run(
        [str(CONFORMANCE_TEST), str(ROOT / "conformance")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    files = sorted((ROOT / "conformance").glob("*.json"))
    assert len(files) == 6
    for path in files:  # every file of the vectors, none skipped
        cases = json.loads(path.read_text())["cases"]
        assert f"{path.name}: {len(cases)} of {len(cases)} cases agree" in done.stdout


def test_the_cpp_conformance_test_without_vectors_says_where_they_are(tmp_path: Path) -> None:
    # A starter copied out of the repository: its ../../conformance is not there.
    done = subprocess.run(
        [str(CONFORMANCE_TEST), str(tmp_path / "conformance")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 77, done.stdout  # ctest's SKIP_RETURN_CODE: skipped, not passed
    assert "no conformance vectors in" in done.stdout
    assert "-DSTICHELN_CONFORMANCE_DIR=" in done.stdout


def test_the_cpp_conformance_test_names_a_case_it_disagrees_with(tmp_path: Path) -> None:
    for path in (ROOT / "conformance").glob("*.json"):
        shutil.copy(path, tmp_path)
    data = json.loads((tmp_path / "tricks.json").read_text())
    case = next(c for c in data["cases"] if c["reason"] == "off_suit_highest")
    case["position"] = (case["position"] + 1) % case["players"]  # a wrong expected winner
    (tmp_path / "tricks.json").write_text(json.dumps(data))
    done = subprocess.run(
        [str(CONFORMANCE_TEST), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stdout
    index = data["cases"].index(case) + 1
    assert f"tricks.json: case {index}: {case['cards_text']}: position" in done.stdout
    total = len(data["cases"])
    assert f"tricks.json: {total - 1} of {total} cases agree" in done.stdout
    assert "FAILED" in done.stdout


# -- the decisions ------------------------------------------------------------------------------

#: Rule sets the decision comparison draws its requests from: every preset, both table
#: extremes, secret pain suits, two pain cards, a pain card kept in the hand.
DECISION_RULES: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("sticheln", {}, 4),
    ("sticheln", {}, 3),
    ("sticheln", {}, 8),
    ("sticheln", {"pain_visibility": "secret"}, 5),
    ("sticheln", {"pain_cards_per_player": 2}, 4),
    ("sticheln", {"pain_card": "kept_in_hand", "pain_cards_per_player": 2}, 3),
    ("amigo", {}, 6),
    ("sore-spot", {}, 5),
    ("sore-spot", {"long_hands_3p": True}, 3),
    ("french-2-14", {}, 4),
    ("stick-em-secret", {}, 4),
)


def _requests() -> list[bot_pb2.DecisionRequest]:
    """Every decision of one-round matches played with random legal moves by the engine."""
    rng = random.Random(11)
    out = []
    for i, (name, overrides, players) in enumerate(DECISION_RULES):
        match = Match(preset(name, rounds=1, **overrides), players, seed=100 + i)
        while not match.is_over:
            for seat in match.to_act():
                seen = view(match, seat)
                pain = seen.phase is Phase.PAIN
                request = bot_pb2.DecisionRequest(
                    request_id=len(out) + 1,
                    kind=bot_pb2.DECISION_KIND_PAIN_CHOICE
                    if pain
                    else bot_pb2.DECISION_KIND_CARD_PLAY,
                    count=match.rules.pain_cards_per_player if pain else 1,
                    timeout_ms=1000,
                )
                request.view.CopyFrom(view_to_proto(seen))
                out.append(request)
                match.apply(seat, rng.choice(list(match.legal_actions(seat))))
    return out


def _probe(strategy: str, requests: list[bot_pb2.DecisionRequest]) -> list[list[int]]:
    lines = [json_format.MessageToJson(r, indent=None).replace("\n", " ") for r in requests]
    done = subprocess.run(
        [str(PROBE), strategy],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [[int(c) for c in line.split()] for line in done.stdout.splitlines()]


def test_the_cpp_heuristic_makes_the_python_heuristic_bots_decisions() -> None:
    sys.path.insert(0, str(SAMPLE_BOTS / "python"))
    try:
        from heuristic_bot import HeuristicBot
    finally:
        sys.path.remove(str(SAMPLE_BOTS / "python"))
    requests = _requests()
    assert len(requests) > 300
    python = [HeuristicBot().decide(r) for r in requests]
    cpp = _probe("heuristic", requests)
    differ = [(r.request_id, p, c) for r, p, c in zip(requests, python, cpp, strict=True) if p != c]
    assert differ == [], f"{len(differ)} of {len(requests)} decisions differ, first: {differ[:3]}"


def test_the_cpp_random_strategy_answers_legally() -> None:
    requests = _requests()
    answers = _probe("random", requests)
    for request, cards in zip(requests, answers, strict=True):
        hand = list(request.view.hand)
        assert len(cards) == request.count and set(cards) <= set(hand), (request.view.hand, cards)
        if request.count == 2 and len({c >> 4 for c in hand}) > 1:
            assert cards[0] >> 4 != cards[1] >> 4
    # Random: the choices spread over the hand, not always one position.
    plays = [
        (list(r.view.hand).index(c[0]), len(r.view.hand))
        for r, c in zip(requests, answers, strict=True)
    ]
    assert len({i for i, n in plays if n == 15}) > 5


# -- playing -----------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_the_random_cpp_bot_given_the_same_seed_twice_plays_the_same_cards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _env()["PATH"])  # the minimal bot's "python3"
    bot = dataclasses.replace(
        load_bot(SAMPLE_BOTS / "cpp.toml"),
        name="cpp-random",
        command=("cpp/build/sticheln-bot", "--strategy", "random"),
    )
    assert_same_seed_same_cards(bot, load_bot(SAMPLE_BOTS / "minimal-python.toml"), tmp_path)


@pytest.mark.timeout(240)
def test_the_cpp_bot_passes_every_check_bot_scenario() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "referee.cli", "check-bot", "--bot", str(SAMPLE_BOTS / "cpp.toml")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=220,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAIL" not in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("all ")


def _record(folder: Path) -> list[dict[str, Any]]:
    (record,) = (folder / "matches").glob("*.jsonl")
    replay(record)  # the engine agrees with every move
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.mark.timeout(150)
def test_the_cpp_bot_plays_a_match_among_the_python_sample_bots(tmp_path: Path) -> None:
    random_file = tmp_path / "cpp-random.toml"
    # In sample_bots/ (its workdir), the folder the bot's sandbox shows it.
    random_file.write_text(
        'name = "cpp-random"\ncommand = ["cpp/build/sticheln-bot", "--strategy", "random"]\n'
        f"workdir = {json.dumps(str(SAMPLE_BOTS))}\n"
    )
    played = subprocess.run(
        [
            sys.executable,
            *("-m", "referee.cli", "match"),
            *("--bot", str(SAMPLE_BOTS / "cpp.toml")),
            *("--bot", str(SAMPLE_BOTS / "random.toml")),
            *("--bot", str(SAMPLE_BOTS / "heuristic.toml")),
            *("--bot", str(random_file)),
            *("--read", str(SAMPLE_BOTS)),  # random_file's workdir: the organiser's leave
            *("--rules", "stick-em-secret", "--seed", "21", "--out", str(tmp_path / "out")),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    lines = _record(tmp_path / "out")
    assert [x for x in lines if x["type"] == "fault"] == []
    end = lines[-1]
    assert end["type"] == "end" and end["reason"] == "completed" and end["forfeited"] == []
    cpp_seats = {0, 3}
    plays = [x for x in lines if x["type"] in ("play", "pain") and x["seat"] in cpp_seats]
    assert len(plays) == 2 * 4 * 16  # 4 rounds: 1 pain pick and 15 cards (kept in hand)
    assert not any(x["fallback"] for x in plays)
    for seat, name in ((0, "cpp"), (3, "cpp-random")):
        (log,) = (tmp_path / "out" / "logs").glob(f"*-seat{seat}-{name}.log")
        text = log.read_text()
        assert "seed commitment and 4 dealt hands verified" in text, text
        assert "does not match" not in text and "differs" not in text


@pytest.mark.timeout(200)
def test_one_cpp_process_serves_a_tournament_match_after_match(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = tmp_path / "tournament.toml"
    config.write_text(
        "[tournament]\n"
        'name = "cpp-pool"\nseed = 3\ntable_size = 3\nmatches_per_table = 4\nparallel = 2\n'
        f"out = {json.dumps(str(out))}\n"
        + "".join(
            f"[[bots]]\nfile = {json.dumps(str(SAMPLE_BOTS / name))}\n"
            for name in ("cpp.toml", "random.toml", "heuristic.toml")
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(config)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    records = sorted((out / "matches").glob("*.jsonl"))
    assert len(records) == 4
    sent_ids = set()  # the random id each match's bots were told (MatchStart.match_id)
    for record in records:
        lines = [json.loads(line) for line in record.read_text().splitlines()]
        assert [x for x in lines if x["type"] == "fault"] == []
        assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "completed"
        sent_ids.add(lines[0]["bot_match_id"])
    # cpp.toml declares seats = 8: one process (one log) played all four matches, two at
    # once, on streams that carried one match after another.
    (log,) = (out / "logs").glob("cpp+*.log")
    verified = [line for line in log.read_text().splitlines() if "dealt hands verified" in line]
    matches = {line.split()[2].rstrip(":") for line in verified}
    # Every MatchEnd was read, the last ones too: the tournament's end keeps the contract.
    assert matches == sent_ids
    assert len(verified) == 4


@pytest.mark.timeout(150)
def test_the_cpp_bot_plays_over_tls(tmp_path: Path) -> None:
    """Unsandboxed bots dial the referee's TLS port, trusting the certificate the referee
    gives them in STICHELN_TLS_CA (sandboxed ones reach their own Unix socket instead)."""
    tls = _self_signed(tmp_path)
    played = subprocess.run(
        [
            sys.executable,
            *("-m", "referee.cli", "match", "--no-sandbox"),
            *("--bot", str(SAMPLE_BOTS / "cpp.toml"), "--bot", str(SAMPLE_BOTS / "cpp.toml")),
            *("--bot", str(SAMPLE_BOTS / "random.toml"), "--seed", "4"),
            *("--out", str(tmp_path / "out")),
            *("--tls-cert", str(tls.cert_file), "--tls-key", str(tls.key_file)),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    lines = _record(tmp_path / "out")
    assert [x for x in lines if x["type"] == "fault"] == []
    assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "completed"
    for log in (tmp_path / "out" / "logs").glob("*-cpp.log"):
        assert "dealt hands verified" in log.read_text()


# -- the protocol, against a scripted referee on a Unix socket ---------------------------------


class _ScriptedReferee(bot_pb2_grpc.RefereeServicer):
    """One match of one round with one pain-choice request, then MatchEnd and status OK.

    ``reveal`` is "true" (the real seed), "wrong" (another seed), "withheld" (no seed, and
    ``seed_withheld`` says why) or "none" (no seed at all).
    """

    def __init__(self, reveal: str) -> None:
        self.reveal = reveal
        self.hello: bot_pb2.Hello | None = None
        self.answer: bot_pb2.Decision | None = None

    async def Play(
        self, request_iterator: AsyncIterator[bot_pb2.BotMessage], context: Any
    ) -> AsyncIterator[bot_pb2.RefereeMessage]:
        messages = request_iterator.__aiter__()
        self.hello = (await messages.__anext__()).hello
        yield bot_pb2.RefereeMessage(welcome=bot_pb2.Welcome(protocol_version=1))
        rules, seed, nonce = preset("sticheln"), 77, bytes(range(16))
        hands, _ = deal(rules, 3, seed, 0, 0)
        yield bot_pb2.RefereeMessage(
            match_start=bot_pb2.MatchStart(
                match_id="scripted",
                seat=1,
                seating=["a", "b", "c"],
                rules=game_pb2.RuleSet(
                    preset="sticheln",
                    deck=game_pb2.DECK_SUITS_PER_PLAYER,
                    pain_card=game_pb2.PAIN_CARD_RULE_SET_ASIDE,
                    pain_cards_per_player=1,
                    pain_visibility=game_pb2.PAIN_VISIBILITY_REVEALED,
                    trump_rule=game_pb2.TRUMP_RULE_HIGHEST,
                ),
                seed_commitment=seed_commitment(seed, nonce),
                rounds_total=1,
            )
        )
        request = bot_pb2.DecisionRequest(
            request_id=2**63 + 5,  # request ids are 64-bit
            kind=bot_pb2.DECISION_KIND_PAIN_CHOICE,
            count=1,
            timeout_ms=1000,
        )
        request.view.CopyFrom(
            game_pb2.View(players=3, seat=1, hand=hands[1], pain=[game_pb2.PainPick()] * 3)
        )
        request.view.rules.deck = game_pb2.DECK_SUITS_PER_PLAYER
        round_start = bot_pb2.Event(
            round_start=bot_pb2.RoundStart(round_index=0, dealer=0, hand=hands[1])
        )
        yield bot_pb2.RefereeMessage(events=[round_start], request=request)
        self.answer = (await messages.__anext__()).decision
        end = bot_pb2.MatchEnd(totals=[0, 0, 0], places=[1, 1, 1], reason="completed")
        if self.reveal == "true":
            end.seed, end.seed_nonce = seed, nonce
        elif self.reveal == "wrong":
            end.seed, end.seed_nonce = seed + 1, nonce
        elif self.reveal == "withheld":
            end.seed_withheld = "a later match plays the same deal"
        yield bot_pb2.RefereeMessage(match_end=end)


def _against_scripted(tmp_path: Path, reveal: str) -> tuple[_ScriptedReferee, int, str]:
    socket = tmp_path / "referee.sock"

    async def run() -> tuple[int, str]:
        server = grpc.aio.server()
        bot_pb2_grpc.add_RefereeServicer_to_server(referee, server)
        server.add_insecure_port(f"unix:{socket}")
        await server.start()
        try:
            proc = await asyncio.create_subprocess_exec(
                str(BOT),
                env={"STICHELN_REFEREE": f"unix:{socket}", "STICHELN_TOKEN": "t0k"},
                stderr=subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            await server.stop(0)
        return proc.returncode or 0, err.decode()

    referee = _ScriptedReferee(reveal)
    code, err = asyncio.run(run())
    return referee, code, err


def test_the_cpp_bot_checks_the_seed_and_its_hand_over_a_unix_socket(tmp_path: Path) -> None:
    referee, code, err = _against_scripted(tmp_path, "true")
    assert code == 0, err
    assert referee.hello is not None and referee.hello.token == "t0k"
    assert referee.hello.protocol_version == 1 and referee.hello.max_concurrent_matches == 1
    assert referee.answer is not None and referee.answer.request_id == 2**63 + 5
    hand = deal(preset("sticheln"), 3, 77, 0, 0)[0][1]
    assert len(referee.answer.cards) == 1 and referee.answer.cards[0] in hand
    assert "match scripted: seed commitment and 1 dealt hands verified" in err


def test_the_cpp_bot_warns_when_the_seed_does_not_match(tmp_path: Path) -> None:
    _, code, err = _against_scripted(tmp_path, "wrong")
    assert code == 0, err
    assert "the revealed seed 78 does not match the seed commitment of match scripted" in err
    assert "verified" not in err


def test_the_cpp_bot_skips_the_check_when_the_seed_is_not_revealed(tmp_path: Path) -> None:
    _, code, err = _against_scripted(tmp_path, "none")
    assert code == 0, err
    assert "match scripted: the seed was not revealed; the seed commitment is not checked" in err
    _, code, err = _against_scripted(tmp_path, "withheld")
    assert code == 0, err
    assert (
        "match scripted: the seed is withheld, the seed commitment is not checked: "
        "a later match plays the same deal"
    ) in err
    assert "does not match" not in err


# -- failures ----------------------------------------------------------------------------------


def test_a_refused_cpp_bot_exits_1_with_one_line() -> None:
    async def run() -> tuple[int, str]:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        try:
            proc = await asyncio.create_subprocess_exec(
                str(BOT),
                env={"STICHELN_REFEREE": server.address, "STICHELN_TOKEN": "nope"},
                stderr=subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            await server.stop(0)
        return proc.returncode or 0, err.decode()

    code, err = asyncio.run(run())
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "refused the stream: UNAUTHENTICATED: the token is not valid" in lines[0]


def test_an_unreachable_referee_is_exit_1_and_a_usage_error_exit_2(tmp_path: Path) -> None:
    gone = subprocess.run(
        [str(BOT)],
        env={"STICHELN_REFEREE": f"unix:{tmp_path / 'nobody.sock'}", "STICHELN_TOKEN": "x"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert gone.returncode == 1
    assert gone.stderr.count("\n") == 1 and "cannot reach the referee at unix:" in gone.stderr
    for argv, env, want in [
        ([], {}, "no referee address: set STICHELN_REFEREE"),
        (["--seats", "0"], {"STICHELN_REFEREE": "127.0.0.1:1"}, "seats 0 is not allowed"),
        (["--strategy", "best"], {"STICHELN_REFEREE": "x:1"}, "--strategy best is not allowed"),
        (["--bogus"], {}, "unknown option --bogus"),
    ]:
        done = subprocess.run(
            [str(BOT), *argv], env=env, capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and want in done.stderr, done.stderr
