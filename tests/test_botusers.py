"""A uid per running bot process: leased from a range, never held by two live bots (in one
referee or between referee processes), not handed out again at once, given back."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from referee.jail.botusers import DEFAULT_UIDS, BotUsers, NoFreeUid, parse_range
from referee.jail.sandbox import Sandbox

# Each test leases from a range of its own: a uid one of them runs a process as is passed
# over by the others, which may run at the same time.


def test_every_lease_is_a_uid_of_its_own_and_the_range_runs_out(tmp_path: Path) -> None:
    users = BotUsers((5000, 5003), tmp_path / "uids.lock")
    leases = [users.lease() for _ in range(4)]
    assert sorted(lease.uid for lease in leases) == [5000, 5001, 5002, 5003]
    assert all(lease.ids == (lease.uid, lease.uid) for lease in leases)
    with pytest.raises(NoFreeUid, match="all 4 uids of 5000-5003 are in use"):
        users.lease()
    leases[2].release()
    assert users.lease().uid == leases[2].uid


def test_a_released_uid_is_not_handed_out_again_at_once(tmp_path: Path) -> None:
    users = BotUsers((5100, 5199), tmp_path / "uids.lock")
    seen = []
    for _ in range(100):
        lease = users.lease()
        seen.append(lease.uid)
        lease.release()
    assert len(set(seen)) == 100, "the leases rotate through the whole range"
    assert users.leased() == set()


def test_another_referee_process_never_gets_a_uid_this_one_holds(tmp_path: Path) -> None:
    lock = tmp_path / "uids.lock"
    users = BotUsers((5200, 5201), lock)
    held = users.lease()
    other = textwrap.dedent(
        f"""
        from pathlib import Path
        from referee.jail.botusers import BotUsers, NoFreeUid
        users = BotUsers((5200, 5201), Path({str(lock)!r}))
        first = users.lease().uid
        try:
            users.lease()
            print(first, "both")
        except NoFreeUid:
            print(first, "one")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", other], capture_output=True, text=True, check=True, timeout=60
    )
    uid, count = done.stdout.split()
    assert int(uid) != held.uid and count == "one"
    held.release()
    done = subprocess.run(
        [sys.executable, "-c", other], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split()[1] == "both", "released: the other process may lease it"


def test_a_uid_some_process_still_runs_as_is_passed_over(tmp_path: Path) -> None:
    """A process of an earlier referee's bot (or anyone's) keeps its uid from being leased."""
    if os.geteuid() != 0:
        mine = os.geteuid()
        users = BotUsers((mine, mine + 1), tmp_path / "uids.lock")
        assert users.lease().uid == mine + 1
        return
    sleeper = subprocess.Popen(
        ["setpriv", "--reuid=5300", "--regid=5300", "--clear-groups", "sleep", "60"]
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until setpriv has become uid 5300
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{sleeper.pid}").st_uid == 5300:
                    break
            time.sleep(0.01)
        users = BotUsers((5300, 5301), tmp_path / "uids.lock")
        assert [users.lease().uid for _ in range(1)] == [5301]
        with pytest.raises(NoFreeUid):
            users.lease()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_range_is_checked_in_one_line() -> None:
    assert parse_range("200000-200999") == (200000, 200999)
    for text in ("0-1000", "abc", "5000", "70000-60000", "60000-70000", "1000-2147483647"):
        with pytest.raises(ValueError) as caught:
            parse_range(text)
        assert "\n" not in str(caught.value) and "allowed" in str(caught.value)
    with pytest.raises(ValueError):
        Sandbox(uids=(0, 10))
    first, last = DEFAULT_UIDS
    assert last - first + 1 == 65536 and first > 1 << 30, "far above any real user"


def test_an_organiser_chooses_the_range_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("STICHELN_BOT_UIDS", "300000-300999")
    assert Sandbox().uids == (300000, 300999)
    bot = tmp_path / "bot.toml"
    bot.write_text('name = "b"\ncommand = ["python3", "bot.py"]\n')
    env = {**os.environ, "STICHELN_BOT_UIDS": "0-99"}
    done = subprocess.run(
        [sys.executable, "-m", "referee.cli", "match", *("--bot", str(bot)) * 3],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "$STICHELN_BOT_UIDS" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="bots get uids of their own under a root referee")
def test_started_bots_run_as_uids_of_their_own_given_back_once_reaped(tmp_path: Path) -> None:
    """Two bot processes started at once run as two uids of the range (their sockets are
    theirs); once stopped and reaped, both uids are free again."""
    from bots.harness import BOTS_DIR, assert_no_processes, new_marker, run

    from referee.config.bots import bot_from_table
    from referee.jail import botusers
    from referee.jail.process import _sandboxed_processes
    from referee.match.pool import await_handshake, start_bot
    from referee.match.server import RefereeServer

    marker = new_marker()
    spec = bot_from_table(
        {
            "name": "lowest",
            "command": [sys.executable, "lowest_bot.py", f"--marker={marker}"],
            "workdir": str(BOTS_DIR),
        }
    )
    sandbox = Sandbox()
    users = botusers.pool(sandbox.uids)

    async def main() -> list[int]:
        server = RefereeServer(sandbox=sandbox)
        await server.start("127.0.0.1", 0)
        try:
            slots = [server.registry.open_seat("m", n, "lowest") for n in range(2)]
            processes = [
                await start_bot(server, spec, [slot], tmp_path / f"{n}.log")
                for n, slot in enumerate(slots)
            ]
            for slot, process in zip(slots, processes, strict=True):
                assert await await_handshake(slot, process, 30) == ""
            uids = []
            for process in processes:
                inside = _sandboxed_processes(process.proc.pid)
                assert inside
                uids.append(os.stat(f"/proc/{inside[-1]}").st_uid)
            assert set(uids) <= users.leased()
            for process in processes:
                await process.stop()
            return uids
        finally:
            await server.stop(0)

    uids = run(main())
    first, last = sandbox.uids
    assert len(set(uids)) == 2 and all(first <= u <= last for u in uids), uids
    assert not set(uids) & users.leased(), "given back once the processes were reaped"
    assert_no_processes(marker)


def _lowest_bot(tmp_path: Path) -> tuple[Path, str]:
    """A bot file for ``tests/bots/lowest_bot.py`` and the marker its processes carry."""
    from bots.harness import BOTS_DIR, new_marker

    marker = new_marker()
    bot = tmp_path / "bot.toml"
    bot.write_text(
        f'name = "b"\ncommand = ["python3", "lowest_bot.py", "--marker={marker}"]\n'
        f'workdir = "{BOTS_DIR}"\n'
    )
    return bot, marker


def _referee(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    from bots.harness import READ_BOTS

    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *args, *READ_BOTS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )


def test_the_range_is_chosen_on_the_command_line_and_checked_in_one_line(
    tmp_path: Path,
) -> None:
    from bots.harness import assert_no_processes

    bot, marker = _lowest_bot(tmp_path)
    seats = [x for _ in range(3) for x in ("--bot", str(bot))]
    refused = _referee(tmp_path, "match", *seats, "--bot-uids", "10-20")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(
        "referee match: --bot-uids"
    )
    out = str(tmp_path / "out")
    played = _referee(tmp_path, "match", *seats, "--bot-uids", "300000-300009", "--out", out)
    assert played.returncode == 0, played.stderr
    if os.geteuid() == 0:
        assert "a uid of its own from 300000-300009" in played.stderr
    assert_no_processes(marker)


def test_referee_compare_takes_the_range_too(tmp_path: Path) -> None:
    from bots.harness import assert_no_processes

    bot, marker = _lowest_bot(tmp_path)
    lineup = [
        *("compare", "--candidate", str(bot), "--baseline", str(bot)),
        *("--opponent", str(bot), "--opponent", str(bot)),
        *("--matches", "2", "--out", str(tmp_path / "out")),
    ]
    refused = _referee(tmp_path, *lineup, "--bot-uids", "10-20")
    assert refused.returncode == 3
    assert refused.stderr.count("\n") == 1 and "--bot-uids" in refused.stderr
    played = _referee(tmp_path, *lineup, "--bot-uids", "300000-300009")
    assert played.returncode in (0, 1, 2), played.stderr
    assert (tmp_path / "out" / "compare.json").exists()
    assert_no_processes(marker)
