"""The duplicate embargo on every web door: ``referee tournament FILE --web-port 0`` in
duplicate mode, and ``referee web`` on its output folder, while a deal's last seating is
held unplayed, then after it has ended.

Two deals of three seatings each, one match at a time; the bots (tests/bots/gated_bot.py)
wait at the start of each deal's last seating (and of the first deal's second one) until
the test creates its gate file. While
one waits, the deal's two finished seatings must show nothing that follows from their
cards: no record, viewer or live events, no result in the matches list, standings, bots'
pages or head-to-head, no seed and no hand in any answer; the matches are listed as
embargoed. Once the last seating has ended, all of it is served.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from leaguekit import REFEREE, ROOT, wait_for
from webkit import (
    CHROMIUM,
    CHROMIUM_ARGS,
    folder_web,
    get_json,
    have_chromium,
    request,
    sse_events,
)

from referee.results.embargo import EMBARGOED, DealSeatings, embargoed_records
from referee.tournament.config import load_config
from referee.web.sources import Embargoed, TournamentSource

GATED = [sys.executable, str(ROOT / "tests" / "bots" / "gated_bot.py")]
NAME = "dup"
BOTS = ("gate-a", "gate-b", "gate-c")


def mid(index: int) -> str:
    return f"{NAME}-{index:05d}"


def tournament_file(tmp: Path, hold: dict[str, Path]) -> Path:
    lines = [
        "[tournament]",
        f'name = "{NAME}"',
        'mode = "duplicate"',
        "table_size = 3",
        "matches_per_table = 6",  # two deals, three seatings each
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 60000",
        # The gate bot reads its gate files, which a jail would hide from it.
        "[sandbox]",
        'mode = "none"',
    ]
    # The gate bots count the matches (their ids are random): "dup-00001" is match 1.
    env = ",".join(f"{int(m.rsplit('-', 1)[1])}={path}" for m, path in hold.items())
    for name in BOTS:
        lines += [
            "[[bots]]",
            f"name = {json.dumps(name)}",
            f"command = {json.dumps(GATED)}",
            f"env = {{ HOLD = {json.dumps(env)}, STARTS = {json.dumps(str(tmp / 'starts'))} }}",
        ]
    path = tmp / "t.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stream_opens(url: str) -> bool:
    """The live stream at ``url`` answers 200 with an event stream (its events come as
    the record is written, round by round)."""
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")


def page_text(url: str, awaited: str) -> str:
    """The text of the page at ``url`` in a real browser, once it shows ``awaited``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url)
            page.get_by_text(awaited).first.wait_for(timeout=30_000)
            return str(page.inner_text("body"))
        finally:
            browser.close()


def record_of(out: Path, match_id: str) -> list[dict[str, Any]]:
    path = out / "matches" / f"{match_id}.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def secrets_of(out: Path, match_id: str) -> list[str]:
    """Texts of a finished seating that no answer may hold while its deal is embargoed:
    its seed, its nonce and each seat's hand of the first round."""
    lines = record_of(out, match_id)
    end = lines[-1]
    assert end["type"] == "end" and end.get("seed_withheld"), end
    hands = next(x["hands"] for x in lines if x["type"] == "round_start")
    return [str(end["seed"]), end["nonce"], *(json.dumps(h, separators=(",", ":")) for h in hands)]


def routes(url: str, held: list[str]) -> dict[str, Any]:
    """Every answer of every route that could show a held match."""
    answers = {}
    plain = [
        "/api/info",
        "/api/standings",
        "/api/bots",
        "/api/head-to-head",
        "/api/matches",
        "/api/matches?limit=500&before=1000000",
        *(f"/api/bot?name={b}" for b in BOTS),
    ]
    for path in plain:
        reply = request(url + path)
        # A folder knows its bots from the matches it shows: none yet while all are held.
        unknown = path.startswith("/api/bot?") and reply.status == 404
        assert reply.status == 200 or unknown, (path, reply.status)
        answers[path] = reply
    for m in held:
        for path in (
            f"/api/matches/{m}",
            f"/api/matches/{m}/record.jsonl",
            f"/api/matches/{m}/live",
        ):
            answers[path] = request(url + path)
    return answers


