"""The gVisor tier: the same policy as bubblewrap's, on an application kernel of the bot's own.

The spec a policy becomes is checked as data; then real processes run under ``runsc``: the
Python, Node and C++ sample bots play a match, and a probe shows that the load average,
``sysinfo``, the page cache and file locks inside are the sandbox's own, where the same
probe under bubblewrap sees the host's. Tests that start ``runsc`` are skipped, with the
reason, where it cannot run (not installed, a referee not running as root).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import BOTS_DIR, run

from referee import jail
from referee.jail import gvisor
from referee.jail.bots import BotSpec, Limits
from referee.jail.sandbox import SOCKET_DIR, Sandbox, SandboxPolicy, resolve_mode, strongest_mode

REPO = Path(__file__).resolve().parent.parent
MISSING = gvisor.missing()
needs_runsc = pytest.mark.skipif(bool(MISSING), reason=MISSING or "-")

pytestmark = pytest.mark.timeout(240)


def _policy(tmp_path: Path) -> SandboxPolicy:
    folder = tmp_path / "bot"
    folder.mkdir()
    return SandboxPolicy(
        bwrap="bwrap",
        workdir=folder,
        read_only=(Path("/opt/python"), folder, folder / "data"),
        held=(folder,),
        system=(Path("/usr"), Path("/etc/ssl")),
        links=((Path("/bin"), "usr/bin"),),
        tmp_size_bytes=32 << 20,
        socket_dir=tmp_path / "sock",
        run_as=(1879048200, 1879048200),
        files=((Path("/etc/passwd"), b"root:x:0:0::/:/bin/false\n"),),
        tier="gvisor",
    )


def test_a_policy_becomes_one_oci_spec(tmp_path: Path) -> None:
    """The bubblewrap tier's view, as runsc takes it: the same read-only paths (a held one
    from its place in the bundle), a bounded private /tmp, the socket's folder, the bot's
    uid, no capabilities, the limits inside, and every namespace the sandbox's own."""
    policy = _policy(tmp_path)
    place = tmp_path / "bundle" / "held" / "0"
    spec = gvisor.oci_spec(
        policy,
        ["python3", "bot.py"],
        {"HOME": "/tmp"},
        Limits(memory_mb=512, cpu_seconds=9),
        {policy.workdir: place},
    )
    mounts = {m["destination"]: m for m in spec["mounts"]}
    for path in ("/usr", "/etc/ssl", "/opt/python", str(policy.workdir)):
        assert "ro" in mounts[path]["options"] and mounts[path]["type"] == "bind", path
    assert mounts[str(policy.workdir)]["source"] == str(place)
    assert str(policy.workdir / "data") not in mounts, "inside the folder's own bind"
    assert mounts[str(SOCKET_DIR)]["source"] == str(tmp_path / "sock")
    assert f"size={32 << 20}" in mounts["/tmp"]["options"]
    assert mounts["/proc"]["type"] == "proc"
    process = spec["process"]
    assert process["user"] == {"uid": 1879048200, "gid": 1879048200}
    assert process["noNewPrivileges"] is True and process["capabilities"] == {}
    assert process["env"] == ["HOME=/tmp"] and process["cwd"] == str(policy.workdir)
    limits = {r["type"]: (r["soft"], r["hard"]) for r in process["rlimits"]}
    assert limits["RLIMIT_AS"] == (512 << 20, 512 << 20)
    assert limits["RLIMIT_CPU"] == (9, 14)
    assert limits["RLIMIT_CORE"] == (0, 0) and limits["RLIMIT_NICE"] == (0, 0)
    assert limits["RLIMIT_NPROC"] == (256, 256), "the bot's processes, counted by the Sentry"
    # The cgroup holds runsc and the bot: its pids.max leaves room for runsc's own tasks.
    host = gvisor.host_limits(Limits(processes=48, memory_mb=512))
    assert host.processes > 48 * 8 + 115 and host.memory_mb == 512
    assert spec["root"]["readonly"] is True
    assert {n["type"] for n in spec["linux"]["namespaces"]} >= {"pid", "network", "ipc", "uts"}
    assert "--network=none" in gvisor.FLAGS and "--ignore-cgroups" in gvisor.FLAGS
    # statfs answers from the host's file system even in the Sentry: refused there too.
    assert "--oci-seccomp" in gvisor.FLAGS
    (rule,) = spec["linux"]["seccomp"]["syscalls"]
    assert set(rule["names"]) == {"statfs", "fstatfs"} and rule["action"] == "SCMP_ACT_ERRNO"


