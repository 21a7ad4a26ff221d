"""The fair-play test's parts (referee.fairplay): the anytime-valid test keeps its
false-alarm bound however often it is looked at; decisions are read from a record as
the bots made them; the running state survives a restart."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from referee.fairplay import FairPlay, Monitor, Options, Settings, decisions_of
from referee.rules import Round, cards_str, preset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_honest_monitor_stays_below_its_threshold_looked_at_after_every_unit() -> None:
    # Units of an honest bot: the mean of 14 uniform ranks, minus 1/2. Ville's inequality
    # bounds the share of runs whose wealth ever reaches 1/alpha by alpha.
    rng = random.Random(7)
    runs, flagged = 300, 0
    for _ in range(runs):
        m = Monitor(alpha=0.05)
        for _ in range(200):
            y = sum(rng.random() for _ in range(14)) / 14 - 0.5
            m.add(y, 0.0, 14)
        flagged += m.flagged
    assert flagged / runs <= 0.05
    # A bot whose ranks lean high by 0.05 is caught.
    m = Monitor()
    for _ in range(200):
        m.add(sum(min(1.0, rng.random() + 0.1) for _ in range(14)) / 14 - 0.5, 0.0, 14)
    assert m.flagged and m.p_value < 0.01


def test_state_round_trips_and_a_match_is_counted_once() -> None:
    rules = preset("sticheln")
    lines = [
        {
            "type": "header",
            "version": 2,
            "match_id": "m1",
            "rules": rules.to_table(),
            "players": 3,
            "seating": ["a", "b", "c"],
            "_line": 1,
        },
    ]
    rnd = Round.deal(rules, 3, 99, 0, 0)
    lines.append(
        {
            "type": "round_start",
            "round": 0,
            "dealer": 0,
            "hands": [cards_str(h).split() for h in rnd.hands],
            "set_aside": [],
            "_line": 2,
        }
    )
    for s in range(3):
        pick = (rnd.hands[s][0],)
        lines.append(
            {
                "type": "pain",
                "round": 0,
                "seat": s,
                "cards": cards_str(pick).split(),
                "fallback": s == 2,
            }
        )
        rnd.apply(s, pick)
    while not rnd.is_over:
        card = max(rnd.legal_plays())
        lines.append(
            {
                "type": "play",
                "round": 0,
                "seat": rnd.to_play,
                "card": cards_str([card]),
                "fallback": False,
            }
        )
        rnd.play(card)
    lines.append({"type": "end", "reason": "completed"})
    match = decisions_of(lines)
    kinds = [d.kind for d in match.decisions]
    assert kinds.count("pain") == 2  # the referee's fallback pick is not the bot's
    assert kinds.count("play") == 3 * 13  # the last card of each hand is no choice
    fp = FairPlay(Options(settings=Settings(deals=3, candidates=3)))
    fp.add(match)
    fp.add(match)
    assert fp.matches == 1
    again = FairPlay.from_state(json.loads(json.dumps(fp.state())))
    assert again.document() == fp.document()


def test_a_colluding_pair_is_flagged_and_the_honest_pairs_are_not(tmp_path: Path) -> None:
    # In-process matches that write real records (benchmarks/fairplay.py; the referee's
    # path from bots to records is tested end to end in test_fairplay_records.py). Two
    # bots pass each other their hands and play for their joint score, at every table;
    # the honest bots (heuristic, random, highest, tenth) fill the other two seats. The
    # test is looked at after every match, as a league does.
    from fairplay import run_league  # benchmarks/fairplay.py

    allies = ["ally-a", "ally-b"]
    honest = ["heuristic-1", "random-1", "highest-1", "tenth-1"]
    kinds = {n: n.rsplit("-", 1)[0] for n in honest}
    kinds |= {"ally-a": "plaincolluder:ally-b", "ally-b": "plaincolluder:ally-a"}
    pair = ("ally-a", "ally-b")
    fp, _ = run_league(
        [*allies, *honest],
        kinds,
        40,
        5,
        tmp_path,
        Options(),
        on_match=lambda _, fp: fp.pairs[pair].flagged,
        always=allies,
    )
    flagged = fp.pairs[pair]
    assert flagged.flagged, (fp.matches, flagged.e_value, flagged.mean_rank)
    assert flagged.mean_rank > 0.5
    doc = fp.document()
    (entry,) = [p for p in doc["pairs"] if p["bots"] == list(pair)]
    assert entry["flagged"] and entry["p_value"] <= 0.01
    honest_pairs = {k: m for k, m in fp.pairs.items() if not set(k) & set(allies)}
    assert honest_pairs and not any(m.flagged for m in honest_pairs.values()), honest_pairs
    assert not any(fp.bots[n].flagged for n in honest)
