"""Idle viewers cannot starve the referee of descriptors (issue 32, route 4).

``referee tournament FILE --web-port 0`` in duplicate mode (every seating starts its bots
afresh, in their sandboxes) with its descriptor limit lowered to 256 (soft and hard, so
that raising the soft limit cannot help), while 300 idle viewers from eight loopback
addresses hold live streams and come back whenever they are closed. Before, the viewers
took the descriptors the bots' starts needed (seats forfeited with "Too many open files",
then the referee crashed). Now the web server takes at most 32 connections of one client
and a total that leaves the descriptors to the matches, refuses the rest with a one-line
503, and every match is played with no fault. ``benchmarks/viewers.py`` runs the issue's
scale: 2,000 viewers against a limit of 1024.
"""

from __future__ import annotations

import json
import re
import resource
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import aiohttp
import pytest
from bots.harness import BOTS_DIR, assert_no_processes, new_marker, run
from idleviewers import IdleViewers, ask
from leaguekit import REFEREE, wait_for
from prometheus_client import CollectorRegistry

from referee.config.bots import bot_from_table
from referee.runtime import descriptors
from referee.web.doors import DoorLimits, Doorman, client_of, refusal
from referee.web.server import WebOptions, WebServer
from referee.web.sources import FolderSource

pytestmark = pytest.mark.timeout(240)

LIMIT = 256
VIEWERS = 300
SOURCES = [f"127.0.0.{i}" for i in range(2, 10)]


