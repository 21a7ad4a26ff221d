"""Seasons as an organiser runs them, on SQLite and PostgreSQL, with real ``referee league``
commands against a real ``referee serve``: ``season end`` (the admin token's) freezes each
entry's playing submission and plays a final of them, a duplicate round robin with its
own deal key; the ladder goes on; a league killed mid-final plays the rest of it at its
next start and loses no finished match; the final's standings, finalists, deal key and
matches are served by ``season list``, the League service and the pages' API, and
``referee verify`` audits the final's folder against the commitment published at its start.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from leaguekit import (
    ADMIN_TOKEN,
    REFEREE,
    ROOT,
    LeagueDb,
    Serve,
    query,
    serving,
    wait_for,
)
from test_authors import web_get
from test_hosting import (
    PYTHON_BOT,
    VALIDATED_S,
    cli,
    code_dir,
    league_file,
    raw_submit,
    submitted,
)
from test_web_browser import Browser
from webkit import have_chromium

from referee.league.archive import pack_folder
from sticheln.v1 import league_pb2

# A league that validates its entries, then plays a final, killed and resumed: minutes.
pytestmark = pytest.mark.timeout(900)

__all__ = ["code_dir"]  # the fixture, used by name

DEALS = 1  # per table: 3 entries at one table of 3, so 1 deal x 3 rotations = 3 matches
#: The final cancelled: long enough that it is still played when the cancel comes.
CANCELLED_DEALS = 4


def season(address: str, *args: str, token: str = ADMIN_TOKEN) -> subprocess.CompletedProcess[str]:
    """``referee league season ...`` with ``token`` as the admin token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STICHELN_")}
    if token:
        env["STICHELN_ADMIN_TOKEN"] = token
    return subprocess.run(
        [*REFEREE, "league", "season", *args, "--address", address],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )  # fmt: skip


def playing(league: Any) -> bool:
    """Every entry plays (read over the League service: a CLI call costs seconds)."""
    try:
        bots = league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots
    except grpc.RpcError as exc:  # a slow answer on a loaded machine: asked again
        if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
        return False
    return bool(bots) and all(b.status == "playing" for b in bots)


def final_status(league: Any) -> str:
    try:
        got = league.Seasons(league_pb2.SeasonsRequest(), timeout=10).seasons
    except grpc.RpcError as exc:  # a slow answer on a loaded machine: asked again
        if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
        return ""
    return got[0].status if got else ""


def seasons_json(address: str) -> list[dict[str, Any]]:
    done = season(address, "list", "--json", token="")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def refusal(league: Any, token: str) -> Any:
    """The error ``EndSeason`` answers with ``token`` (it must refuse)."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    try:
        league.EndSeason(league_pb2.EndSeasonRequest(deals=1), metadata=metadata, timeout=30)
    except grpc.RpcError as exc:
        return exc
    raise AssertionError("EndSeason was not refused")


def cancel_refusal(league: Any, token: str) -> Any:
    """The error ``CancelFinal`` answers with ``token`` (it must refuse)."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    try:
        league.CancelFinal(league_pb2.CancelFinalRequest(), metadata=metadata, timeout=30)
    except grpc.RpcError as exc:
        return exc
    raise AssertionError("CancelFinal was not refused")


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def final_processes(root: int) -> set[int]:
    """The final's process under ``root`` (the league) and every process under it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))

    def under(pid: int) -> set[int]:
        return {pid}.union(*(under(c) for c in children.get(pid, [])))

    for pid in under(root):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"referee.league.season" in cmdline:
            return under(pid)
    return set()


def html_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return str(r.read().decode())


def final_rows(db: Path | str, final: str) -> dict[int, tuple[Any, ...]]:
    """The final's finished matches: index to (match id, seed, seating, finish order) and
    their seats' (bot, total, place)."""
    rows = query(
        db,
        "SELECT idx, match_id, seed, seating, finish_order FROM matches "
        "WHERE tournament = ? AND status = 'finished'",
        (final,),
    )
    seats = query(
        db,
        "SELECT idx, seat, bot, total, place FROM results WHERE tournament = ? ORDER BY idx, seat",
        (final,),
    )
    return {r[0]: (*r[1:], tuple(s[2:] for s in seats if s[0] == r[0])) for r in rows}