def test_a_newer_runsc_gets_its_flags_and_an_older_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--directfs=false goes to a runsc that takes it (20240729) and not to one that
    refuses it as unknown (20221219), found once per program."""
    monkeypatch.setattr(gvisor, "_FLAGS", {})
    calls = tmp_path / "calls"
    for name, status in (("newer", 0), ("older", 2)):
        program = tmp_path / name
        program.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit {status}\n')
        program.chmod(0o755)
    newer, older = str(tmp_path / "newer"), str(tmp_path / "older")
    assert gvisor.flags(newer) == (*gvisor.FLAGS, "--directfs=false")
    assert gvisor.flags(older) == gvisor.FLAGS
    assert gvisor.flags(newer) == (*gvisor.FLAGS, "--directfs=false")
    assert calls.read_text().splitlines() == ["--directfs=false --version"] * 2
    bundle = gvisor.Bundle(tmp_path / "b", "sticheln-b", ())
    argv = gvisor.runsc_command(newer, bundle)
    assert argv[argv.index("run") - 1] == "--directfs=false" and argv[-1] == "sticheln-b"
    assert "--directfs=false" not in gvisor.runsc_command(older, bundle)


def test_strongest_is_gvisor_where_runsc_runs_and_bubblewrap_elsewhere() -> None:
    mode, why = resolve_mode("strongest")
    assert mode == strongest_mode() == ("bubblewrap" if MISSING else "gvisor")
    assert why == MISSING
    sandbox = Sandbox("strongest")
    assert sandbox.mode == mode
    line = sandbox.describe()
    assert line.startswith(f"sandbox: {mode} ") and "\n" not in line
    if MISSING:
        assert "gvisor" in line and MISSING in line, "one line says which tier runs"
    assert resolve_mode("bubblewrap") == ("bubblewrap", "")
    # The runs that replay deals or run strangers' uploads default to it; the rest do not.
    assert [jail.tier_for(r) for r in ("duplicate", "league")] == ["strongest"] * 2
    # A comparison is one author's versions: the cheaper tier (the page cache is held).
    assert jail.tier_for("round_robin") == jail.tier_for("match") == "bubblewrap"
    assert jail.tier_for("compare") == "bubblewrap"
    assert jail.strongest_mode() == mode


def test_a_missing_runsc_is_said_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gvisor, "_CHECKED", {})
    why = gvisor.missing("/nonexistent/runsc")
    assert "apt-get install runsc" in why and "\n" not in why
    monkeypatch.setattr(gvisor, "_CHECKED", {"runsc": why})
    sandbox = Sandbox("strongest")
    assert sandbox.mode == "bubblewrap"
    assert "apt-get install runsc" in sandbox.describe()


@needs_runsc
def test_the_sample_bots_play_a_match_under_gvisor(tmp_path: Path) -> None:
    """Python, Node and C++ sample bots, each in its own runsc sandbox, play a real match."""
    out = tmp_path / "out"
    bots = [REPO / "sample_bots" / f"{n}.toml" for n in ("heuristic", "node", "cpp")]
    done = subprocess.run(
        [sys.executable, "-m", "referee.cli", "match", "--sandbox", "gvisor", "--seed", "5"]
        + [f"--bot={b}" for b in bots]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "sandbox: gvisor" in done.stderr
    (record,) = (out / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert lines[0]["sandbox"] == "gvisor"
    assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "completed"
    assert not [x for x in lines if x.get("type") == "fault"], "a seat faulted"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A file both tiers' sandboxes read (inside the test bots' folder), cached in the
    host's page cache and locked by the host for the test's length."""
    path = BOTS_DIR / "kernel_probe.py"
    fd = os.open(path, os.O_RDONLY)
    try:
        os.read(fd, 1 << 16)  # its pages in the host's cache
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        os.close(fd)


