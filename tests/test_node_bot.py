"""The Node.js sample bot: its rules helpers agree with the engine, its strategy does what
its comments say, it plays real matches through ``referee match`` without a fault, and
a refused stream is one line and exit status 1.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import reference_score
from test_bot_seed import assert_same_seed_same_cards
from test_server import _self_signed

from referee.config.bots import load_bot
from referee.match.record import replay
from referee.match.runner import seed_commitment
from referee.match.server import RefereeServer
from referee.rules import DECK_PLAYERS, Deck, TrumpRule, deck_for, parse_card, preset, trick_winner

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_BOTS = ROOT / "sample_bots"
NODE_DIR = SAMPLE_BOTS / "node"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(autouse=True)
def _installed() -> None:
    assert (NODE_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir(), (
        "the Node bot's packages are missing: run npm ci in sample_bots/node"
    )


def node_eval(script: str, data: Any) -> Any:
    """Run ``script`` with ``bot`` = the bot module and ``data`` = the JSON input."""
    prelude = (
        "const bot = require('./bot.js');"
        "const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
    )
    done = subprocess.run(
        ["node", "-e", prelude + script],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        cwd=NODE_DIR,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def c(text: str) -> list[int]:
    return [parse_card(t) for t in text.split()]


def test_trick_winner_and_scores_agree_with_the_engine() -> None:
    rng = random.Random(7)
    tricks = []
    for _ in range(400):
        players = rng.randint(3, 8)
        deck = [s << 4 | r for s in range(1, players + 1) for r in range(15)]
        tricks.append(rng.sample(deck, rng.randint(1, players)))
    pains = [sorted(rng.sample(range(1, 9), rng.randint(0, 2))) for _ in tricks]
    got = node_eval(
        "console.log(JSON.stringify(data.tricks.map((t, i) => ["
        "bot.trickWinner(t, false), bot.trickWinner(t, true),"
        "bot.scoreOf(t, new Set(data.pains[i]))])))",
        {"tricks": tricks, "pains": pains},
    )
    for trick, pain, (highest, last_suit, score) in zip(tricks, pains, got, strict=True):
        assert highest == trick_winner(trick, TrumpRule.HIGHEST).position, trick
        assert last_suit == trick_winner(trick, TrumpRule.LAST_SUIT).position, trick
        assert score == reference_score(trick, pain)


def test_decks_are_the_engines_decks() -> None:
    cases = []
    for deck in Deck:
        lo, hi = DECK_PLAYERS[deck]
        for players in range(lo, hi + 1):
            for long_hands in (False, True) if deck is Deck.FRENCH_ZERO_ACE else (False,):
                cases.append((deck, players, long_hands))
    got = node_eval(
        "console.log(JSON.stringify(data.map(([deck, players, long]) =>"
        "bot.deckCards({deck: 'DECK_' + deck.toUpperCase(), long_hands_3p: long}, players))))",
        [(d.value, p, lh) for d, p, lh in cases],
    )
    for (deck, players, long_hands), cards in zip(cases, got, strict=True):
        rules = preset("sticheln", deck=deck, long_hands_3p=long_hands)
        assert sorted(cards) == sorted(deck_for(rules, players)[0]), (deck, players)


def test_seed_check_accepts_the_referees_commitment_and_nothing_else() -> None:
    seed, nonce = 2**64 - 3, bytes(range(16))
    commitment = seed_commitment(seed, nonce)
    got = node_eval(
        "const b = (h) => Buffer.from(h, 'hex');"
        "console.log(JSON.stringify(["
        "bot.seedMatches(b(data.c), data.seed, b(data.n)),"
        "bot.seedMatches(b(data.c), (BigInt(data.seed) - 1n).toString(), b(data.n)),"
        "bot.seedMatches(b(data.c), data.seed, b(data.n.replace(/^00/, '01')))]))",
        {"c": commitment.hex(), "seed": str(seed), "n": nonce.hex()},
    )
    assert got == [True, False, False]


def _view(**fields: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "rules": {
            "deck": "DECK_SUITS_PER_PLAYER",
            "pain_card": "PAIN_CARD_RULE_SET_ASIDE",
            "pain_visibility": "PAIN_VISIBILITY_REVEALED",
            "trump_rule": "TRUMP_RULE_HIGHEST",
        },
        "players": 4,
        "tricks": [],
        "seat": 0,
        "leader": 1,
        "trick": [],
        "hand": [],
        "pain": [{"cards": []} for _ in range(4)],
    }
    view.update(fields)
    return view


def test_strategy_sheds_its_pain_suit_feeds_others_and_avoids_bad_tricks() -> None:
    pain = [{"cards": c("H5")}, {"cards": []}, {"cards": c("D3")}, {"cards": []}]
    cases = {
        # Seat 3 (last before us) took the lead with C14 off-suit: a heart (our pain suit)
        # that does not beat it is shed; H12 sheds more than H2.
        "shed": _view(leader=1, trick=c("S3 S9 C14"), hand=c("H2 H12 S1"), pain=pain),
        # Seat 2 (pain suit diamonds) wins with the off-suit S13: feed it the diamond that
        # cannot beat S13, rather than take the trick with S14.
        "feed": _view(leader=1, trick=c("C3 S13 C5"), hand=c("D9 C4 S14"), pain=pain),
        # Taking this trick would take our own pain card H9 in it: play under it.
        "avoid": _view(leader=1, trick=c("C1 H9 C3"), hand=c("S12 C0 C2"), pain=pain),
    }
    got = node_eval(
        "const out = {}; for (const [k, v] of Object.entries(data)) out[k] = bot.chooseCard(v);"
        "console.log(JSON.stringify(out))",
        cases,
    )
    assert got["shed"] == parse_card("H12")
    assert got["feed"] == parse_card("D9")
    assert got["avoid"] in c("C0 C2")


def test_pain_choice_is_legal_for_one_and_two_cards() -> None:
    rng = random.Random(3)
    hands = [sorted(rng.sample([s << 4 | r for s in range(1, 5) for r in range(15)], 15))]
    hands += [c("C1 C4 C9")]  # a hand of one suit: any two cards
    views = [_view(hand=h) for h in hands]
    got = node_eval(
        "console.log(JSON.stringify(data.map((v) => [bot.choosePain(v, 1), bot.choosePain(v, 2)])))",
        views,
    )
    for hand, (one, two) in zip(hands, got, strict=True):
        assert len(one) == 1 and one[0] in hand
        assert len(two) == 2 and set(two) <= set(hand) and two[0] != two[1]
        if len({x >> 4 for x in hand}) > 1:
            assert two[0] >> 4 != two[1] >> 4


@pytest.mark.timeout(120)
def test_the_node_bot_plays_a_real_match_among_python_bots(tmp_path: Path) -> None:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    played = subprocess.run(
        [
            sys.executable,
            *("-m", "referee.cli", "match"),
            *("--bot", str(SAMPLE_BOTS / "node.toml")),
            *("--bot", str(SAMPLE_BOTS / "random.toml")),
            *("--bot", str(SAMPLE_BOTS / "heuristic.toml")),
            *("--bot", str(SAMPLE_BOTS / "node.toml")),
            *("--rules", "stick-em-secret", "--seed", "21", "--out", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        timeout=100,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    (record,) = (tmp_path / "matches").glob("*.jsonl")
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line for line in lines if line["type"] == "fault"] == []
    end = lines[-1]
    assert end["type"] == "end" and end["reason"] == "completed" and end["forfeited"] == []
    node_seats = {0, 3}
    plays = [x for x in lines if x["type"] in ("play", "pain") and x["seat"] in node_seats]
    assert len(plays) == 2 * 4 * 16  # 4 rounds: 1 pain pick and 15 cards (kept in hand)
    assert not any(x["fallback"] for x in plays)
    replay(record)  # the engine agrees with every move
    for log in (tmp_path / "logs").glob("*seat[03]-node.log"):
        assert "does not match" not in log.read_text()  # the seed commitment checked out


@pytest.mark.timeout(120)
def test_the_random_node_bot_given_the_same_seed_twice_plays_the_same_cards(
    tmp_path: Path,
) -> None:
    bot = load_bot(SAMPLE_BOTS / "node.toml")
    bot = dataclasses.replace(bot, command=(*bot.command, "--strategy", "random"))
    assert_same_seed_same_cards(bot, load_bot(SAMPLE_BOTS / "minimal-node.toml"), tmp_path)


def test_the_random_strategy_answers_legally_and_follows_its_seed() -> None:
    hands = [c("C1 C5 S2 H7 H9"), c("C0 C3 C4")]
    picks = node_eval(
        "const out = [];"
        "for (const seed of ['1', '1', '18446744073709551615']) {"
        "  const random = bot.seededRandom(seed);"
        "  out.push(data.map((hand) => bot.chooseRandom({ hand }, 2, random)));"
        "}"
        "console.log(JSON.stringify(out));",
        hands,
    )
    assert picks[0] == picks[1] != picks[2]
    for pick in picks:
        two_suits, one_suit = pick
        assert set(two_suits) <= set(hands[0]) and two_suits[0] >> 4 != two_suits[1] >> 4
        assert set(one_suit) <= set(hands[1]) and len(set(one_suit)) == 2


def test_a_refused_node_bot_exits_with_one_line() -> None:
    async def run() -> tuple[int, str]:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        try:
            proc = await asyncio.create_subprocess_exec(
                "node",
                str(NODE_DIR / "bot.js"),
                env={**os.environ, "STICHELN_REFEREE": server.address, "STICHELN_TOKEN": "nope"},
                stderr=subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            await server.stop(0)
        return proc.returncode or 0, err.decode()

    code, err = asyncio.run(run())
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "UNAUTHENTICATED" in lines[0], err


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sandbox", ["none", "bubblewrap"])
def test_the_sample_bots_play_a_tls_match(tmp_path: Path, sandbox: str) -> None:
    """With --tls-cert the referee serves TLS on its port and gives the bots it starts the
    certificate to trust (STICHELN_TLS_CA): the Node and the Python sample bots dial it
    unchanged. Sandboxed, they reach their own Unix sockets instead, with no TLS to set up."""
    tls = _self_signed(tmp_path)
    bots = [SAMPLE_BOTS / f for f in ("node.toml", "random.toml", "heuristic.toml")]
    played = subprocess.run(
        [
            sys.executable,
            *("-m", "referee.cli", "match", *(x for b in bots for x in ("--bot", str(b)))),
            *("--seed", "4", "--out", str(tmp_path / "out")),
            *("--tls-cert", str(tls.cert_file), "--tls-key", str(tls.key_file)),
            *(["--no-sandbox"] if sandbox == "none" else []),
        ],
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    assert f"sandbox: {sandbox}" in played.stderr
    (record,) = (tmp_path / "out" / "matches").glob("*.jsonl")
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert lines[0]["sandbox"] == sandbox
    assert [x for x in lines if x["type"] == "fault"] == []
    assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "completed"