def test_an_organiser_ends_a_season_and_its_final_survives_a_killed_league(
    tmp_path: Path, league_db: LeagueDb, code_dir: Path
) -> None:
    config = league_file(tmp_path, league_db, code_dir, workers=1, validation_jobs=3)
    config.write_text(config.read_text().replace("[league]\n", "[league]\nweb_port = 0\n", 1))
    first = Serve(config, tmp_path / "serve.log")
    try:
        address = first.address
        tokens = {n: first.register(n) for n in ("alpha", "beta", "gamma")}
        # Too early: no entry plays yet (refusals over the service: a CLI call costs seconds).
        early = refusal(first.league, ADMIN_TOKEN)
        assert early.code() == grpc.StatusCode.FAILED_PRECONDITION, early
        assert (
            early.details()
            == "a final needs at least 3 entries with a playing submission; 0 have one"
        )
        # alpha's author uploads with the CLI; beta's and gamma's over the service (a CLI
        # call costs seconds on a loaded machine, and the CLI's upload is tested elsewhere).
        shas = {
            "alpha": submitted(
                cli(address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml",
                    token=tokens["alpha"]), "alpha", 1,
            )
        }  # fmt: skip
        packed = pack_folder(PYTHON_BOT)
        for name in ("beta", "gamma"):
            reply = raw_submit(first, tokens[name], packed)
            assert isinstance(reply, league_pb2.SubmitResponse), reply
            shas[name] = reply.submission.sha256
        wait_for(lambda: playing(first.league), VALIDATED_S * 2, "the three to play", every=0.5)
        # Only the admin token ends a season.
        assert refusal(first.league, "").code() == grpc.StatusCode.UNAUTHENTICATED
        assert refusal(first.league, "wrong").code() == grpc.StatusCode.UNAUTHENTICATED
        assert refusal(first.league, tokens["alpha"]).code() == grpc.StatusCode.PERMISSION_DENIED
        assert not first.league.Seasons(league_pb2.SeasonsRequest(), timeout=10).seasons

        ended = season(address, "end", "--deals", str(DEALS), "--parallel", "1")
        assert ended.returncode == 0, ended.stderr
        lines = ended.stdout.splitlines()
        assert lines[0] == "season 1 ended; season 2 has begun", lines
        final = "hosted-final-1"
        assert lines[1] == (
            f"final {final}: 3 finalists, {DEALS * 3} matches ({DEALS} deals per table of 3, "
            "duplicate)"
        ), lines
        for name in ("alpha", "beta", "gamma"):
            assert f"  {name:24} submission 1    sha256 {shas[name]}" in lines, lines
        commitment = lines[-1].split()[3]
        assert len(commitment) == 64, lines
        # A second end while the final is played is refused.
        again = refusal(first.league, ADMIN_TOKEN)
        assert again.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "the final of season 1 is still being played" in again.details(), again

        ladder = query(
            league_db.target,
            "SELECT COUNT(*) FROM matches WHERE tournament = 'hosted' AND status = 'finished'",
        )[0][0]
        wait_for(
            lambda: final_rows(league_db.target, final),
            120,
            "a match of the final to finish",
            every=0.1,
        )
        # Its record is not shown while the final is played (a deal's seatings share hands),
        # and no list names its matches: the matches page says why they wait.
        some = next(iter(final_rows(league_db.target, final).values()))[0]
        try:
            first.league.GetMatchRecord(league_pb2.GetMatchRecordRequest(match_id=some), timeout=10)
            raise AssertionError("a final's record was served while the final was played")
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.FAILED_PRECONDITION, exc
        web = first.lines.get(timeout=30).rsplit(" ", 1)[1].strip().rstrip("/")
        status, listed = web_get(f"{web}/api/matches")
        assert status == 200, listed
        (playing_final,) = listed["finals"]
        assert playing_final["season"] == 1 and playing_final["status"] == "playing"
        assert playing_final["planned"] == DEALS * 3 and playing_final["matches"] == []
        assert some not in json.dumps(listed)
        shown = html_get(f"{web}/matches")
        assert "The final of season 1 is being played (" in shown and some not in shown
        status, bot_page = web_get(f"{web}/api/bot?name=alpha")
        assert status == 200 and bot_page["finals"] == [], bot_page
    finally:
        first.proc.kill()
        first.proc.wait(30)
        first.channel.close()
    before = final_rows(league_db.target, final)
    planned = query(
        league_db.target, "SELECT COUNT(*) FROM matches WHERE tournament = ?", (final,)
    )[0][0]
    assert planned == DEALS * 3
    assert 0 < len(before) < planned, "the league was killed in the middle of its final"

    with serving(config, tmp_path / "serve2.log") as s:
        web = s.lines.get(timeout=30).rsplit(" ", 1)[1].strip().rstrip("/")
        wait_for(lambda: final_status(s.league) == "finished", 240, "the final to end", every=0.5)
        (done,) = seasons_json(s.address)
        after = final_rows(league_db.target, final)
        # No finished match was lost or played again: same seed, seats and finish order.
        assert len(after) == planned
        assert all(after[idx] == row for idx, row in before.items()), (before, after)
        assert done["season"] == 1 and done["final"] == final
        assert done["planned"] == done["finished"] == planned
        assert done["deal_key_commitment"] == commitment
        assert done["deal_key"] and len(done["deal_key"]) == 64
        assert {f["bot"]: (f["submission"], f["sha256"]) for f in done["finalists"]} == {
            n: (1, shas[n]) for n in shas
        }
        assert sorted(r["bot"] for r in done["standings"]) == ["alpha", "beta", "gamma"]
        assert all(r["matches"] == planned for r in done["standings"]), done["standings"]
        assert sorted(done["matches"]) == sorted(m[0] for m in after.values())

        # Every record of the final names each seat's frozen submission and its hash.
        out = tmp_path / "out" / "seasons" / "1"
        for path in sorted((out / "matches").glob("*.jsonl")):
            header = json.loads(path.read_text().split("\n", 1)[0])
            assert header["code"] == [
                {"submission": 1, "sha256": shas[b]} for b in header["seating"]
            ], header
        # The deal key revealed opens every deal, checked against the commitment published
        # when the season ended.
        verified = subprocess.run(
            [*REFEREE, "verify", str(out), "--commitment", commitment],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert f"{planned} records replay" in verified.stdout, verified.stdout

        # The ladder went on in season 2, and the pages serve the final beside it.
        assert (
            query(
                league_db.target,
                "SELECT COUNT(*) FROM matches WHERE tournament = 'hosted' AND status = 'finished'",
            )[0][0]
            > ladder
        )
        listed = season(s.address, "list", token="")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("season 2 (the ladder) since "), listed.stdout
        assert "season 1: " in listed.stdout and f"final {final} ended" in listed.stdout
        assert f"key {done['deal_key']}" in listed.stdout
        status, doc = web_get(f"{web}/api/seasons")
        assert status == 200 and doc["current"] == 2, doc
        (page,) = doc["seasons"]
        assert [r["bot"] for r in page["standings"]] == [r["bot"] for r in done["standings"]]
        assert page["standings"][0]["rank"] == 1
        assert page["deal_key"] == done["deal_key"]
        match_id = page["matches"][0]["match_id"]
        status, viewer = web_get(f"{web}/api/matches/{match_id}")
        assert status == 200, viewer
        record = s.league.GetMatchRecord(
            league_pb2.GetMatchRecordRequest(match_id=match_id), timeout=10
        )
        assert record.summary.seating and record.record_jsonl.startswith("{")
        # The matches list and each finalist's page list the final's matches, marked.
        status, listed = web_get(f"{web}/api/matches")
        assert status == 200, listed
        (ended,) = listed["finals"]
        assert (ended["season"], ended["status"], ended["finished"]) == (1, "finished", planned)
        assert [m["match_id"] for m in ended["matches"]] == done["matches"]
        assert all(m["season"] == 1 for m in ended["matches"])
        by_id = {m[0]: m for m in after.values()}
        for m in ended["matches"]:
            seats = by_id[m["match_id"]][4]
            assert m["seating"] == [b for b, _, _ in seats], (m, seats)
            assert m["places"] == [p for _, _, p in seats], (m, seats)
        assert not {m["match_id"] for m in listed["finished"]} & set(done["matches"])
        shown = html_get(f"{web}/matches")
        assert 'id="final-1"' in shown and shown.count("final of season 1</span>") == planned
        for name in shas:
            status, bot_page = web_get(f"{web}/api/bot?name={name}")
            assert status == 200
            assert [m["match_id"] for m in bot_page["finals"]] == done["matches"], bot_page
            assert name in html_get(f"{web}/bot?name={name}").split('id="final-matches"')[1]
        cancelled = cancel_a_final(s, league_db, web, tmp_path / "out" / "seasons" / "2")

        def end_again() -> None:
            """Another season may end once the final was cancelled."""
            again = season(s.address, "end", "--deals", str(DEALS), "--parallel", "1")
            assert again.returncode == 0, again.stderr
            assert again.stdout.startswith("season 3 ended; season 4 has begun"), again.stdout

        if league_db.kind == "sqlite" and have_chromium():  # the page once: the same on both
            seasons_on_the_page(web, done, cancelled, end_again)
        else:
            end_again()


def cancel_a_final(s: Serve, league_db: LeagueDb, web: str, out: Path) -> list[str]:
    """The organiser ends season 2 and cancels its final once a match of it has finished:
    its process stops, the finished matches stay and are shown, the season says
    ``cancelled``, and its folder (``out``) is audited with the key. The matches kept."""
    nothing = cancel_refusal(s.league, ADMIN_TOKEN)
    assert nothing.code() == grpc.StatusCode.FAILED_PRECONDITION, nothing
    assert nothing.details() == (
        "no final is being played; `referee league season list` shows the seasons"
    )
    # The CLI without the admin token says so in one line.
    no_token = season(s.address, "cancel", token="")
    assert no_token.returncode != 0 and no_token.stdout == ""
    assert len(no_token.stderr.strip().splitlines()) == 1, no_token.stderr
    assert "STICHELN_ADMIN_TOKEN" in no_token.stderr, no_token.stderr
    ended = season(s.address, "end", "--deals", str(CANCELLED_DEALS), "--parallel", "1")
    assert ended.returncode == 0, ended.stderr
    commitment = ended.stdout.splitlines()[-1].split()[3]
    final = "hosted-final-2"
    # Only the admin token cancels.
    assert cancel_refusal(s.league, "").code() == grpc.StatusCode.UNAUTHENTICATED
    assert cancel_refusal(s.league, "wrong").code() == grpc.StatusCode.UNAUTHENTICATED
    bot_token = cancel_refusal(s.league, s.register("delta"))
    assert bot_token.code() == grpc.StatusCode.PERMISSION_DENIED, bot_token
    wait_for(lambda: final_rows(league_db.target, final), 120, "a match of final 2", every=0.1)
    processes = wait_for(lambda: final_processes(s.proc.pid), 30, "the final's process")
    before = final_rows(league_db.target, final)

    done = season(s.address, "cancel")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"final {final} of season 2 cancelled: "), lines
    # The final's process and every bot it started are gone.
    wait_for(lambda: not any(alive(p) for p in processes), 30, "the final's processes to end")
    kept = final_rows(league_db.target, final)
    assert all(kept[idx] == row for idx, row in before.items()), (before, kept)
    planned = CANCELLED_DEALS * 3
    assert lines[0].split(": ", 1)[1].startswith(f"{len(kept)} of {planned} matches"), lines
    assert len(kept) < planned, "the final was cancelled while it was played"
    listed = seasons_json(s.address)
    assert [x["status"] for x in listed] == ["cancelled", "finished"], listed
    two = listed[0]
    assert two["finished"] == len(kept) and two["standings"] == []
    assert sorted(two["matches"]) == sorted(m[0] for m in kept.values())
    assert two["deal_key"] and lines[1].startswith(f"deal key {two['deal_key']}")
    text = season(s.address, "list", token="").stdout
    assert f"final {final} cancelled " in text, text
    assert f"after {len(kept)} of {planned} matches" in text, text
    status, doc = web_get(f"{web}/api/seasons")
    assert status == 200 and doc["seasons"][0]["status"] == "cancelled", doc
    # Its finished matches are shown now (no seating of theirs will be played), marked.
    status, matches = web_get(f"{web}/api/matches")
    assert [(f["season"], f["status"]) for f in matches["finals"]] == [
        (2, "cancelled"),
        (1, "finished"),
    ]
    assert sorted(m["match_id"] for m in matches["finals"][0]["matches"]) == sorted(two["matches"])
    record = s.league.GetMatchRecord(
        league_pb2.GetMatchRecordRequest(match_id=two["matches"][0]), timeout=10
    )
    assert record.record_jsonl.startswith("{")
    # The matches that finished are audited against the commitment published at the end
    # (the records of the matches stopped are set aside, never shown).
    verified = subprocess.run(
        [*REFEREE, "verify", str(out), "--commitment", commitment],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{len(kept)} records replay" in verified.stdout, verified.stdout
    assert sorted(p.stem for p in (out / "matches").glob("*.jsonl")) == sorted(two["matches"])
    # Nothing of it plays again: a second cancel finds no final.
    assert cancel_refusal(s.league, ADMIN_TOKEN).code() == grpc.StatusCode.FAILED_PRECONDITION
    return list(two["matches"])


def seasons_on_the_page(
    web: str, done: dict[str, Any], cancelled: list[str], end_again: Callable[[], None]
) -> None:
    """The standings page shows the final under the ladder: its standings with each
    finalist's submission, its deal key, links to its matches that open in the viewer; and
    the cancelled final of season 2 as cancelled. The matches page and a finalist's page
    list both finals' matches, marked; the matches page left open shows a final that
    starts (``end_again``) without being reloaded."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = Browser(p)
        try:
            page = b.page
            page.goto(f"{web}/")
            page.wait_for_selector('#seasons .season[data-season="1"] tbody tr')
            assert page.locator("#current-season").get_attribute("data-season") == "3"
            two = page.locator('.season[data-season="2"]')
            assert two.get_attribute("data-status") == "cancelled"
            assert "Final cancelled by the organiser" in two.inner_text()
            assert page.locator("#standings").count() == 1  # the ladder's, above
            rows = page.locator('.season[data-season="1"] tbody tr')
            bots = [rows.nth(i).get_attribute("data-bot") for i in range(rows.count())]
            assert bots == [r["bot"] for r in done["standings"]], bots
            subs = page.locator('.season[data-season="1"] td.submission').all_inner_texts()
            assert subs == ["#1"] * 3, subs
            one = '.season[data-season="1"]'
            assert done["deal_key"] in page.locator(f"{one} .deal-key").inner_text()
            links = page.locator(f"{one} .season-matches a")
            assert links.count() == len(done["matches"])
            page.locator(f"{one} .season-matches summary").click()
            # Open, it stays open when the page is drawn again (a ladder match finished).
            page.wait_for_selector(f"{one} .season-matches[open] a")
            href = links.first.get_attribute("href")
            assert href == f"/match?id={done['matches'][0]}", href
            page.goto(f"{web}{href}")  # the viewer opens the final's match
            page.wait_for_selector("#trick")
            # The matches page and a finalist's page list the final's matches, marked.
            page.goto(f"{web}/matches")
            page.wait_for_selector('main[data-drawn="1"] #final-1 tbody tr')
            rows = page.locator("#final-1 tbody tr")
            assert [rows.nth(i).get_attribute("data-match") for i in range(rows.count())] == done[
                "matches"
            ]
            assert page.locator("#final-1 .pill.final").first.inner_text() == "final of season 1"
            assert page.locator("#final-2 tbody tr").count() == len(cancelled)
            assert (
                "cancelled by the organiser" in page.locator('.final[data-season="2"]').inner_text()
            )
            end_again()
            page.wait_for_selector('.final[data-season="3"][data-status="playing"]', timeout=60_000)
            assert "is being played" in page.locator('.final[data-season="3"]').inner_text()
            page.goto(f"{web}/bot?name={done['standings'][0]['bot']}")
            page.wait_for_selector('main[data-drawn="1"] #final-matches tbody tr')
            rows = page.locator("#final-matches tbody tr")
            seasons = [rows.nth(i).get_attribute("data-season") for i in range(rows.count())]
            assert seasons == ["2"] * len(cancelled) + ["1"] * len(done["matches"]), seasons
            assert not b.errors, b.errors
        finally:
            b.browser.close()


def test_a_finals_frozen_code_outlives_its_retention_until_the_final_has_ended(
    tmp_path: Path,
) -> None:
    from referee.league.retention import DAY_S, Retention
    from referee.league.season import frozen_hashes
    from referee.league.submissions import Submissions
    from referee.results.store import Store

    store = Store(tmp_path / "league.db")
    subs = Submissions(store)
    now = 1_000_000.0
    for sha in ("a1", "a1-built", "a2"):
        subs.put_archive(sha, b"x")
    for number, sha, build, status in ((1, "a1", "a1-built", "retired"), (2, "a2", "", "playing")):
        store.execute(
            "INSERT INTO league_submissions (bot, number, sha256, format, bot_file, status, "
            "build_sha256, submitted_at, decided_at) VALUES ('ann', ?, ?, 'tar.gz', 'bot.toml', "
            "?, ?, ?, ?)",
            (number, sha, status, build, now - 3 * DAY_S, now - 3 * DAY_S + number),
        )
    assert frozen_hashes(store) == set()  # makes the seasons' tables
    # ann's submission 1 was frozen for the final of season 1, then retired by submission 2.
    store.execute(
        "INSERT INTO league_seasons (league, season, started_at, ended_at, final, deals, "
        "table_size, max_matches, parallel, status) VALUES "
        "('l', 1, 0, ?, 'l-final-1', 1, 3, 0, 1, 'playing')",
        (now - 3 * DAY_S,),
    )
    store.execute(
        "INSERT INTO league_season_finalists VALUES ('l', 1, 'ann', 1, 'a1', 'a1-built', "
        "'tar.gz', 'bot.toml')"
    )
    retention = Retention(store, tmp_path / "code", retention_days=1.0)
    assert frozen_hashes(store) == {"a1", "a1-built"}
    assert retention.expired(now) == set()
    store.execute("UPDATE league_seasons SET status = 'cancelled'")
    assert retention.expired(now) == {"a1", "a1-built"}  # a cancelled final keeps none
    store.execute("UPDATE league_seasons SET status = 'finished'")
    assert retention.expired(now) == {"a1", "a1-built"}
    store.close()
