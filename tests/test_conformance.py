"""The rules conformance vectors (conformance/*.json): they are what the engine produces
now, they agree with the rules as docs/rules.md states them (the independent oracle of
conftest.py), they cover every preset, player count and rule option, and the Node.js
sample bot's rules pass them in its own test runner.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import reference_score, reference_trick_winner

from referee.rules import PRESETS, deal, deck_for, from_table, preset

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "conformance"
GENERATOR = ROOT / "tools" / "gen_conformance.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_conformance", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(name: str) -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads((CONFORMANCE / name).read_text())
    assert set(data) >= {"about", "generator", "card_code", "cases"}
    return list(data["cases"])


def test_the_files_are_what_the_engine_produces_now() -> None:
    built = _generator().build()
    assert sorted(built) == sorted(p.name for p in CONFORMANCE.glob("*.json"))
    for name, text in built.items():
        assert (CONFORMANCE / name).read_text() == text, (
            f"conformance/{name} is stale: run python tools/gen_conformance.py"
        )


def test_check_mode_names_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = _generator()
    monkeypatch.setattr(gen, "OUT_DIR", tmp_path)
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    rounds = tmp_path / "rounds.json"
    rounds.write_text(rounds.read_text().replace('"scores": [', '"scores": [1, ', 1))
    assert gen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "stale: rounds.json; run python tools/gen_conformance.py" in err
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr  # the checked-in files are current


def test_the_trick_vectors_agree_with_the_rules_as_written() -> None:
    for case in cases("tricks.json"):
        cards, leader, players = case["cards"], case["leader"], case["players"]
        position = reference_trick_winner(cards, case["trump_rule"])
        assert case["position"] == position, case
        if position < 0:
            taker = leader if case["all_zero_trick"] == "leader_takes" else -1
            assert case["captured_by"] == taker and case["next_leader"] == leader
        else:
            seat = (leader + position) % players
            assert case["winner"] == case["captured_by"] == case["next_leader"] == seat


def test_the_trick_vectors_cover_every_step_of_rule_6_under_both_options() -> None:
    seen = Counter((c["trump_rule"], c["reason"]) for c in cases("tricks.json"))
    for rule in ("highest", "last_suit"):
        assert seen[(rule, "lead_suit_highest")] and seen[(rule, "all_zero")]
    assert seen[("highest", "off_suit_highest")] and seen[("last_suit", "off_suit_last_suit")]
    tricks = cases("tricks.json")
    assert any(c["tie"] for c in tricks)
    assert any(c["cards"][0] & 15 == 0 and c["position"] >= 0 for c in tricks)  # a zero led
    assert {c["all_zero_trick"] for c in tricks if c["reason"] == "all_zero"} == {
        "set_aside",
        "leader_takes",
    }
    # Where the two trump rules disagree, both answers are there.
    by_cards: dict[str, set[int]] = {}
    for c in tricks:
        by_cards.setdefault(c["cards_text"], set()).add(c["position"])
    assert any(len(positions) == 2 for positions in by_cards.values())


def test_the_round_vectors_score_by_rule_8_and_conserve_the_cards() -> None:
    for case in cases("rounds.json"):
        set_aside = case["rules"]["pain_card"] == "set_aside"
        for seat, score in enumerate(case["scores"]):
            pile = case["captured"][seat] + (case["pain"][seat] if set_aside else [])
            assert score == reference_score(pile, {c >> 4 for c in case["pain"][seat]}), case
        dealt = sorted(c for hand in case["hands"] for c in hand)
        after = sorted(
            [c for pile in case["captured"] for c in pile]
            + case["discarded"]
            + ([c for pick in case["pain"] for c in pick] if set_aside else [])
        )
        assert dealt == after
        for trick in case["tricks"]:
            position = reference_trick_winner(trick["cards"], case["rules"]["trump_rule"])
            if position >= 0:
                assert trick["winner"] == (trick["leader"] + position) % case["players"]


def test_the_vectors_cover_every_preset_player_count_and_scoring_option() -> None:
    wanted = set()
    for name in PRESETS:
        lo, hi = preset(name).player_range()
        wanted |= {(name, n) for n in range(lo, hi + 1)}
    for file in ("decks.json", "deals.json"):
        assert {(c["preset"], c["players"]) for c in cases(file)} == wanted
    rounds = cases("rounds.json")
    assert {c["preset"] for c in rounds} == set(PRESETS)
    options = {(c["rules"]["pain_card"], c["rules"]["pain_cards_per_player"]) for c in rounds}
    assert options == {(p, n) for p in ("set_aside", "kept_in_hand") for n in (1, 2)}
    assert {c["rules"]["first_lead"] for c in rounds} == {"left_of_dealer", "dealer"}
    assert any(t["reason"] == "all_zero" for c in rounds for t in c["tricks"])
    assert {c["match_ties"] for c in cases("places.json")} == {"positive_rounds", "shared"}
    assert any(int(c["seed"]) >= 2**63 for c in cases("deals.json"))


def _deck(case: dict[str, Any]) -> list[int]:
    return sorted(deck_for(from_table(case["rules"]), case["players"])[0])


def test_deck_overrides_set_cards_aside_at_the_deal() -> None:
    overridden = [
        c for c in cases("decks.json") if c["rules"]["deck"] != preset(c["preset"]).deck.value
    ]
    assert {(c["preset"], c["rules"]["deck"]) for c in overridden} >= {
        ("sticheln", "french_2_14"),
        ("amigo", "suits_per_player"),
    }
    aside = [c for c in cases("decks.json") if c["set_aside_count"]]
    assert aside and all(c in overridden for c in aside)
    for c in aside:
        assert c["set_aside_count"] == c["deck_size"] - c["hand_size"] * c["players"] > 0
    deals = [c for c in cases("deals.json") if c["set_aside"]]
    assert {len(c["set_aside"]) for c in deals} >= {1, 2, 3, 4}
    for c in deals:  # the set-aside cards are the deck's cards no hand holds
        held = [x for hand in c["hands"] for x in hand]
        assert sorted(held + c["set_aside"]) == _deck(c)


def test_the_round_vectors_are_dealt_from_their_seed_with_the_cards_set_aside() -> None:
    rounds = cases("rounds.json")
    assert any(c["set_aside"] for c in rounds)
    for c in rounds:
        rules = from_table(c["rules"])
        assert c["dealer"] == c["round_index"] % c["players"]
        hands, set_aside = deal(rules, c["players"], int(c["seed"]), c["round_index"], c["dealer"])
        assert (hands, set_aside) == (c["hands"], c["set_aside"]), c["name"]
        held = [x for hand in c["hands"] for x in hand]
        assert sorted(held + c["set_aside"]) == _deck(c)


def test_every_preset_and_player_count_has_a_whole_round_vector() -> None:
    wanted = set()
    for name in PRESETS:
        lo, hi = preset(name).player_range()
        wanted |= {(name, n, False) for n in range(lo, hi + 1)}
    wanted.add(("sore-spot", 3, True))
    have = {
        (c["preset"], c["players"], c["rules"]["long_hands_3p"])
        for c in cases("rounds.json")
        if c["rules"]["deck"] == preset(c["preset"]).deck.value
    }
    assert have >= wanted


def test_an_all_zero_trick_is_set_aside_in_whole_round_vectors() -> None:
    found = 0
    for c in cases("rounds.json"):
        if c["rules"]["all_zero_trick"] != "set_aside":
            continue
        for t in c["tricks"]:
            if t["reason"] == "all_zero":
                found += 1
                assert not any(x & 15 for x in t["cards"]) and t["winner"] == -1
                assert set(t["cards"]) <= set(c["discarded"])
                assert not set(t["cards"]) & {x for pile in c["captured"] for x in pile}
    assert found >= 3


def reference_places(totals: list[int], positive: list[int], ties: str) -> list[int]:
    """docs/rules.md rule 10 as written: rank by total, then (positive_rounds) by rounds with a
    positive score; what is still equal shares the place, competition style."""

    def better(o: int, s: int) -> bool:
        if totals[o] != totals[s]:
            return totals[o] > totals[s]
        return ties == "positive_rounds" and positive[o] > positive[s]

    return [1 + sum(better(o, s) for o in range(len(totals))) for s in range(len(totals))]


def test_the_match_vectors_rotate_the_dealer_add_up_and_rank_by_rule_10() -> None:
    matches = cases("matches.json")
    fixed = {c["rules"]["rounds"] for c in matches}
    assert "players" in fixed and {2, 5} <= fixed  # fewer and more rounds than players
    assert {c["rules"]["match_ties"] for c in matches} == {"positive_rounds", "shared"}
    assert any(len(set(c["places"])) < c["players"] for c in matches)  # a shared place
    for c in matches:
        players, rules = c["players"], from_table(c["rules"])
        assert c["rounds_total"] == len(c["rounds"]) == rules.rounds_for(players)
        totals, positive = [0] * players, [0] * players
        for r, rnd in enumerate(c["rounds"]):
            assert rnd["round_index"] == r and rnd["dealer"] == r % players
            hands, set_aside = deal(rules, players, int(c["seed"]), r, r % players)
            assert (hands, set_aside) == (rnd["hands"], rnd["set_aside"])
            set_aside_pain = c["rules"]["pain_card"] == "set_aside"
            for seat, score in enumerate(rnd["scores"]):
                pile = rnd["captured"][seat] + (rnd["pain"][seat] if set_aside_pain else [])
                assert score == reference_score(pile, {x >> 4 for x in rnd["pain"][seat]})
                totals[seat] += score
                positive[seat] += score > 0
            assert rnd["totals"] == totals
        assert c["totals"] == totals and c["positive_rounds"] == positive
        assert c["places"] == reference_places(totals, positive, c["rules"]["match_ties"])


@pytest.mark.timeout(120)
def test_the_node_sample_bot_passes_the_vectors_in_its_own_test_runner() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    done = subprocess.run(
        ["node", "--test", "test/"],
        cwd=ROOT / "sample_bots" / "node",
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout
    # One test per file of the vectors, none skipped.
    files = sorted(p.name for p in CONFORMANCE.glob("*.json"))
    assert f"# pass {len(files)}" in done.stdout
    for name in files:
        assert re.search(rf"^ok \d+ - {re.escape(name)}:", done.stdout, re.M), name
