"""The fair-play test (referee.fairplay, ``referee fairplay``) on real records: a bot that
sees every hand is flagged, the honest sample bots are not; and the anytime-valid test
keeps its false-alarm bound however often it is looked at."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from referee.fairplay import FairPlay, Monitor, Options, Settings, read_decisions
from referee.match.dealkey import DealKey
from referee.rules import Round, cards_str, preset
from referee.tournament.config import load_config
from referee.tournament.run import run_tournament

ROOT = Path(__file__).resolve().parent.parent
BOTS = ROOT / "tests" / "bots"
SAMPLES = ROOT / "sample_bots"
REFEREE = [sys.executable, "-m", "referee.cli"]
#: A fixed deal key: the deals (and the bots' seeds) are the same at every run.
KEY = DealKey(bytes(range(32)))


def _bot(name: str, command: list[str], workdir: Path, env: dict[str, str] | None = None) -> str:
    text = f'[[bots]]\nname = "{name}"\ncommand = {json.dumps(command)}\nworkdir = "{workdir}"\n'
    if env:
        text += "env = { " + ", ".join(f'{k} = "{v}"' for k, v in env.items()) + " }\n"
    return text


def _tournament(tmp_path: Path, bots: str, matches: int) -> Path:
    path = tmp_path / "fair.toml"
    path.write_text(
        '[tournament]\nname = "fair"\nseed = 3\ntable_size = 4\n'
        f'matches_per_table = {matches}\nparallel = 2\nout = "out"\n'
        "[clock]\ndecision_ms = 3000\nstartup_ms = 15000\n"
        # The cheater reads a file outside any jail: run unsandboxed, as the brief says.
        '[sandbox]\nmode = "none"\n' + bots,
        encoding="utf-8",
    )
    return path


def _write_deals(path: Path, deals: int) -> None:
    """Every hand of the tournament's first ``deals`` deals, as the cheater reads them."""
    rules = preset("sticheln")
    rounds = []
    for deal in range(deals):
        seed = KEY.match_seed(deal)
        for r in range(rules.rounds_for(4)):
            rnd = Round.deal(rules, 4, seed, r, r % 4)
            rounds.append({"hands": rnd.hands, "set_aside": rnd.set_aside})
    path.write_text(json.dumps(rounds), encoding="utf-8")


def _play(config: Path) -> Path:
    cfg = load_config(config)
    outcome = asyncio.run(run_tournament(cfg, progress=False, deal_key=KEY))
    assert outcome.finished == outcome.planned
    return cfg.out


def _fairplay(folder: Path) -> tuple[str, dict]:
    done = subprocess.run(
        [*REFEREE, "fairplay", str(folder)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads((folder / "fairplay.json").read_text())


@pytest.mark.timeout(600)
def test_a_bot_that_sees_every_hand_is_flagged_and_the_honest_ones_are_not(
    tmp_path: Path,
) -> None:
    deals = tmp_path / "deals.json"
    _write_deals(deals, 12)
    python = sys.executable
    bots = (
        _bot("clairvoyant", [python, "clairvoyant_bot.py"], BOTS, {"CLAIRVOYANT_DEALS": str(deals)})
        + _bot("heuristic", [python, "python/heuristic_bot.py"], SAMPLES)
        + _bot("random", [python, "python/random_bot.py"], SAMPLES)
        + _bot(
            "montecarlo",
            [python, "python/montecarlo_bot.py"],
            SAMPLES,
            {"MONTECARLO_CAP_MS": "20"},
        )
    )
    out = _play(_tournament(tmp_path, bots, 4))
    printed, doc = _fairplay(out)
    by_name = {b["name"]: b for b in doc["bots"]}
    assert set(by_name) == {"clairvoyant", "heuristic", "random", "montecarlo"}
    cheater = by_name.pop("clairvoyant")
    assert cheater["flagged"], printed
    assert cheater["p_value"] <= 0.01
    assert cheater["interval"][0] > 0  # its choices fit the true deal by more than chance
    assert not any(b["flagged"] for b in by_name.values()), printed
    # One line per bot in the table, the flag worded as a question.
    lines = {line.split()[0]: line for line in printed.splitlines() if line.split()}
    assert "FLAGGED: ask" in lines["clairvoyant"]
    assert all("FLAGGED" not in lines[name] for name in by_name)
    assert "not a verdict" in printed
    # The decisions that weigh most name their moment in the match viewer.
    top = cheater["weighing_most"]
    assert top and all(d["match_id"] for d in top)
    record = out / "matches" / f"{top[0]['match_id']}.jsonl"
    assert record.is_file()
    moments = {d.moment for d in read_decisions(record).decisions if d.bot == "clairvoyant"}
    assert top[0]["moment"] in moments


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


def test_state_round_trips_and_a_match_is_counted_once(tmp_path: Path) -> None:
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
    from referee.fairplay import decisions_of

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