def _tournament(tmp: Path, marker: str) -> Path:
    lines = [
        "[tournament]",
        'name = "viewed"',
        'mode = "duplicate"',
        "table_size = 3",
        "matches_per_table = 6",  # two deals, three seatings each: 18 bot starts
        "parallel = 2",
        f"out = {json.dumps(str(tmp / 'out'))}",
        "[clock]",
        "decision_ms = 5000",
        "startup_ms = 30000",
        "[sandbox]",
        # Bubblewrap, as a round robin's default: a duplicate tournament's is the strongest
        # tier (gVisor here), ~4x the time a start, and the descriptors are the referee's.
        'mode = "bubblewrap"',
        f"read = [{json.dumps(str(BOTS_DIR))}]",
    ]
    for name in ("ann", "ben", "cy"):
        lines += [
            "[[bots]]",
            f"name = {json.dumps(name)}",
            f"command = {json.dumps([sys.executable, 'lowest_bot.py', f'--marker={marker}'])}",
            f"workdir = {json.dumps(str(BOTS_DIR))}",
            'env = { SLEEP_MS = "5" }',
        ]
    path = tmp / "t.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def test_a_duplicate_tournament_plays_every_match_while_idle_viewers_crowd_its_web_port(
    tmp_path: Path,
) -> None:
    marker = new_marker()
    proc = subprocess.Popen(
        [
            *REFEREE,
            "tournament",
            str(_tournament(tmp_path, marker)),
            "--web-port",
            "0",
            "--workers",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_low_limit,
    )
    lines: list[str] = []
    found = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "web on http" in line:
                found.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    viewers: IdleViewers | None = None
    try:
        assert found.wait(120), "".join(lines)[-2000:]
        web = re.search(r"web on http://127\.0\.0\.1:(\d+)/", "".join(lines))
        assert web, "no web address"
        port = int(web.group(1))
        viewers = IdleViewers("127.0.0.1", port, VIEWERS, SOURCES)
        tally = viewers.tally
        wait_for(lambda: tally.made + tally.failed >= VIEWERS, 60, "the viewers to knock")
        # A new viewer while they crowd the port: a page or a clear refusal, not a reset.
        try:
            newcomer = ask("127.0.0.1", port, "127.0.0.250")
        except OSError as exc:
            newcomer = (repr(exc), "")
        out, _ = proc.communicate(timeout=180)
    finally:
        if viewers is not None:
            viewers.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    log = "".join(lines)
    assert proc.returncode == 0, log[-3000:]
    assert "Too many open files" not in log and "Traceback" not in log
    print(f"viewers: {viewers.tally if viewers else None}; {out.strip().splitlines()[-1:]}")
    with sqlite3.connect(tmp_path / "out" / "tournament.db") as db:
        status = [s for (s,) in db.execute("SELECT status FROM matches").fetchall()]
    assert status == ["finished"] * 6
    faults = []
    for record in (tmp_path / "out" / "matches").glob("*.jsonl"):
        lines_ = [json.loads(x) for x in record.read_text().splitlines()]
        faults += [x for x in lines_ if x["type"] == "fault"]
        assert lines_[-1]["reason"] == "completed"
    assert faults == [], faults[:3]
    assert_no_processes(marker, within=10)
    # The viewers over the bounds were told so in one line (and came back).
    assert viewers is not None
    refused = viewers.tally.refusal
    assert refused.endswith("\n") and "\n" not in refused[:-1], viewers.tally
    status, body = newcomer
    assert status.startswith("HTTP/1.1 200") or (
        status.startswith("HTTP/1.1 503") and body.count("\n") == 1
    ), (status, body[:300])
    run(_streams_end_in_time_and_resume(tmp_path / "out"))


async def _streams_end_in_time_and_resume(out: Path) -> None:
    """A live stream ends after ``stream_s`` without a close event (the browser comes
    back by itself), and a match's stream resumes after the ``Last-Event-ID`` it had."""
    server = WebServer(FolderSource(out), CollectorRegistry(), WebOptions(port=0, stream_s=1.0))
    url = await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            live = f"{url}api/matches/viewed-00000/live"
            async with http.get(live) as r:
                text = await r.text()
            ids = [int(x[4:]) for x in text.splitlines() if x.startswith("id: ")]
            assert len(ids) > 10 and ids == list(range(1, len(ids) + 1))
            assert text.count("\ndata: ") >= len(ids) and "event: close" in text
            async with http.get(live, headers={"Last-Event-ID": str(len(ids) - 2)}) as r:
                rest = await r.text()
            assert [int(x[4:]) for x in rest.splitlines() if x.startswith("id: ")] == ids[-2:]
            async with http.get(f"{url}api/updates") as r:
                updates = await r.text()
            assert updates.startswith("retry: ") and "data: " in updates
            assert "event: close" not in updates
    finally:
        await server.stop()


def test_the_web_takes_a_share_per_client_and_a_total_that_leaves_descriptors() -> None:
    assert client_of("127.0.0.7") == "127.0.0.7"
    assert client_of("2001:db8::1") == "2001:db8::/64"
    assert client_of("::ffff:10.1.2.3") == "10.1.2.3"

    async def main() -> None:
        doors = Doorman(DoorLimits(per_client=2, total=3))
        assert doors.total == 3
        assert doors.enter("a") == doors.enter("a") == ""
        assert doors.enter("a").startswith("2 connections from your address are open")
        assert doors.enter("b") == ""
        assert doors.enter("c").startswith("this server has 3 viewers")
        doors.leave("a")
        assert doors.enter("c") == ""
        # The total never takes what the referee's matches need.
        low = DoorLimits(total=10_000)
        assert low.total_now() <= descriptors.limit() // 2

    run(main())
    answer = refusal("this server has 3 viewers, the most it takes at once; try again later")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"Connection: close" in head and body.count(b"\n") == 1


def test_a_descriptor_shortage_at_a_bots_start_voids_the_match_and_charges_no_bot(
    tmp_path: Path,
) -> None:
    """The referee's own want is no bot's fault: a start that fails with EMFILE (or gRPC's
    failure to bind when descriptors are short) makes the match void, with no fault and no
    forfeit, and the tournament plays it again."""
    import errno

    from referee.match.pool import RefereeFault, referee_short
    from referee.match.runner import MatchRunner
    from referee.match.server import RefereeServer
    from referee.rules import preset

    assert isinstance(referee_short(OSError(errno.EMFILE, "Too many open files")), RefereeFault)
    assert isinstance(referee_short(OSError(errno.ENFILE, "File table overflow")), RefereeFault)
    assert referee_short(OSError(errno.ENOENT, "No such file")) is None
    assert referee_short("no valid handshake within 10 s") is None

    class Short:
        """A pool that cannot start its second seat's bot for want of descriptors."""

        def serves(self, spec: object) -> bool:
            return True

        async def acquire(
            self, spec: object, match_id: str = "", deal_seed: int | None = None
        ) -> object:
            raise RefereeFault("the referee ran out of file descriptors (255 open of 256)")

        def release(self, bot: object) -> None:
            pass

    spec = bot_from_table({"name": "any", "command": ["true"]})

    async def main() -> None:
        server = RefereeServer()
        runner = MatchRunner(
            server, [spec] * 3, preset("sticheln", rounds=1), out_dir=tmp_path, pool=Short()
        )
        result = await runner.run()
        assert result.aborted and result.void.startswith("seat ")
        assert "ran out of file descriptors" in result.reason
        assert all(not seat.faults for seat in result.seats)

    run(main())


def test_a_tournament_plays_a_void_match_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each match comes back void once (as a referee short of descriptors would make it):
    every one is played again and finishes, and none is counted aborted."""
    import dataclasses

    from referee.match.runner import MatchResult
    from referee.tournament import run as tournament_run
    from referee.tournament.config import load_config

    real = tournament_run.start_player
    voided: list[int] = []

    async def start_player(*args: object, **kwargs: object) -> object:
        player = await real(*args, **kwargs)  # type: ignore[arg-type]
        play = player.play

        async def flaky(job: object, started: object) -> MatchResult:
            index = job.index  # type: ignore[attr-defined]
            if index not in voided:
                voided.append(index)
                result = await play(job, started)  # type: ignore[arg-type]
                why = "seat 1 (ben): the referee ran out of file descriptors"
                return dataclasses.replace(result, reason=f"aborted: {why}", void=why)
            return await play(job, started)  # type: ignore[arg-type]

        player.play = flaky  # type: ignore[method-assign]
        return player

    monkeypatch.setattr(tournament_run, "start_player", start_player)
    monkeypatch.setattr(tournament_run, "VOID_PAUSE_S", 0.01)
    marker = new_marker()
    text = (
        _tournament(tmp_path, marker)
        .read_text()
        .replace("matches_per_table = 6", "matches_per_table = 3")
    )
    (tmp_path / "t3.toml").write_text(text)
    outcome = run(
        tournament_run.run_tournament(load_config(tmp_path / "t3.toml"), progress=False, workers=1)
    )
    assert sorted(voided) == [0, 1, 2]
    assert outcome.finished == outcome.planned == 3
    assert_no_processes(marker, within=10)


def test_the_referee_raises_its_descriptor_limit_to_the_hard_one() -> None:
    """The soft limit is often 1024 under a far higher hard one: ``referee`` takes the
    hard one first thing (its tournament workers and bots inherit it)."""
    script = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 512))\n"
        "import referee.cli\n"
        "try:\n"
        "    referee.cli.main(['no-such-command'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1:] == ["(512, 512)"], done.stderr[-500:]
