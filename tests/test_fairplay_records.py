"""The fair-play test on real records: a tournament of real bot processes, one of them a
test-only cheater that sees every hand (unsandboxed, it reads the deal from a file this
test writes); ``referee fairplay`` flags it and not the honest sample bots (Monte Carlo,
C++, Node), and the bot page shows it. A league on PostgreSQL judges its matches as they
arrive (random and heuristic sample bots) and exports the flag, judges nothing while
switched off, and catches up once started again, each match counted once; ``referee
fairplay --database`` reads the same PostgreSQL league. (The colluding pair is
tests/test_fairplay.py's, in-process.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from referee.fairplay import read_decisions
from referee.match.dealkey import DealKey
from referee.rules import Round, preset
from referee.tournament.config import load_config
from referee.tournament.run import run_tournament
from referee.web import render
from referee.web.sources import FolderSource

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
    _write_deals(deals, 5)
    python = sys.executable
    bots = (
        # Plain play-outs: the choice that plays out best on the true deal, as simply as
        # the yardstick plays (the benchmark measures the 6-random-play-out cheater).
        _bot(
            "clairvoyant",
            [python, "clairvoyant_bot.py"],
            BOTS,
            {"CLAIRVOYANT_DEALS": str(deals), "CLAIRVOYANT_PLAIN": "1"},
        )
        + _bot(
            "montecarlo",
            [python, "python/montecarlo_bot.py"],
            SAMPLES,
            {"MONTECARLO_CAP_MS": "10"},
        )
        + f'[[bots]]\nfile = "{SAMPLES / "cpp.toml"}"\n'
        + f'[[bots]]\nfile = "{SAMPLES / "node.toml"}"\n'
    )
    # Five matches: the plain cheater is flagged within four (docs/fairplay.md); one more
    # for room, since the Monte Carlo bot's choices depend on its clock.
    out = _play(_tournament(tmp_path, bots, 5))
    printed, doc = _fairplay(out)
    by_name = {b["name"]: b for b in doc["bots"]}
    assert set(by_name) == {"clairvoyant", "montecarlo", "cpp", "node"}
    cheater = by_name.pop("clairvoyant")
    assert cheater["flagged"], printed
    assert cheater["p_value"] <= 0.01
    assert cheater["interval"][0] > 0  # its choices fit the true deal by more than chance
    assert not any(b["flagged"] for b in by_name.values()), printed
    # One line per bot in the table, the flag worded as a question.
    bot_table = printed.split("\n\n")[0]  # the pairs follow after a blank line
    lines = {line.split()[0]: line for line in bot_table.splitlines()[2:]}
    assert set(lines) == {"clairvoyant", "montecarlo", "cpp", "node"}
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
    # The bot page shows the figure, and links each weighty decision to its moment.
    figures = FolderSource(out).fairplay("clairvoyant")
    assert figures is not None and figures["flagged"]
    page = render.fairplay(figures)
    assert "Flagged: a question for the organiser" in page and "not a verdict" in page
    assert f"/match?id={top[0]['match_id']}#{top[0]['moment']}" in page
    assert "Not flagged" in render.fairplay(FolderSource(out).fairplay("cpp"))


@pytest.mark.timeout(600)
def test_a_league_judges_matches_as_they_arrive_can_be_switched_off_and_catches_up(
    tmp_path: Path, postgres_url: str
) -> None:
    """On PostgreSQL: the league judges its matches as they arrive and exports the flag;
    with ``fairplay = false`` it judges nothing; started again with it on, it catches up
    on exactly the matches it has not judged, each counted once; and ``referee fairplay
    --database URL`` reads the same league."""
    from leaguekit import bots, finished, postgres_db, serving, wait_for, write_config
    from test_hosting_metrics import printed_port, scrape

    db = postgres_db(postgres_url)
    names = {"rand": "random", "heur": "heuristic", "rand2": "random"}
    out = tmp_path / "out"
    state_path, doc_path = out / "fairplay-state.json", out / "fairplay.json"

    def config(on: bool) -> Path:
        table = {"name": "fair", "table_size": 3, "parallel": 1, "metrics_port": 0}
        return write_config(tmp_path / "league.toml", {**table, **db.table, "fairplay": on})

    def judged(least: int) -> dict | None:
        try:
            doc = json.loads(doc_path.read_text())
        except (OSError, ValueError):
            return None
        return doc if doc["matches"] >= least else None

    # 1. Judged as the matches arrive, the flag exported.
    log = tmp_path / "serve1.log"
    with serving(config(True), log) as serve, bots(serve.address, tmp_path) as b:
        port = wait_for(lambda: printed_port(log), 30, "the league's metrics port")
        tokens = {name: serve.register(name) for name in names}
        for name, kind in names.items():
            b.start(kind, name, tokens[name])
        doc = wait_for(lambda: judged(2), 240, "fairplay.json over two matches", every=0.2)
        assert {x["name"] for x in doc["bots"]} == set(names)
        assert all(x["decisions"] > 0 and not x["flagged"] for x in doc["bots"])
        samples = scrape(port)
        for name in names:
            assert samples[f'sticheln_fairplay_flagged{{bot="{name}"}}'] == 0
    first = {m["match_id"] for m in finished(db.target, "fair")}
    state = state_path.read_text()

    # 2. Switched off: matches are played, none is judged, no flag is exported.
    log = tmp_path / "serve2.log"
    with serving(config(False), log) as serve, bots(serve.address, tmp_path) as b:
        port = wait_for(lambda: printed_port(log), 30, "the league's metrics port")
        for name, kind in names.items():
            b.start(kind, name, tokens[name])
        wait_for(
            lambda: len(finished(db.target, "fair")) > len(first), 240, "a match played while off"
        )
        assert not any(k.startswith("sticheln_fairplay_flagged") for k in scrape(port))
    assert state_path.read_text() == state
    done = {m["match_id"] for m in finished(db.target, "fair")}
    assert done > first

    # 3. On again, no bots: it catches up on what it has not judged, each match once.
    def caught_up() -> dict | None:
        try:
            saved = json.loads(state_path.read_text())
        except (OSError, ValueError):
            return None
        return saved if set(saved["seen"]) >= done else None

    log = tmp_path / "serve3.log"
    with serving(config(True), log):
        saved = wait_for(caught_up, 240, "the catch-up", every=0.2)
    assert set(saved["seen"]) == done and len(saved["seen"]) == len(done)
    doc = json.loads(doc_path.read_text())
    assert doc["matches"] == saved["matches"] > json.loads(state)["matches"]
    # The same from the PostgreSQL database: one line per bot, the flag column empty.
    report = tmp_path / "report"
    ran = subprocess.run(
        [*REFEREE, "fairplay", "--database", postgres_url, "--out", str(report)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr
    bot_table = ran.stdout.split("\n\n")[0]
    rows = [line.split() for line in bot_table.splitlines()[2:]]
    lines = {r[0]: r for r in rows}
    assert set(lines) == set(names)
    assert all(r[-1] == "-" for r in lines.values())
    # Read afresh, the league's matches come to the same count: none counted twice, none
    # left out (a finished match whose record cannot be judged is left out by both).
    again = json.loads((report / "fairplay.json").read_text())
    assert again["matches"] == doc["matches"]
    assert {x["name"]: x["decisions"] for x in again["bots"]} == {
        x["name"]: x["decisions"] for x in doc["bots"]
    }