def assert_embargoed(url: str, out: Path, held: list[str], running: str | None) -> None:
    """Nothing of the ``held`` matches is served at ``url``; they are listed as embargoed."""
    answers = routes(url, held)
    for m in held:
        for path in (
            f"/api/matches/{m}",
            f"/api/matches/{m}/record.jsonl",
            f"/api/matches/{m}/live",
        ):
            reply = answers[path]
            assert reply.status == 403, (path, reply.status)
            assert EMBARGOED in reply.json()["error"], reply.json()
    secrets = [s for m in held for s in secrets_of(out, m)]
    for path, reply in answers.items():
        body = reply.body.decode()
        for s in secrets:
            assert s not in body, f"{path} shows {s!r} of an embargoed match"
        assert '"hands"' not in body, path
    listing = answers["/api/matches"].json()
    assert not {m["match_id"] for m in listing["finished"]} & set(held)
    older = answers["/api/matches?limit=500&before=1000000"].json()
    assert not {m["match_id"] for m in older["finished"]} & set(held)
    assert {m["match_id"] for m in listing["embargoed"]} >= set(held)
    for m in listing["embargoed"]:
        assert EMBARGOED in m["embargo"] and sorted(m["seating"]) == sorted(BOTS)
        assert "totals" not in m and "places" not in m
    if running is not None:
        # The deal's last seating is being played: every other seating has ended, so it
        # may be watched live like any match.
        assert [r["match_id"] for r in listing["running"]] == [running]
        assert "embargo" not in listing["running"][0]
        assert stream_opens(f"{url}/api/matches/{running}/live")
    # No result of a held match counts anywhere.
    shown = {m["match_id"] for m in listing["finished"]}
    standings = answers["/api/standings"].json()
    assert standings["matches"] <= len(shown)
    for b in BOTS:
        detail = answers[f"/api/bot?name={b}"].json()
        assert not {m["match_id"] for m in detail.get("recent_matches", [])} & set(held)
        assert detail.get("matches", 0) <= len(shown)


def source_layer_holds(tmp: Path, out: Path, held: list[str]) -> None:
    """The web's data source, on a copy of the tournament's database as it is now: no
    door of it hands out the held matches, not even an older page of the matches list
    asked for past every match the source has taken in."""
    copy = tmp / "copy.db"
    with sqlite3.connect(out / "tournament.db") as live, sqlite3.connect(copy) as into:
        live.backup(into)
    config = dataclasses.replace(load_config(tmp / "t.toml"), database=str(copy))
    source = TournamentSource(config)
    try:
        new, _ = source.load(1000)
        assert not {r.match_id for r in new} & set(held)
        assert source.older_matches(10**6, 500) == []
        assert sorted(m["match_id"] for m in source.embargoed()) == sorted(held)
        for m in held:
            with pytest.raises(Embargoed):
                source.record_path(m)
            with pytest.raises(Embargoed):
                source.feed(m)
    finally:
        source.close()


