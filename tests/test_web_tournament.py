"""The web pages of a tournament: ``referee tournament FILE --web-port 0`` while it runs
(progress, running matches, a live table from the growing record), then ``referee web
DIR`` on its folder, and the report.html it leaves (live Elo filled in, every match
linked to its record, the latest embedded trick by trick).
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from leaguekit import REFEREE, ROOT, wait_for
from webkit import folder_web, get_json, request, sse_events

SLOW = [sys.executable, str(ROOT / "tests" / "bots" / "slow_random_bot.py")]
MATCHES = 4


def tournament_file(tmp: Path) -> Path:
    bots = [("first", "0"), ("second", "0"), ("slow", "30")]
    lines = [
        "[tournament]",
        'name = "webtour"',
        "table_size = 3",
        f"matches_per_table = {MATCHES}",
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 10000",
    ]
    for name, think in bots:
        lines += [
            "[[bots]]",
            f"name = {json.dumps(name)}",
            f"command = {json.dumps(SLOW)}",
            # Its folder, and the sample bots it builds on: all a sandboxed bot may read.
            f"workdir = {json.dumps(str(Path(SLOW[-1]).parent))}",
            f'env = {{ THINK_MS = "{think}" }}',
            f"sandbox = {{ read = [{json.dumps(str(ROOT / 'sample_bots' / 'python'))}] }}",
        ]
    path = tmp / "t.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _poll_standings(url: str, into: list[tuple[int, int]]) -> None:
    """Every change of (finished matches, matches in the published standings) until the
    tournament's web server stops answering."""
    while True:
        try:
            # The standings first: a match they count has finished by the next call.
            published = get_json(f"{url}/api/standings")["matches"]
            finished = get_json(f"{url}/api/info")["progress"]["finished"]
        except (OSError, AssertionError):
            return  # the tournament is over and its web server has stopped
        if not into or into[-1] != (finished, published):
            into.append((finished, published))
        time.sleep(0.05)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Run the tournament with its web port; what was seen while it ran."""
    tmp = tmp_path_factory.mktemp("web-tournament")
    proc = subprocess.Popen(
        [*REFEREE, "tournament", str(tournament_file(tmp)), "--web-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    seen: dict[str, Any] = {"infos": [], "live": []}
    try:
        assert proc.stderr is not None
        url = ""
        for line in proc.stderr:  # the address comes before the first match starts
            found = re.search(r"web on (http://127\.0\.0\.1:\d+)/", line)
            if found:
                url = found.group(1)
                break
        assert url, "referee tournament printed no web address"
        threading.Thread(target=lambda: proc.stderr and proc.stderr.read(), daemon=True).start()
        # The standings as published, polled all along: (finished matches, the matches the
        # standings count).
        seen["standings"] = []
        polling = threading.Thread(target=_poll_standings, args=(url, seen["standings"]))
        polling.start()
        running = wait_for(
            lambda: get_json(f"{url}/api/matches")["running"], 60, "a running match"
        )[0]["match_id"]
        seen["record_refused"] = request(f"{url}/api/matches/{running}").status
        seen["times"] = []
        seen["live"] = sse_events(f"{url}/api/matches/{running}/live", 10_000, 60, seen["times"])
        seen["running"] = running
        seen["infos"].append(get_json(f"{url}/api/info"))
        assert proc.wait(120) == 0
        polling.join(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    yield tmp / "out", seen


def test_a_running_tournament_shows_its_progress_and_a_live_table(
    played: tuple[Path, dict[str, Any]],
) -> None:
    out, seen = played
    info = seen["infos"][0]
    assert info["kind"] == "tournament" and info["name"] == "webtour"
    assert info["progress"]["planned"] == MATCHES
    assert 0 <= info["progress"]["finished"] <= MATCHES
    assert seen["record_refused"] == 409
    live = seen["live"]
    lines = [json.loads(x) for x in (out / "matches" / f"{seen['running']}.jsonl").open()]
    assert live[0]["type"] == "match" and live[0]["seating"] == lines[0]["seating"]
    plays = [(x["round"], x["seat"], x["card"]) for x in lines if x["type"] == "play"]
    assert [(e["round"], e["seat"], e["card"]) for e in live if e["type"] == "play"] == plays
    seed = next(str(x["seed"]) for x in reversed(lines) if "seed" in x)
    assert live[-1]["type"] == "end" and live[-1]["seed"] == seed
    # Public only: no event carries a hand.
    assert not any("hands" in e for e in live)


def test_a_running_tournament_match_reaches_its_viewers_card_by_card(
    played: tuple[Path, dict[str, Any]],
) -> None:
    """The record of a watched tournament is flushed line by line: the cards of a round
    arrive spread over the round (in the stream's quarter-second batches), not in one
    burst when the round ends."""
    _, seen = played
    arrivals: dict[int, list[float]] = {}
    for event, at in zip(seen["live"], seen["times"], strict=True):
        if event["type"] == "play":
            arrivals.setdefault(event["round"], []).append(at)
    # The last round was surely watched as it was played (earlier ones may have been
    # caught up with at once when the stream opened).
    last = arrivals[max(arrivals)]
    batches = 1 + sum(b - a > 0.1 for a, b in itertools.pairwise(last))
    assert batches >= 2 and last[-1] - last[0] >= 0.2, (
        f"the last round's {len(last)} cards came in {batches} batch(es) "
        f"over {last[-1] - last[0]:.2f} s"
    )


def test_the_standings_follow_every_finished_match(
    played: tuple[Path, dict[str, Any]],
) -> None:
    """As in a league, the standings are fitted again as matches finish, not once at the
    end: they are published while the tournament runs, never counting a match before it
    has finished, never going back. (Not every count: one fit runs at a time, at most
    every second or twice as long as the last took, so on a loaded machine the matches
    that finish during a fit go into the next one, and the last may come after the web
    server has stopped.)"""
    _, seen = played
    changes = seen["standings"]
    published = [p for _, p in changes]
    assert published == sorted(published), changes
    assert all(p <= f for f, p in changes), changes
    assert any(0 < p < MATCHES for p in published), changes


def test_the_report_fills_live_elo_and_links_every_match(
    played: tuple[Path, dict[str, Any]],
) -> None:
    out, _ = played
    report = (out / "report.html").read_text(encoding="utf-8")
    ratings = json.loads((out / "ratings.json").read_text(encoding="utf-8"))["standings"]
    for row in ratings:
        cells = re.search(
            rf'<td class="bot">{re.escape(row["bot"])}</td>((?:<td[^>]*>[^<]*</td>)+)</tr>', report
        )
        assert cells, row["bot"]
        values = re.findall(r"<td[^>]*>([^<]*)</td>", cells.group(1))
        assert values[2] == f"{row['live_elo']:.0f}"  # rating, interval, live Elo, ...
    records = sorted(p.name for p in (out / "matches").glob("*.jsonl"))
    assert len(records) == MATCHES
    for name in records:
        assert f'href="matches/{name}"' in report
    assert report.count("<details id=") == MATCHES
    assert "<script" not in report


def test_referee_web_serves_the_finished_folder(played: tuple[Path, dict[str, Any]]) -> None:
    out, _ = played
    with folder_web(out) as url:
        ratings = json.loads((out / "ratings.json").read_text(encoding="utf-8"))["standings"]
        shown = get_json(f"{url}/api/standings")["standings"]
        assert [(s["bot"], s["rating"], s["live_elo"]) for s in shown] == [
            (r["bot"], r["rating"], r["live_elo"]) for r in ratings
        ]
        matches = get_json(f"{url}/api/matches")
        assert matches["progress"]["finished"] == matches["progress"]["planned"] == MATCHES
        assert matches["running"] == []
        assert get_json(f"{url}/api/info")["name"] == "webtour"
        mid = matches["finished"][0]["match_id"]
        doc = get_json(f"{url}/api/matches/{mid}")
        assert len(doc["rounds"]) == 3


def test_referee_web_refuses_a_folder_without_matches(tmp_path: Path) -> None:
    done = subprocess.run(
        [*REFEREE, "web", str(tmp_path), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("no matches/ folder here; give a tournament's output folder")
    )