def _probe(tier: str, shared: Path, log: Path) -> dict[str, object]:
    """The kernel probe's findings, run in ``tier`` while the host has 300 more threads
    than usual (sysinfo's process count and the load average would show them)."""
    sandbox = Sandbox(tier)
    spec = BotSpec(
        name="probe",
        command=(sys.executable, "kernel_probe.py", str(shared)),
        workdir=BOTS_DIR,
    )
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(300)]
    for thread in threads:
        thread.start()

    async def main() -> None:
        user = sandbox.lease_user() if sandbox.enabled else None
        try:
            policy = (
                sandbox.policy(BOTS_DIR, (), None, user.ids if user else None)
                if sandbox.enabled
                else None
            )
            process = await jail.start(spec, "unix:/nowhere", "-", log, policy=policy)
            await process.proc.wait()
            await process.stop()
        finally:
            if user is not None:
                user.release()

    try:
        run(main())
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    text = log.read_text()
    found = [line for line in text.splitlines() if line.startswith("{")]
    assert found, text
    return dict(json.loads(found[-1]))


@needs_runsc
def test_inside_gvisor_the_counters_the_page_cache_and_locks_are_its_own(
    tmp_path: Path, shared: Path
) -> None:
    """Unconfined, the probe sees the host: its process count (300 threads more), a page
    the host cached, the host's lock on a file it reads (bubblewrap's filter refuses the
    calls that ask; the kernel behind it is still the host's). Under gVisor it sees its
    own kernel: the load average is zero, a handful of processes, the host's page cache and
    lock are not there."""
    host = _probe("none", shared, tmp_path / "none.log")
    assert host["procs"] is not None and int(str(host["procs"])) > 300
    assert host["nowait"] == "cached" and host["lock"] == "held elsewhere"
    own = _probe("gvisor", shared, tmp_path / "gvisor.log")
    assert own["loadavg"] == ["0.00", "0.00", "0.00"]
    assert own["procs"] is not None and int(str(own["procs"])) < 20
    assert own["nowait"] != "cached", "the host's page cache answered"
    assert own["lock"] == "taken", "the host's lock reached the sandbox"


def test_without_root_or_runsc_the_tier_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from referee.jail.sandbox import SandboxUnavailable

    monkeypatch.setattr(gvisor, "_CHECKED", {"runsc": "gVisor's runsc is not installed"})
    with pytest.raises(SandboxUnavailable) as caught:
        Sandbox("gvisor").check()
    assert "\n" not in str(caught.value) and "not installed" in str(caught.value)
    assert shutil.which("true")


@needs_runsc
def test_a_program_reached_by_a_link_under_tmp_runs(tmp_path: Path) -> None:
    """A checkout under /tmp: the bot's interpreter is its environment's ``bin/python3``,
    a link there. The sandbox's private /tmp covers the root's folder of that name, so a
    link made in the root would be hidden ("failed to load"); its folder is bound over the
    tmpfs instead, and the program it names runs."""
    assert Path("/tmp") in tmp_path.parents, "the test's folder is under /tmp"
    link = tmp_path / "checkout" / ".venv" / "bin" / "python3"
    sandbox = Sandbox("gvisor")
    user = sandbox.lease_user()
    log = tmp_path / "bot.log"
    try:
        policy = sandbox.policy(BOTS_DIR, (), None, user.ids)
        target = os.path.realpath(sys.executable)
        policy = dataclasses.replace(policy, links=(*policy.links, (link, target)))
        spec = BotSpec(
            name="linked",
            command=(str(link), "-c", "import sys; print('ran', sys.executable)"),
            workdir=BOTS_DIR,
        )

        async def main() -> int:
            process = await jail.start(spec, "unix:/nowhere", "-", log, policy=policy)
            code = await process.proc.wait()
            await process.stop()
            return code

        code = run(main())
    finally:
        user.release()
    text = log.read_text()
    assert code == 0 and f"ran {link}" in text, text