def test_a_duplicate_deal_is_served_only_once_its_last_seating_has_ended(tmp_path: Path) -> None:
    gates = {
        mid(1): tmp_path / "gate-seating-1",
        mid(2): tmp_path / "gate-deal-0",
        mid(5): tmp_path / "gate-deal-1",
    }
    proc = subprocess.Popen(
        [
            *REFEREE,
            "tournament",
            str(tournament_file(tmp_path, gates)),
            "--web-port",
            "0",
            "--metrics-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    out = tmp_path / "out"
    try:
        assert proc.stderr is not None
        url = metrics = ""
        for line in proc.stderr:
            found = re.search(r"metrics on (http://127\.0\.0\.1:\d+/metrics)", line)
            metrics = found.group(1) if found else metrics
            found = re.search(r"web on (http://127\.0\.0\.1:\d+)/", line)
            if found:
                url = found.group(1)
                break
        assert url and metrics, "referee tournament printed no web or metrics address"
        threading.Thread(target=lambda: proc.stderr and proc.stderr.read(), daemon=True).start()

        def progress() -> dict[str, Any]:
            return get_json(f"{url}/api/info")["progress"]  # type: ignore[no-any-return]

        # Deal 0: seating 0 has ended, seating 1 waits at its gate. A running seating
        # whose deal is still to be played elsewhere is not watched live either: its
        # plays are the later seating's hands.
        wait_for(
            lambda: progress()["finished"] == 1 and progress()["running"] == 1, 120, "seating 1"
        )
        listing = get_json(f"{url}/api/matches")
        assert [r["match_id"] for r in listing["running"]] == [mid(1)]
        assert EMBARGOED in listing["running"][0]["embargo"]
        for path in (f"/api/matches/{mid(1)}", f"/api/matches/{mid(1)}/live"):
            refused = request(url + path)
            assert refused.status == 403 and EMBARGOED in refused.json()["error"], path
        assert [m["match_id"] for m in listing["embargoed"]] == [mid(0)]
        gates[mid(1)].touch()

        # Seatings 0 and 1 have ended, the last seating waits at its gate.
        wait_for(
            lambda: progress()["finished"] == 2 and progress()["running"] == 1, 120, "two seatings"
        )
        assert_embargoed(url, out, [mid(0), mid(1)], running=mid(2))
        # The live Elo on the metrics endpoint has not counted them either.
        assert "sticheln_elo{" not in request(metrics).body.decode()
        if have_chromium():
            # The match page says why it shows nothing.
            assert EMBARGOED in page_text(f"{url}/match?id={mid(0)}", EMBARGOED)
        live = request(f"{url}/api/matches/{mid(1)}/live")
        assert live.status == 403 and "text/event-stream" not in live.headers.get(
            "Content-Type", ""
        )
        source_layer_holds(tmp_path, out, [mid(0), mid(1)])
        # The tournament's folder, served by ``referee web`` meanwhile, holds them too.
        with folder_web(out) as folder:
            assert_embargoed(folder, out, [mid(0), mid(1)], running=None)

        # The last seating ends: deal 0 is served whole; deal 1 is held in its turn.
        gates[mid(2)].touch()
        wait_for(lambda: progress()["finished"] == 5 and progress()["running"] == 1, 120, "deal 1")
        shown = wait_for(
            lambda: (
                {m["match_id"] for m in get_json(f"{url}/api/matches")["finished"]}
                >= {mid(0), mid(1), mid(2)}
                and get_json(f"{url}/api/matches")["finished"]
            ),
            30,
            "deal 0 shown",
        )
        assert {m["match_id"] for m in shown} == {mid(0), mid(1), mid(2)}
        lines = record_of(out, mid(0))
        viewer = get_json(f"{url}/api/matches/{mid(0)}")
        assert viewer["seed"] == str(lines[-1]["seed"])
        download = request(f"{url}/api/matches/{mid(0)}/record.jsonl")
        assert download.status == 200
        assert download.body == (out / "matches" / f"{mid(0)}.jsonl").read_bytes()
        replay = sse_events(f"{url}/api/matches/{mid(0)}/live", 10_000, 30)
        plays = [(x["round"], x["seat"], x["card"]) for x in lines if x["type"] == "play"]
        assert [(e["round"], e["seat"], e["card"]) for e in replay if e["type"] == "play"] == plays
        assert replay[-1]["type"] == "end"
        wait_for(lambda: get_json(f"{url}/api/standings")["matches"] == 3, 30, "3 matches rated")
        elo = re.findall(r'^sticheln_elo\{bot="([^"]+)"\}', request(metrics).body.decode(), re.M)
        assert sorted(elo) == sorted(BOTS)
        assert_embargoed(url, out, [mid(3), mid(4)], running=mid(5))

        gates[mid(5)].touch()
        assert proc.wait(120) == 0
    finally:
        for gate in gates.values():
            gate.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    # Over: the folder serves every match, the deal key published.
    with folder_web(out) as folder:
        listing = get_json(f"{folder}/api/matches")
        assert listing["embargoed"] == []
        assert len(listing["finished"]) == 6
        assert request(f"{folder}/api/matches/{mid(3)}/record.jsonl").status == 200


def test_deal_seatings_hold_a_match_while_another_seating_of_its_deal_is_unfinished() -> None:
    deals = DealSeatings.of([(0, 0), (1, 0), (2, 0), (3, 1), (4, 2), (5, 2)])
    assert deals.pending(3, set()) == []  # a deal played once is never held
    assert deals.pending(0, {0, 1}) == [2]
    assert deals.pending(2, {0, 1}) == []  # the last seating, the others over
    assert deals.pending(1, {0, 1, 2}) == []
    assert deals.first_held([3, 0, 1, 4], {3, 0, 1}) == 1
    assert deals.first_held([3, 0, 1, 2], {3, 0, 1, 2}) is None
    assert DealSeatings.of([(0, 0), (1, 1)]).first_held([0, 1], set()) is None


def test_records_are_held_until_the_deal_reveals_its_seed_or_the_key_is_published() -> None:
    def record(deal: int, withheld: bool, done: bool = True) -> Any:
        end = {"type": "end", "reason": "completed", "seed": "7", "nonce": "00"}
        if withheld:
            end["seed_withheld"] = "later seating"
        return ({"type": "header", "deal": deal}, end if done else None)

    folder = {
        "a": record(0, True),
        "b": record(0, True),
        "c": record(0, False, done=False),  # the last seating, interrupted
        "d": record(1, True),
        "e": record(1, False),  # deal 1's last seating revealed the seed
        "f": record(2, False),  # round robin: a deal played once
    }
    held = embargoed_records(folder, deal_key_published=False)
    assert held == {"a": ["b", "c"], "b": ["a", "c"], "c": ["a", "b"]}
    assert embargoed_records(folder, deal_key_published=True) == {}
