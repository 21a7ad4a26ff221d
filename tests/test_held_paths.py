"""A bot's folder and read paths are bound by descriptor, never by name (issue 32, route 3).

The bot's author owns its folder and may swap a path for a link between the referee's
check and bubblewrap's bind. Each such path is opened once without following links
(:mod:`referee.jail.held`) and bubblewrap binds that descriptor: a swapped path is a
clear fault for the bot, never a wider view. The race test flips ``data`` with a link to
a folder standing for the output folder, and with one to the host's ``/proc``, about
every millisecond (``renameat2(RENAME_EXCHANGE)``: the name always exists) while bots
start; no started bot may ever see either target.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import os
import threading
from pathlib import Path

import pytest
from bots.harness import run

from referee import jail
from referee.config.bots import bot_from_table
from referee.jail.held import PathChanged, open_held
from referee.jail.sandbox import Sandbox, bwrap_command, bwrap_descriptors
from referee.match.pool import changed_under

pytestmark = pytest.mark.timeout(120)

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_libc = ctypes.CDLL(None, use_errno=True)


def _exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (``renameat2`` with ``RENAME_EXCHANGE``)."""
    if _libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def test_a_link_anywhere_on_the_way_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "inner").mkdir(parents=True)
    fd = open_held(real / "inner", folder=True)
    try:
        assert os.readlink(f"/proc/self/fd/{fd}") == str(real / "inner")
    finally:
        os.close(fd)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(PathChanged, match=r"link\b.* is now a link \(to .*real\)"):
        open_held(tmp_path / "link" / "inner")
    (real / "last").symlink_to("/proc")
    with pytest.raises(PathChanged, match="is now a link"):
        open_held(real / "last")
    with pytest.raises(PathChanged, match="cannot be opened"):
        open_held(real / "gone")
    (real / "file").write_text("x")
    with pytest.raises(PathChanged, match="no longer a folder"):
        open_held(real / "file", folder=True)
    with pytest.raises(PathChanged, match="absolute and resolved"):
        open_held(real / ".." / "real")


def test_the_bots_folder_and_read_paths_are_bound_by_descriptor(tmp_path: Path) -> None:
    folder, data = tmp_path / "bot", tmp_path / "data"
    folder.mkdir()
    data.mkdir()
    sandbox = Sandbox()
    lease = sandbox.lease_user()
    try:
        policy = sandbox.policy(folder, [data], None, lease.ids if lease else None)
        assert set(policy.held) == {folder, data}
        with bwrap_descriptors(policy, ["true"]) as (argv, fds):
            bound = {
                argv[i + 2]: int(argv[i + 1]) for i, a in enumerate(argv) if a == "--ro-bind-fd"
            }
            assert set(bound) == {str(folder), str(data)}
            assert set(bound.values()) <= set(fds)
            by_name = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
            assert str(folder) not in by_name and str(data) not in by_name
        bare = dataclasses.replace(policy, seccomp=b"")
        with pytest.raises(ValueError, match="held path needs a descriptor"):
            bwrap_command(bare, ["true"], None, [0] * len(bare.files))
    finally:
        if lease is not None:
            lease.release()


def test_a_path_swapped_for_a_link_while_bots_start_never_shows_its_target(
    tmp_path: Path,
) -> None:
    root = tmp_path / "race"
    folder, data, out = root / "bot", root / "data", root / "out"
    for path in (folder, data, out):
        path.mkdir(parents=True)
    (data / "honest-data").write_text("ok\n")
    (out / "deal-key.txt").write_text("the output folder\n")
    links = [root / "link-out", root / "link-proc"]
    links[0].symlink_to(out)
    links[1].symlink_to("/proc")
    for path in (tmp_path, root, folder, data, out):
        path.chmod(0o755)
    spec = bot_from_table(
        {
            "name": "racer",
            "command": ["/bin/sh", "-c", f"ls -a {data}"],
            "workdir": str(folder),
        }
    )
    sandbox = Sandbox()
    stop = threading.Event()
    flips = 0

    def swapper() -> None:
        nonlocal flips
        while not stop.is_set():
            link = links[flips % 2]
            _exchange(data, link)  # data is now the link
            _exchange(data, link)  # and the folder again
            flips += 1

    async def start_one(i: int) -> str:
        lease = sandbox.lease_user()
        try:
            policy = sandbox.policy(folder, [data], None, lease.ids if lease else None)
            log = tmp_path / "logs" / f"{i}.log"
            try:
                process = await jail.start(spec, "unix:/nowhere", "t" * 32, log, policy=policy)
            except PathChanged as exc:
                assert "may not be replaced by links" in str(exc) or "leads to" in str(exc)
                return "refused"
            await process.proc.wait()
            await process.stop()
            return log.read_text()
        finally:
            if lease is not None:
                lease.release()

    async def starts() -> list[str]:
        seen: list[str] = []
        for batch in range(15):
            seen += await asyncio.gather(*(start_one(batch * 4 + k) for k in range(4)))
        return seen

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        seen = run(starts())
    finally:
        stop.set()
        thread.join(10)
    assert flips > 100, "the swapper hardly ran"
    for text in seen:
        assert "deal-key.txt" not in text, "a bot saw the output folder"
        assert "self" not in text.split() and "sys" not in text.split(), "a bot saw /proc"
    # bubblewrap checks what it bound against the descriptor, and ends the sandbox
    # before the bot runs when they differ (the name was swapped again meanwhile): the
    # seat's fault then says so.
    stopped = [t for t in seen if t.startswith("bwrap: ")]
    unexplained = [t for t in stopped if not changed_under(_Ended(tmp_path, t))]
    assert not unexplained, unexplained
    shown = [t for t in seen if t != "refused" and t not in stopped]
    assert all("honest-data" in t for t in shown), shown
    assert shown, "no start got through at all"
    print(
        f"{len(seen)} starts, {flips} flips: {len(shown)} saw their data, "
        f"{seen.count('refused')} refused, {len(stopped)} stopped by bubblewrap: "
        f"{sorted({t.split(':')[1] for t in stopped})}"
    )


class _Ended:
    """What :func:`changed_under` reads of a started process: its log, and that it ran in
    a sandbox."""

    sandboxed = True

    def __init__(self, tmp: Path, text: str) -> None:
        self.log_path = tmp / "ended.log"
        self.log_path.write_text(text)
