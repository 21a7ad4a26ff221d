"""Hostile bots: every route a started bot could take to what its seat must not learn fails.

``tests/bots/hostile_bot.py`` plays legally and first tries each route of :data:`ROUTES`,
reporting in its log what it got. Each test plays real matches through the ``referee``
command with the referee's secrets in its environment, then reads the logs: every route
was tried and blocked, no secret appears anywhere the bot could print it, the match ended
normally for every seat, and no process is left. A run without the sandbox shows that the
routes are real (the same bot finds them open). A new attack joins by adding a route to
the bot and a line to :data:`ROUTES`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from bots.harness import BOTS_DIR, READ_BOTS, assert_no_processes, bot, new_marker, run

from referee.jail import gvisor
from referee.jail.sandbox import Sandbox
from referee.match.server import RefereeServer
from sticheln.v1 import bot_pb2

pytestmark = pytest.mark.timeout(240)

#: Every route the hostile bot tries, and what it would give a bot that got through.
ROUTES = {
    "own_environment": "the referee's admin token, database URL or password, or its gRPC "
    "tuning, inherited in the bot's environment",
    "list_other_pids": "other processes: the other seats, the referee",
    "other_environ": "another process's environment: the other seats' tokens, the referee's "
    "secrets",
    "other_cmdline": "another process's command line: the referee's, a database URL",
    "path:output": "the output folder (records, logs, exports)",
    "path:record": "a match record (its deal and seed)",
    "path:log": "another bot's log",
    "path:database": "the tournament database",
    "path:other_bot": "another bot's folder (its code and data)",
    "write_outside_tmp": "a file written where it outlives the process",
    "loopback_ports": "the referee's TCP port, or any other port on the loopback",
    "outside_network": "any address outside the machine",
    "other_bot": "another bot process (a listener or an abstract Unix socket it made)",
    "remember_between_instances": "what an earlier instance of the bot left behind (a "
    "duplicate deal's hands)",
    "inherited_descriptor": "a descriptor the referee was started with (a root-only file)",
    "keyring": "the kernel's key store, kept per uid: another seat's or an earlier replay's hands",
    "ptrace": "tracing a process (another seat's, were it visible)",
    "io_uring": "io_uring, a system-call interface the filter cannot see into",
    "userfaultfd": "userfaultfd, an exploit aid",
    "perf_event": "performance counters (side channels)",
    "new_namespace": "a user namespace of its own (capabilities over its own mounts)",
    "personality": "switching off its address-space randomisation",
    "vsock": "an AF_VSOCK socket (to the host of a virtual machine, past the netns)",
    "signal_others": "signals to any process but its own (kill -1)",
    "sysv_ipc": "a System V shared memory segment another instance made",
    "devices": "devices (/dev/kvm, /dev/kmsg, /dev/mem, /dev/fuse, ...)",
    "write_proc": "the kernel's settings under /proc/sys, /proc/sysrq-trigger",
    "terminal_injection": "typing into the referee's terminal (TIOCSTI)",
    "setuid_gain": "rights regained through a setuid program (no_new_privs off)",
    "shared_file_lock": "a lock on a file every sandbox reads: a message to another bot",
    "watch_files": "a watch (inotify) on files another bot reads",
    "page_cache": "whether another bot read a shared file's page (RWF_NOWAIT)",
    "page_cache_aio": "the same RWF_NOWAIT read inside an asynchronous-I/O request (io_submit), "
    "where the filter cannot see the flag",
    "page_cache_readahead": "a shared file's page loaded into the host's page cache at will "
    "(readahead): a bit for a later seat",
    "page_cache_advice": "a shared file's pages loaded or dropped at will (fadvise WILLNEED, "
    "DONTNEED)",
    "page_cache_mincore": "whether a mapped shared file's page is cached (mincore)",
    "i386_socketcall": "a system call through int 0x80 (the i386 socketcall: an AF_VSOCK "
    "socket, past the network namespace, where native socket() is refused)",
    "x32_call": "a system call through the x32 interface (numbers with bit 0x40000000)",
    "sysinfo": "the whole host's thread count, load and free memory (sysinfo): a counter one "
    "seat moves and another reads",
    "host_counters": "the host's counters in /proc (loadavg, stat, meminfo, uptime, vmstat, "
    "pressure, open files, ...): the same mailbox",
    "netlink_uevent": "the kernel's device events, sent to every network namespace of the "
    "host's user namespace (what happens on the host)",
    "folder_links": "links in the bot's own folder to host files (the database, a record)",
    "host_accounts": "the host's users, groups and host names (/etc/passwd, /etc/group, "
    "/etc/hosts)",
    "socket_folder": "another socket beside its own in /run/sticheln (another bot's), the "
    "host's /run, or room to leave one",
    "cgroup_files": "its control group's files (raise its own limits, leave its group) or "
    "where the group sits in the host's tree",
    "dev_shm": "a writable /dev/shm or /dev/mqueue besides its bounded /tmp",
    "fill_tmp": "a /tmp that takes more than its declared size of the host's memory",
    "core_dump": "a core dump handed to the host's core handler (its disk, its CPU)",
    "raise_priority": "a scheduling priority above the other seats' (nice below 0, a "
    "real-time class), where the host's limits would allow one",
    "statfs_host": "the host's free disk blocks under a bound path (statfs), which another "
    "seat's output moves (its log on the host's disk)",
    "access_time": "a shared file's access time, updated by a read: a mark another seat sees",
    "posix_mqueue": "a POSIX message queue another instance made",
    "page_cache_timing": "whether a page of a shared file is cached, by the time its read "
    "takes (a residual: see RESIDUAL)",
}

#: Routes open in every tier, with what remains of them: no system call to refuse, the
#: channel measured by benchmarks/covert.py (docs/security.md, "What was tried beyond the
#: reported routes"). Tried here so that the bot's log says what it saw.
RESIDUAL = {
    "page_cache_timing": "a read of a shared file's page is fast when another sandbox read "
    "it, under bubblewrap and under gVisor (whose gofer reads through the host's page cache): "
    "0-4 wrong bits of 64 from one seating to a later one",
}

#: Routes the gVisor tier answers from the Sentry, its own kernel, not the host's: the call
#: works, and what it reaches is the sandbox's alone (tests/test_gvisor.py shows it for the
#: page cache and file locks, whose answers cross sandboxes on a shared kernel).
SENTRY_OWN = {
    "ptrace": "the sandbox's own processes only",
    "io_uring": "the Sentry's io_uring, on its own files",
    "new_namespace": "a user namespace inside the Sentry",
    "shared_file_lock": "locks kept in the Sentry: the host's and other sandboxes' not seen",
    "watch_files": "inotify on the Sentry's view of its files",
    "page_cache_aio": "the Sentry's own page cache",
    "page_cache_advice": "the Sentry's own page cache",
    "page_cache_mincore": "the Sentry's own page cache",
    "i386_socketcall": "int 0x80 answered by the Sentry, which has no AF_VSOCK",
    "x32_call": "answered ENOSYS by the Sentry",
    "devices": "/dev/net/tun and /dev/fuse of the Sentry (no network but loopback)",
    "setuid_gain": "the Sentry's /proc shows no NoNewPrivs line; mounts are nosuid",
    "raise_priority": "the Sentry's priorities, not the host's scheduler",
    "sysinfo": "the Sentry's own processes (one), not the host's",
    "signal_others": "the sandbox's own processes only (the bot's children; it is pid 1)",
    "host_counters": "the Sentry's counters: its own memory use in meminfo, zeros elsewhere",
}

SECRETS = {
    "STICHELN_ADMIN_TOKEN": "admin-secret-5d1f",
    "PGPASSWORD": "pg-secret-9a7c",
    "DATABASE_URL": "postgresql://referee:db-secret-3b2e@127.0.0.1/sticheln",
    "GRPC_EXPERIMENTS": "-event_engine_listener",
    "GRPC_ENABLE_FORK_SUPPORT": "false",
}


@pytest.fixture
def marker() -> Iterator[str]:
    m = new_marker()
    yield m
    assert_no_processes(m, within=10)


@pytest.fixture
def world() -> Iterator[Path]:
    """A folder anyone may read: what protects its files from a bot is the sandbox alone."""
    path = Path(tempfile.mkdtemp(prefix="sticheln-hostile-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _targets(world: Path) -> dict[str, Path]:
    """Things a bot must not read, made readable for anyone (0644 in 0755 folders)."""
    out = world / "results"
    other = world / "other-bot"
    for folder in (out / "matches", out / "logs", other):
        folder.mkdir(parents=True)
        folder.chmod(0o755)
    files = {
        "record": out / "matches" / "earlier.jsonl",
        "log": out / "logs" / "earlier-seat1-other.log",
        "database": world / "tournament.db",
        "other_bot": other / "strategy.txt",
    }
    for path in files.values():
        path.write_text('{"seed": "1234", "token": "other-seat-token"}\n')
        path.chmod(0o644)
    return {"output": out, **{k: (v if k != "other_bot" else other) for k, v in files.items()}}


def _bot_file(
    world: Path,
    name: str,
    script: str,
    marker: str,
    env: dict[str, str],
    workdir: Path = BOTS_DIR,
) -> Path:
    table = bot(script, marker, name=name, env=env)
    path = world / f"{name}.toml"
    lines = [
        f"name = {json.dumps(table.name)}",
        f"command = {json.dumps(list(table.command))}",
        f"workdir = {json.dumps(str(workdir))}",
        "[env]",
        *(f"{k} = {json.dumps(v)}" for k, v in env.items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _hostile_folder(world: Path, targets: dict[str, Path]) -> Path:
    """The hostile bot's own folder, as its author would ship it: its code, and a link
    ``link-<label>`` to each host target (the database, a record, the output folder)."""
    folder = world / "hostile-bot"
    folder.mkdir()
    folder.chmod(0o755)
    for name in ("hostile_bot.py", "botlib.py"):
        shutil.copy(BOTS_DIR / name, folder / name)
        (folder / name).chmod(0o644)
    for label, target in targets.items():
        (folder / f"link-{label}").symlink_to(target)
    return folder


#: Hard limits a host may grant its processes (as ``docker run --ulimit`` or systemd's
#: ``LimitNICE=``/``LimitRTPRIO=`` would), given to the referee where this test may raise
#: them: what keeps a bot from raising its priority or leaving a core is the launcher's
#: own limits, not the host's.
GENEROUS_HOST = ("--nice=30", "--rtprio=20", "--core=unlimited")


@functools.cache
def _generous_host() -> tuple[str, ...]:
    """``prlimit`` options giving the referee each of :data:`GENEROUS_HOST` that this
    machine lets the test grant (raising a hard limit needs CAP_SYS_RESOURCE)."""
    if shutil.which("prlimit") is None:
        return ()
    return tuple(
        option
        for option in GENEROUS_HOST
        if subprocess.run(["prlimit", option, "--", "true"], capture_output=True).returncode == 0
    )


#: What a root-only file holds, open on a descriptor the referee is started with (as
#: ``referee match ... 7</root/secret`` would).
FILE_SECRET = "root-only-file-6c2d"


def _referee(
    *args: str, timeout: float = 180, world: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``referee ARGS`` with secrets in its environment and, given ``world``, a descriptor
    open on a file only the referee's user may read."""
    env = {**os.environ, **SECRETS}
    with contextlib.ExitStack() as held:
        fds: tuple[int, ...] = ()
        if world is not None:
            secret = world / "private" / "secret"
            secret.parent.mkdir(mode=0o700, exist_ok=True)
            secret.write_text(FILE_SECRET)
            secret.chmod(0o600)
            fd = os.open(secret, os.O_RDONLY)  # inheritable by the referee
            held.callback(os.close, fd)
            fds = (fd,)
        granted = _generous_host()
        prefix = ["prlimit", *granted, "--"] if granted else []
        return subprocess.run(
            [*prefix, sys.executable, "-m", "referee.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
            pass_fds=fds,
        )


def _routes(log: Path) -> dict[str, str]:
    """route name -> "blocked" or "OPEN", from one hostile bot's log."""
    found = {}
    for line in log.read_text(errors="replace").splitlines():
        m = re.match(r"ROUTE (\S+) (blocked|OPEN) ", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def _hostile_env(targets: dict[str, Path], ports: list[int]) -> dict[str, str]:
    return {
        "HOSTILE_PATHS": ":".join(f"{k}={v}" for k, v in targets.items()),
        "HOSTILE_PORTS": ":".join(map(str, ports)),
        # Its beginning only: the whole text in a log means it was read.
        "HOSTILE_SECRET": FILE_SECRET[:-4],
        "HOSTILE_TMP_MB": str(Sandbox().tmp_size_mb),
    }


def _uids(logs: list[Path]) -> list[int]:
    """The uid each hostile bot ran as (its ``UID`` line)."""
    found = []
    for log in logs:
        m = re.search(r"^UID (\d+)$", log.read_text(), re.MULTILINE)
        assert m, f"no UID line in {log.name}"
        found.append(int(m.group(1)))
    return found


def _match(
    world: Path, marker: str, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[Path], dict[str, Any]]:
    port = _free_port()
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        targets = _targets(world)
        hostile_env = {**_hostile_env(targets, [port, listener.getsockname()[1]]), **(env or {})}
        hostile_env["HOSTILE_FRESH_COPY"] = "1"  # its folder is copied below, read by no one
        folder = _hostile_folder(world, targets)
        hostile = _bot_file(world, "hostile", "hostile_bot.py", marker, hostile_env, folder)
        lowest = _bot_file(world, "lowest", "lowest_bot.py", marker, {})
        out = targets["output"]
        result = _referee(
            "match",
            "--bot",
            str(hostile),
            "--bot",
            str(hostile),
            "--bot",
            str(lowest),
            "--port",
            str(port),
            "--out",
            str(out),
            "--rules",
            "sticheln",
            # The hostile bot probes every route before it connects (seconds under load,
            # more in gVisor), once in the start check and once per seat.
            "--startup-ms",
            "60000",
            *READ_BOTS,
            *extra,
            world=world,
        )
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr
    logs = sorted((out / "logs").glob("*-hostile.log"))
    records = [p for p in (out / "matches").glob("*.jsonl") if p.name != "earlier.jsonl"]
    assert len(records) == 1
    lines = [json.loads(x) for x in records[0].read_text().splitlines()]
    return result, logs, {"lines": lines, "out": out}


def _assert_secrets_kept(folder: Path) -> None:
    for log in folder.rglob("*.log"):
        text = log.read_text(errors="replace")
        assert FILE_SECRET not in text, f"the referee's inherited descriptor reached {log.name}"
        for name, value in SECRETS.items():
            if name.startswith("GRPC_"):
                assert f"{name}=" not in text and f"'{name}'" not in text, (log, name)
            else:
                assert value not in text, f"{name} reached {log.name}"


#: The sandbox tiers every route is tried in: gvisor where runsc runs here (installed, a
#: root referee), and skipped with the reason otherwise.
TIERS = [
    "bubblewrap",
    pytest.param(
        "gvisor",
        marks=pytest.mark.skipif(bool(gvisor.missing()), reason=gvisor.missing() or "-"),
    ),
]


@pytest.mark.parametrize("tier", TIERS)
def test_every_route_is_blocked_and_the_match_ends_normally(
    world: Path, marker: str, tier: str
) -> None:
    result, logs, seen = _match(world, marker, "--sandbox", tier)
    assert f"sandbox: {tier}" in result.stderr
    assert len(logs) == 2
    for log in logs:
        routes = _routes(log)
        assert set(ROUTES) <= set(routes), f"routes not tried: {set(ROUTES) - set(routes)}"
        opened = {r for r, state in routes.items() if state == "OPEN"} - set(RESIDUAL)
        if tier == "gvisor":
            opened -= set(SENTRY_OWN)
        assert not opened, [x for x in log.read_text().splitlines() if " OPEN " in x]
        assert "ROUTES DONE" in log.read_text()
    lines = seen["lines"]
    header, end = lines[0], lines[-1]
    assert header["sandbox"] == tier
    assert end["type"] == "end" and end["reason"] == "completed"
    assert not [x for x in lines if x.get("type") == "fault"], "a seat faulted"
    _assert_secrets_kept(world)
    if os.geteuid() == 0:
        # Two seats, two uids of their own from the bots' range (not nobody's, not shared).
        first, last = Sandbox().uids
        uids = _uids(logs)
        assert len(set(uids)) == 2 and all(first <= u <= last for u in uids), uids
    for path in ("matches/earlier.jsonl", "logs/earlier-seat1-other.log"):
        assert (seen["out"] / path).exists()
    assert not list(world.rglob("hostile-was-here"))


def test_without_the_sandbox_the_same_routes_are_open(world: Path, marker: str) -> None:
    """The control: the routes are real, so that their being blocked above means something."""
    result, logs, seen = _match(world, marker, "--no-sandbox", env={"HOSTILE_NO_WRITE": "1"})
    assert "sandbox: none" in result.stderr
    assert seen["lines"][0]["sandbox"] == "none"
    opened: set[str] = set()
    for log in logs:
        routes = _routes(log)
        opened |= {r for r, state in routes.items() if state == "OPEN"}
        # Even unsandboxed, the environment is an allowlist and the descriptors are stdio.
        assert routes["own_environment"] == "blocked"
        assert routes["inherited_descriptor"] == "blocked"
    assert {"list_other_pids", "other_environ", "path:output", "path:record"} <= opened
    assert {"path:database", "path:other_bot", "loopback_ports", "other_bot"} <= opened, opened
    # Unconfined, a link in its folder is a host path, and its group is in the host's tree.
    unconfined = {"folder_links", "cgroup_files", "dev_shm", "host_accounts", "socket_folder"}
    assert unconfined <= opened, unconfined - opened
    # The kernel's own routes: open to an unconfined process of the referee's user.
    kernel = {"ptrace", "personality", "signal_others", "userfaultfd", "io_uring"}
    kernel |= {"shared_file_lock", "watch_files", "page_cache", "netlink_uevent"}
    kernel |= {"page_cache_aio", "page_cache_readahead", "page_cache_advice"}
    kernel |= {"page_cache_mincore", "i386_socketcall", "x32_call", "sysinfo", "host_counters"}
    kernel |= {"statfs_host"}
    if os.geteuid() == 0:
        kernel |= {"keyring", "new_namespace", "perf_event"}
    assert kernel <= opened, kernel - opened


@pytest.mark.parametrize("tier", TIERS)
def test_a_fresh_sandbox_for_every_instance_in_duplicate_mode(
    world: Path, marker: str, tier: str
) -> None:
    targets = _targets(world)
    hostile = _bot_file(world, "hostile", "hostile_bot.py", marker, _hostile_env(targets, []))
    lowest = _bot_file(world, "lowest", "lowest_bot.py", marker, {})
    highest = _bot_file(world, "highest", "highest_bot.py", marker, {})
    config = world / "duplicate.toml"
    config.write_text(
        '[tournament]\nname = "dup"\nseed = 3\nmode = "duplicate"\ntable_size = 3\n'
        f'matches_per_table = 3\nparallel = 1\nout = "{world / "dup"}"\n'
        '[rules]\npreset = "sticheln"\nrounds = 1\n[clock]\nstartup_ms = 60000\n'
        f'[sandbox]\nmode = "{tier}"\nread = ["{BOTS_DIR}"]\n'
        f'[[bots]]\nfile = "{hostile}"\n[[bots]]\nfile = "{lowest}"\n'
        f'[[bots]]\nfile = "{highest}"\n'
    )
    result = _referee("tournament", str(config), world=world)
    assert result.returncode == 0, result.stderr
    assert "3/3 matches finished" in result.stdout
    logs = sorted((world / "dup" / "logs").glob("*hostile*.log"))
    assert len(logs) == 3, "every replay of the deal starts the bot afresh"
    if os.geteuid() == 0:
        assert len(set(_uids(logs))) == 3, "no replay inherits an earlier one's uid"
    for log in logs:
        routes = _routes(log)
        assert routes.get("remember_between_instances") == "blocked", log.read_text()[-2000:]
        own = (set(SENTRY_OWN) if tier == "gvisor" else set()) | set(RESIDUAL)
        opened = {r for r, s in routes.items() if s == "OPEN"} - own
        assert not opened, [x for x in log.read_text().splitlines() if " OPEN " in x]
    _assert_secrets_kept(world)


def test_a_token_opens_its_seat_only_on_the_socket_it_was_given_to(tmp_path: Path) -> None:
    """Two bot processes' sockets: a token is refused on the other one and on the TCP port,
    and accepted on its own."""

    async def hello(target: str, token: str) -> tuple[grpc.StatusCode | None, str]:
        async with grpc.aio.insecure_channel(target) as channel:
            call = channel.stream_stream(
                "/sticheln.v1.Referee/Play",
                request_serializer=bot_pb2.BotMessage.SerializeToString,
                response_deserializer=bot_pb2.RefereeMessage.FromString,
            )()
            await call.write(
                bot_pb2.BotMessage(
                    hello=bot_pb2.Hello(bot_name="x", protocol_version=1, token=token)
                )
            )
            try:
                message = await call.read()
            except grpc.aio.AioRpcError as exc:
                return exc.code(), exc.details() or ""
            call.cancel()
            return None, message.WhichOneof("kind") or ""

    async def main() -> None:
        server = RefereeServer(sandbox=Sandbox())
        await server.start("127.0.0.1", 0)
        try:
            a = server.registry.open_seat("m", 0, "a")
            b = server.registry.open_seat("m", 1, "b")
            sock_a, sock_b = await server.open_bot_socket(), await server.open_bot_socket()
            a.origin, b.origin = sock_a.origin, sock_b.origin
            for target, token in (
                (f"unix:{sock_b.path}", a.token),
                (server.address, a.token),
                (f"unix:{sock_a.path}", b.token),
            ):
                code, details = await hello(target, token)
                assert code is grpc.StatusCode.UNAUTHENTICATED, (target, code, details)
            assert a.stream is None and b.stream is None
            assert await hello(f"unix:{sock_a.path}", a.token) == (None, "welcome")
            assert a.stream is not None
            a.stream.end()
            folders = [sock_a.folder, sock_b.folder]
            await sock_a.close()
            await sock_b.close()
            assert not any(f.exists() for f in folders), "a closed socket's folder is removed"
        finally:
            await server.stop(0)

    run(main())
