"""The pages as the server sends them, without a browser: plain aiohttp GETs against
``WebServer`` on a finished tournament's folder (bots named as markup) and on an empty one.

Each page's main content is in the HTML (standings, matches, a match's header, a bot's
tables, the head-to-head matrix), every name escaped, under the strict CSP; and the
small untruths stay fixed: no "null" for a missing part, a finished folder says so
instead of "running 0 · ETA 0m00s", scores carry their sign, provisional bots are not
ranked, a bot with no match is reachable.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from leaguekit import REFEREE, SAMPLES
from prometheus_client import CollectorRegistry

from referee.results import documents as data
from referee.web import FolderSource, WebOptions, WebServer, render
from referee.web.server import CSP

XSS = "<img src=x onerror=alert(1)>"
QUOTE = 'say "hi" & <b>'


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("web-render")
    bot = [sys.executable, str(SAMPLES / "python" / "random_bot.py")]
    lines = [
        "[tournament]",
        'name = "render"',
        "table_size = 3",
        "matches_per_table = 1",
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 10000",
    ]
    for name in (XSS, QUOTE, "plain"):
        lines += [
            "[[bots]]",
            f"name = {json.dumps(name)}",
            f"command = {json.dumps(bot)}",
            f"workdir = {json.dumps(str(SAMPLES))}",
        ]
    (tmp / "t.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [*REFEREE, "tournament", str(tmp / "t.toml")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp / "out"


def fetch(folder: Path, *paths: str) -> list[tuple[int, dict[str, str], str]]:
    """GET each path from a web server on ``folder``: status, headers, body text."""

    async def run() -> list[tuple[int, dict[str, str], str]]:
        server = WebServer(FolderSource(folder), CollectorRegistry(), WebOptions("127.0.0.1", 0))
        address = await server.start()
        out = []
        try:
            async with aiohttp.ClientSession() as session:
                for path in paths:
                    async with session.get(address.rstrip("/") + path) as r:
                        out.append((r.status, dict(r.headers), await r.text()))
        finally:
            await server.stop()
        return out

    return asyncio.run(run())


@pytest.fixture(scope="module")
def first_match(folder: Path) -> dict[str, Any]:
    path = sorted((folder / "matches").glob("*.jsonl"))[0]
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return {"id": lines[0]["match_id"], "seating": lines[0]["seating"], "end": lines[-1]}


def _main(body: str) -> str:
    start = body.index('<main id="main"')
    return body[start : body.index("</main>", start)]


def test_every_page_carries_its_content_escaped_under_the_csp(
    folder: Path, first_match: dict[str, Any]
) -> None:
    mid = first_match["id"]
    pages = {
        "/": 'id="standings"',
        "/matches": 'id="finished"',
        "/head-to-head": 'id="matrix"',
        f"/bot?name={quote(XSS)}": 'id="recent"',
        f"/match?id={mid}": 'id="result"',
        "/rules": 'id="rule-6-3"',
    }
    replies = fetch(folder, *pages)
    for (path, marker), (status, headers, body) in zip(pages.items(), replies, strict=True):
        assert status == 200, path
        assert headers["Content-Security-Policy"] == CSP
        main = _main(body)
        assert marker in main, path
        assert "Loading…" not in main, path
        # Names are text: escaped, never markup.
        assert "<img" not in body and QUOTE not in body, path
        if path != "/rules":
            assert "&lt;img src=x onerror=alert(1)&gt;" in main, path
        assert "<script>" not in body and "<script " not in main, path
    standings = _main(replies[0][2])
    assert "&quot;hi&quot; &amp; &lt;b&gt;" in standings
    # The match's header: its id, seats and result, and that it has finished.
    match_page = replies[4][2]
    assert 'data-state="finished"' in match_page
    assert f"Match {mid}" in match_page
    for bot in first_match["seating"]:
        assert f'href="/bot?name={quote(bot, safe="")}"' in match_page
    # Scores carry their sign wherever they are written.
    for s in first_match["end"]["totals"]:
        assert render.signed(s) in _main(match_page)


def test_every_page_starts_with_a_skip_link(folder: Path, first_match: dict[str, Any]) -> None:
    """The first thing a keyboard reaches on every page, the rules page (a static one)
    included, is the link past the navigation (docs/web.md)."""
    paths = ["/", "/matches", "/head-to-head", "/bot?name=plain", "/rules"]
    paths.append(f"/match?id={first_match['id']}")
    for path, (status, _, body) in zip(paths, fetch(folder, *paths), strict=True):
        assert status == 200, path
        first = body.split("<body>", 1)[1].lstrip()
        assert first.startswith('<header><a class="skip" href="#main"'), (path, first[:120])


def test_a_finished_folder_says_so_instead_of_an_eta(folder: Path) -> None:
    ((_, _, body),) = fetch(folder, "/")
    main = _main(body)
    assert "all finished" in main
    assert "ETA" not in main and "running 0" not in main


def test_an_empty_folder_shows_no_null(tmp_path: Path) -> None:
    (tmp_path / "matches").mkdir()
    replies = fetch(tmp_path, "/", "/matches", "/head-to-head")
    for status, _, body in replies:
        assert status == 200
        main = _main(body)
        assert "null" not in main and "undefined" not in main
    assert "No finished match yet." in _main(replies[0][2])


def test_a_running_or_unknown_match_page_asks_for_no_refused_record(
    folder: Path, tmp_path: Path
) -> None:
    # A match that did not finish: its state says so (200), the page needs no 409.
    (tmp_path / "matches").mkdir()
    src = sorted((folder / "matches").glob("*.jsonl"))[0]
    cut = [x for x in src.read_text(encoding="utf-8").splitlines() if '"type":"end"' not in x]
    (tmp_path / "matches" / src.name).write_text("\n".join(cut) + "\n", encoding="utf-8")
    mid = json.loads(cut[0])["match_id"]
    replies = fetch(tmp_path, f"/api/matches/{mid}/state", "/api/matches/nope/state")
    assert replies[0][0] == 200 and json.loads(replies[0][2])["state"] == "unfinished"
    assert replies[1][0] == 404


def test_signs_and_open_intervals_are_written_as_they_are() -> None:
    assert [render.signed(x) for x in (2, 0, -3)] == ["+2", "0", "-3"]
    assert render.signed(-0.04, 1) == "-0.0" and render.signed(2.5, 1) == "+2.5"
    assert render.interval({"ci_low": 2375.4, "ci_high": None, "ci_high_open": True}) == "> 2375"
    assert render.interval({"ci_low": None, "ci_high": 1160, "ci_low_open": True}) == "< 1160"
    assert render.interval({"ci_low": 1, "ci_high": 2}) == "1–2"


def test_provisional_bots_are_listed_after_the_ranked_ones_without_a_rank() -> None:
    rows = [
        {"bot": "a", "rating": 1700.0, "provisional": True},
        {"bot": "b", "rating": 1500.0, "provisional": False},
        {"bot": "c", "rating": 1600.0, "provisional": False},
        {"bot": "d", "rating": 1600.0, "provisional": False},
    ]
    ranked = data.ranked(rows)
    assert [(r["bot"], r["rank"]) for r in ranked] == [
        ("c", 1),
        ("d", 1),
        ("b", 3),
        ("a", None),
    ]
    html = render.standings(
        {"matches": 3, "standings": ranked}, {"finished": 3, "planned": 3}, ["e"]
    )
    assert html.count("provisional</span>") == 1
    # A bot without a rated match is reachable from the standings.
    assert 'id="unrated"' in html and 'href="/bot?name=e"' in html


def test_the_standings_and_matches_count_strikes_as_the_terminal_does() -> None:
    """Their column is the strikes the faults cost (what ``referee tournament`` prints
    under "strikes"); the bot page counts the faults themselves, by reason."""
    row = {"bot": "a", "rank": 1, "rating": 1500.0, "matches": 3, "faults": 9}
    html = render.standings({"matches": 3, "standings": [row]}, {"finished": 3}, ["a"])
    assert _heads(html, "standings")[-1] == "Strikes"
    finished = {"match_id": "m-1", "seating": ["a", "b", "c"], "places": [1, 2, 3]}
    doc = {"progress": {"finished": 1}, "running": [],
           "finished": [{**finished, "totals": [3, 2, 1], "faults": [2, 0, 0]}]}  # fmt: skip
    assert _heads(render.matches(doc, None), "finished")[-1] == "Strikes"


def _heads(html: str, table: str) -> list[str]:
    found = re.search(f'<table id="{table}"><thead><tr>(.*?)</tr>', html)
    assert found is not None, html
    return re.findall(r"<th[^>]*>([^<]*)</th>", found.group(1))


def test_the_standings_say_what_a_missing_interval_means() -> None:
    row = {
        "bot": "a",
        "rank": 1,
        "rating": 1500.0,
        "ci_low": 1500.0,
        "ci_high": 1500.2,
        "live_elo": 1500.0,
        "matches": 3,
        "mean_score": 0.0,
        "mean_place": 1.5,
        "faults": 0,
    }
    doc = {"matches": 3, "standings": [{**row, "unidentified": True}]}
    progress = {"finished": 3, "planned": 3, "running": 0}
    html = render.standings(doc, progress, ["a"])
    assert "unidentified" not in html and ">not measurable<" in html
    assert "cannot measure this rating" in html and "anchor" not in html
    html = render.standings({"matches": 3, "standings": [{**row, "anchor": True}]}, progress, [])
    assert ">none: the anchor<" in html and "fixed point (1500)" in html
    assert "cannot measure" not in html
    # Rating and Live Elo are said apart where they stand.
    assert '<dl class="terms" id="terms"><dt>Rating</dt>' in html and "<dt>Live Elo</dt>" in html
