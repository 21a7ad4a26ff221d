"""Ctrl-C in the middle of the suite leaves nothing running and no folder behind.

A pytest session of its own (three xdist workers, as scripts/test.sh runs them) plays the
tests of tests/interrupted_session.py: the session's PostgreSQL server, sandboxed matches
on a loopback referee, and a check-bot run. Once every one of them is under way, the test
sends SIGINT to the session's whole process group, as a terminal's Ctrl-C does (pytest, its
workers and what they started). Afterwards no process may remain that names the session's
temporary folder (its ``TMPDIR``, where the PostgreSQL cluster, the bots' socket folders,
gVisor's state and check-bot's folder are made) and that folder must be empty.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from machine import stretched

from referee.jail import gvisor

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.timeout(600)


def _mentioning(text: str) -> list[str]:
    """Live processes whose command line or environment holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            seen = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if text.encode() in seen:
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


_WITH_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL);"
    " os.execv(sys.argv[1], sys.argv[1:])"
)


@pytest.fixture
def base() -> Iterator[Path]:
    """The interrupted session's folder, right under /tmp (a socket's path must be short),
    open to the postgres user (the server runs as it when the tests run as root)."""
    folder = Path(tempfile.mkdtemp(prefix="ctrlc-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_ctrl_c_leaves_no_server_sandbox_or_folder_behind(base: Path) -> None:
    ready = base / "ready"
    tmp = base / "tmp"
    ready.mkdir()
    tmp.mkdir(mode=0o755)
    tmp.chmod(0o777 | 0o1000)  # a /tmp of its own: every user may make folders in it
    expected = {"postgres", "bubblewrap", "check-bot"} | (set() if gvisor.missing() else {"gvisor"})
    env = {
        **os.environ,
        "TMPDIR": str(tmp),
        "STICHELN_INTERRUPT_READY": str(ready),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [
            # Ctrl-C as a terminal's foreground job gets it: a suite started in the
            # background (`cmd &`, as CI runners and nohup do) inherits SIGINT ignored,
            # and Python then never raises KeyboardInterrupt; restore it for the session.
            sys.executable, "-c", _WITH_SIGINT,
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-n", "4", "--maxschedchunk", "1", "--basetemp", str(base / "basetemp"),
            "tests/interrupted_session.py",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the one a terminal's Ctrl-C reaches
    )  # fmt: skip
    try:
        deadline = time.monotonic() + stretched(120)
        while {p.name for p in ready.iterdir()} != expected:
            if proc.poll() is not None or time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                out = proc.communicate()[0]
                pytest.fail(f"under way: {sorted(p.name for p in ready.iterdir())}\n{out}")
            time.sleep(0.1)  # polling for the tests to be under way
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out = proc.communicate(timeout=stretched(120))[0]
        except subprocess.TimeoutExpired as late:
            left = _mentioning(str(base))
            pytest.fail(
                f"the interrupted session did not end; still running: {left}\n{late.output}"
            )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 2, out  # pytest's status for an interrupted session
    # A guardian may still be at work when pytest returns (it stops what a worker that
    # xdist killed left): wait for the machine to settle, a bounded while.
    deadline = time.monotonic() + stretched(15)
    while (left := _mentioning(str(base))) or list(tmp.iterdir()):
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)  # polling for the guardians to finish, not waiting out a race
    assert left == [], out
    assert sorted(p.name for p in tmp.iterdir()) == [], out
