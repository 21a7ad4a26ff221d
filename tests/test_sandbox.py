"""The sandbox policy and its one ``bwrap`` command line; the bot environment allowlist;
the refusal where no sandbox can be made; the escape hatch; no orphans after a kill -9."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from bots.harness import (
    BOTS_DIR,
    READ_BOTS,
    assert_no_processes,
    cancel_twice,
    collect_reports,
    new_marker,
    processes_with,
    run,
)

from referee import jail
from referee.config.bots import bot_from_table
from referee.jail.bots import BotConfigError, BotSpec
from referee.jail.process import BotProcess
from referee.jail.sandbox import (
    SOCKET_DIR,
    Sandbox,
    SandboxPolicy,
    SandboxUnavailable,
    bot_environment,
    bwrap_command,
    bwrap_descriptors,
    unreadable,
)
from referee.league.config import league_from_table
from referee.match.pool import await_handshake, start_bot
from referee.match.server import RefereeServer
from referee.tournament.config import ConfigError, config_from_table

ROOT = Path(__file__).resolve().parent.parent


def _policy(**changes: object) -> SandboxPolicy:
    base: dict[str, object] = {
        "bwrap": "/usr/bin/bwrap",
        "workdir": Path("/srv/bots/mine"),
        "read_only": (
            Path("/srv/bots/mine"),
            Path("/srv/bots/mine/data"),
            Path("/opt/py"),
            Path("/tmp/bots/theirs"),
        ),
        "system": (Path("/usr"), Path("/etc/passwd")),
        "links": ((Path("/lib"), "usr/lib"),),
        "tmp_size_bytes": 1 << 20,
        "socket_dir": Path("/tmp/referee-private/7"),
        "run_as": None,
        "setpriv": "/usr/bin/setpriv",
        "user_namespace": True,
    }
    base.update(changes)
    return SandboxPolicy(**base)  # type: ignore[arg-type]


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_the_policy_becomes_one_bwrap_command() -> None:
    argv = bwrap_command(_policy(), ["python3", "bot.py"])
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-3:] == ["--", "python3", "bot.py"]
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"):
        assert flag in argv
    assert {"--unshare-user", "--die-with-parent", "--new-session"} <= set(argv)
    assert "--unshare-cgroup-try" in argv
    # A private, size-limited, world-writable /tmp.
    i = argv.index("--tmpfs")
    assert argv[i + 1] == "/tmp" and argv[i - 2 : i] == ["--size", str(1 << 20)]
    assert argv[i - 4 : i - 2] == ["--perms", "1777"]
    # Read-only binds at the same place; a path inside another bound one is not bound twice.
    assert _pairs(argv, "--ro-bind") == [
        ("/opt/py", "/opt/py"),
        ("/srv/bots/mine", "/srv/bots/mine"),
        ("/tmp/bots/theirs", "/tmp/bots/theirs"),  # into the private /tmp, read-only
        ("/tmp/referee-private/7", str(SOCKET_DIR)),
    ]
    assert ("/etc/passwd", "/etc/passwd") in _pairs(argv, "--ro-bind-try")
    assert ("usr/lib", "/lib") in _pairs(argv, "--symlink")
    # Missing parents of mount points are made (0755) before anything is bound into them.
    dirs = [argv[i + 1] for i, a in enumerate(argv) if a == "--dir"]
    assert {"/etc", "/srv", "/srv/bots", "/opt", "/run", "/tmp/bots"} <= set(dirs)
    assert "/tmp" not in dirs
    assert argv.index("--tmpfs") < argv.index("/tmp/bots"), "made in the private /tmp"
    first_bind = min(i for i, a in enumerate(argv) if a in ("--ro-bind", "--ro-bind-try"))
    assert max(i for i, a in enumerate(argv) if a == "--dir") < first_bind
    assert argv[argv.index("--chdir") + 1] == "/srv/bots/mine"
    # Nothing writable is bound: only /tmp, a tmpfs, is.
    assert "--bind" not in argv and "--bind-try" not in argv
    assert "setpriv" not in " ".join(argv)


def test_as_root_the_bot_is_dropped_to_an_unprivileged_user() -> None:
    argv = bwrap_command(_policy(run_as=(65534, 65534), user_namespace=False), ["node", "bot.js"])
    assert "--unshare-user" not in argv
    tail = argv[argv.index("--cap-add") :]
    assert tail == [
        "--cap-add",
        "CAP_SETUID",
        "--cap-add",
        "CAP_SETGID",
        "--",
        "/usr/bin/setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--no-new-privs",
        "--",
        "node",
        "bot.js",
    ]


def test_masked_proc_files_are_covered_after_proc_is_mounted() -> None:
    argv = bwrap_command(_policy(masked=(Path("/proc/keys"),)), ["true"])
    i = argv.index("/proc/keys")
    assert argv[i - 2 : i] == ["--ro-bind", "/dev/null"]
    assert argv.index("--proc") < i


def test_the_network_is_shared_only_when_the_policy_says_so() -> None:
    assert "--unshare-net" not in bwrap_command(_policy(network=True), ["true"])


def test_the_default_policy_binds_only_what_a_bot_needs(tmp_path: Path) -> None:
    sandbox = Sandbox()
    extra = tmp_path / "runtime"
    extra.mkdir()
    user = sandbox.lease_user()
    policy = sandbox.policy(BOTS_DIR, [extra], tmp_path / "sock", user.ids if user else None)
    if user is not None:
        user.release()
    assert policy.seccomp, "every sandboxed bot's system calls are filtered"
    assert Path("/proc/keys") in policy.masked, "the machine's key list is masked"
    assert BOTS_DIR in policy.read_only and extra in policy.read_only
    assert Path(sys.base_prefix) in policy.read_only
    assert policy.socket_dir == tmp_path / "sock"
    etc = [p for p in policy.system if p.parts[1] == "etc"]
    assert etc and Path("/etc") not in policy.system, "never /etc wholesale"
    assert {p.name for p in etc} >= {"ld.so.cache", "ssl"}
    # Users, groups and host names are the sandbox's own: root, nobody, the bot's uid.
    assert not {"passwd", "group", "hosts"} & {p.name for p in etc}
    made = dict(policy.files)
    assert {p for p in made if p.parts[1] == "etc"} == {
        *(Path("/etc/passwd"), Path("/etc/group"), Path("/etc/hosts"))
    }
    # The host's counters are fixed figures of the sandbox's own, or masked.
    assert {p for p in made if p.parts[1] == "proc"} == {
        *(Path("/proc/stat"), Path("/proc/meminfo"), Path("/proc/loadavg"), Path("/proc/uptime"))
    }
    assert Path("/proc/sys/fs/file-nr") in policy.masked and Path("/proc/vmstat") in policy.masked
    uid = policy.run_as[0] if policy.run_as else os.getuid()
    names = [line.split(":")[0] for line in made[Path("/etc/passwd")].decode().splitlines()]
    assert names == (["root", "nobody"] if uid in (0, 65534) else ["root", "bot", "nobody"])
    assert f":{uid}:" in made[Path("/etc/passwd")].decode()
    # Not the project's results, the tests or anything beside the bot's folder.
    bound = [str(p) for p in policy.read_only]
    assert not any(p in (str(ROOT), str(ROOT / "tests"), str(ROOT / "results")) for p in bound)
    assert (policy.run_as is not None) == (os.geteuid() == 0)


def test_the_environment_is_an_allowlist() -> None:
    referee_env = {
        "PATH": "/secret/bin:/usr/bin",
        "HOME": "/root",
        "LANG": "de_DE.UTF-8",
        "LC_TIME": "C",
        "TZ": "Europe/Berlin",
        "STICHELN_ADMIN_TOKEN": "admin",
        "PGPASSWORD": "pw",
        "DATABASE_URL": "postgresql://u:pw@h/db",
        "GRPC_EXPERIMENTS": "-event_engine_listener",
        "GRPC_ENABLE_FORK_SUPPORT": "false",
        "GRPC_TRACE": "all",
        "AWS_SECRET_ACCESS_KEY": "x",
    }
    env = bot_environment(
        {"MY_OPTION": "1", "STICHELN_TOKEN": "forged"},
        referee_env,
        home="/tmp",
        referee={"STICHELN_REFEREE": "unix:/run/sticheln/referee.sock", "STICHELN_TOKEN": "t"},
        interpreter_bin="/venv/bin",
    )
    assert env == {
        "PATH": "/venv/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "PYTHONUNBUFFERED": "1",
        "LANG": "de_DE.UTF-8",
        "LC_TIME": "C",
        "TZ": "Europe/Berlin",
        "MY_OPTION": "1",
        "STICHELN_REFEREE": "unix:/run/sticheln/referee.sock",
        "STICHELN_TOKEN": "t",
    }


def test_a_missing_bwrap_is_refused_in_one_line() -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        Sandbox(bwrap="/nonexistent/bwrap").check()
    text = str(caught.value)
    assert "\n" not in text
    assert "apt-get install bubblewrap" in text and "--no-sandbox" in text
    assert 'mode = "none"' in text


def test_an_unknown_sandbox_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="allowed: bubblewrap, gvisor, none, strongest"):
        Sandbox("docker")


def _tournament(sandbox: object) -> dict[str, object]:
    return {
        "tournament": {"name": "t"},
        "sandbox": sandbox,
        "bots": [
            {"name": n, "command": ["python3", "lowest_bot.py"], "workdir": str(BOTS_DIR)}
            for n in "abc"
        ],
    }


@pytest.mark.parametrize(
    ("sandbox", "words"),
    [
        (
            {"mode": "docker"},
            "[sandbox] mode = 'docker' is not allowed; allowed: 'bubblewrap', 'gvisor', 'none', 'strongest'",
        ),
        ({"mode": "none", "tmp": 1}, "[sandbox] has unknown key 'tmp'; allowed: mode"),
        ("none", "[sandbox] must be a table"),
    ],
)
def test_a_bad_sandbox_table_is_a_one_line_error(sandbox: object, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_table(_tournament(sandbox), Path("."), Path("t.toml"))
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_the_tournament_file_chooses_the_sandbox() -> None:
    assert config_from_table(_tournament({}), Path("."), Path("t.toml")).sandbox == "bubblewrap"
    # A duplicate tournament's seatings replay one deal: the strongest tier by default.
    table = {**_tournament({}), "tournament": {"name": "t", "mode": "duplicate", "table_size": 3}}
    assert config_from_table(table, Path("."), Path("t.toml")).sandbox == "strongest"
    none = config_from_table(_tournament({"mode": "none"}), Path("."), Path("t.toml"))
    assert none.sandbox == "none"


def test_a_bot_file_declares_more_read_only_paths(tmp_path: Path) -> None:
    (tmp_path / "jdk").mkdir()
    spec = bot_from_table(
        {"name": "j", "command": "java Bot", "sandbox": {"read": ["jdk"]}}, base=tmp_path
    )
    assert spec.read == (tmp_path / "jdk",)
    for table, words in (
        ({"read": ["missing"]}, "does not exist"),
        ({"read": "jdk"}, r"\[sandbox\] read = 'jdk' is not allowed; allowed: a list of paths"),
        ({"write": ["jdk"]}, r"\[sandbox\] has unknown key 'write'; allowed: read"),
    ):
        with pytest.raises(BotConfigError, match=words):
            bot_from_table({"name": "j", "command": "java Bot", "sandbox": table}, base=tmp_path)


def _bot_file(folder: Path, name: str, marker: str, env: dict[str, str] | None = None) -> Path:
    path = folder / f"{name}.toml"
    lines = [
        f'name = "{name}"',
        f"command = {json.dumps([sys.executable, 'lowest_bot.py', f'--marker={marker}'])}",
        f"workdir = {json.dumps(str(BOTS_DIR))}",
        "[env]",
        *(f"{k} = {json.dumps(v)}" for k, v in (env or {}).items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_referee_refuses_to_start_bots_without_bubblewrap(tmp_path: Path) -> None:
    marker = new_marker()
    bots = [_bot_file(tmp_path, n, marker) for n in ("a", "b", "c")]
    env = {**os.environ, "PATH": str(tmp_path / "empty")}  # no bwrap on it
    args = [sys.executable, "-m", "referee.cli", "match", "--out", str(tmp_path / "out")]
    args += READ_BOTS
    for b in bots:
        args += ["--bot", str(b)]
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "bubblewrap" in lines[0] and "--no-sandbox" in lines[0]
    assert not (tmp_path / "out").exists(), "no match was started"
    assert not processes_with(marker)


def test_killing_the_referee_leaves_no_sandboxed_bot(tmp_path: Path) -> None:
    marker = new_marker()
    bots = [_bot_file(tmp_path, n, marker, {"SLEEP_MS": "20"}) for n in ("a", "b", "c")]
    out = tmp_path / "out"
    args = [sys.executable, "-m", "referee.cli", "match", "--out", str(out), *READ_BOTS]
    for b in bots:
        args += ["--bot", str(b)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        playing = False
        while not playing and time.monotonic() < deadline and proc.poll() is None:
            records = list((out / "matches").glob("*.jsonl")) if (out / "matches").exists() else []
            playing = any('"type":"play"' in r.read_text() for r in records)
            time.sleep(0.02)
        assert playing, "the match never started playing"
        assert len(processes_with(marker, bots_only=True)) == 3
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        # bwrap's --die-with-parent and the launcher's PR_SET_PDEATHSIG end every sandbox.
        assert_no_processes(marker, within=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_tmpdir_too_deep_for_a_socket_path_puts_the_sockets_in_tmp(short_tmp: Path) -> None:
    # A Unix socket's path has at most 107 bytes: in this TMPDIR a bot's socket would have
    # more. The referee makes its socket folders in /tmp instead, and the match plays.
    deep = short_tmp / ("d" * 70)
    deep.mkdir()
    assert len(str(deep)) + len("/sticheln-sockets-12345678/0123abcd/referee.sock") > 107
    marker = new_marker()
    bots = [_bot_file(short_tmp, n, marker) for n in ("a", "b", "c")]
    out = short_tmp / "out"
    args = [sys.executable, "-m", "referee.cli", "match", "--out", str(out), *READ_BOTS]
    args += ["--rules", "sticheln", *(x for b in bots for x in ("--bot", str(b)))]
    env = {**os.environ, "TMPDIR": str(deep)}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    (record,) = (out / "matches").glob("*.jsonl")
    assert '"type":"end"' in record.read_text()
    assert not list(deep.iterdir()), "nothing is made in the too-deep TMPDIR"
    # The rule that keeps bots out of the socket folders names the folder they are in.
    env_tmp = tempfile.tempdir
    try:
        tempfile.tempdir = str(deep)
        assert jail.policy.socket_parent() == Path("/tmp")
        tempfile.tempdir = str(short_tmp)
        assert jail.policy.socket_parent() == short_tmp.resolve()
    finally:
        tempfile.tempdir = env_tmp


def test_a_tmpdir_just_short_enough_for_a_socket_path_keeps_the_sockets(
    short_tmp: Path,
) -> None:
    # The deepest TMPDIR the referee keeps its sockets in: a bot's socket there has the
    # longest path a Unix socket may have, and it binds.
    room = jail.policy.SOCKET_PATH_MAX - jail.policy._SOCKET_TAIL
    edge = short_tmp / ("e" * (room - len(str(short_tmp.resolve())) - 1))
    edge.mkdir()
    assert len(str(edge.resolve())) == room

    async def bind() -> int:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        try:
            made = await server.open_bot_socket()
            await made.close()
            return len(str(made.path))
        finally:
            await server.stop(0)

    env_tmp = tempfile.tempdir
    try:
        tempfile.tempdir = str(edge)
        assert jail.policy.socket_parent() == edge.resolve()
        assert asyncio.run(bind()) == jail.policy.SOCKET_PATH_MAX
    finally:
        tempfile.tempdir = env_tmp


def test_a_socket_that_cannot_be_bound_is_an_oserror_naming_it(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a bot's start reports in one line ("cannot start it: …"), not gRPC's traceback.
    import referee.match.server as server_module

    deep = short_tmp / ("d" * 100)
    deep.mkdir()
    monkeypatch.setattr(server_module, "socket_parent", lambda: deep)

    async def bind() -> str:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        try:
            with pytest.raises(OSError) as caught:
                await server.open_bot_socket()
            return str(caught.value)
        finally:
            await server.stop(0)

    message = asyncio.run(bind())
    assert message.startswith(f"cannot listen on the bot's socket {deep}/"), message


def test_a_bot_sockets_folder_does_not_count_the_bots_started() -> None:
    # A sandboxed bot sees where its socket was bound from (/proc/self/mountinfo): a
    # folder numbered 1, 2, 3... told it how many bot processes the referee had started.
    async def names() -> list[str]:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        try:
            made = [await server.open_bot_socket() for _ in range(3)]
            for socket in made:
                await socket.close()
            return [socket.folder.name for socket in made]
        finally:
            await server.stop(0)

    found = asyncio.run(names())
    assert len(set(found)) == 3
    assert all(re.fullmatch(r"[0-9a-f]{8}", name) for name in found), found


def test_a_bot_socket_cancelled_as_it_opens_is_closed_and_removed() -> None:
    # SIGINT just as a bot starts: gRPC's start cut half-way once left a socket whose stop
    # raised InvalidStateError in place of the cancellation.
    async def sweep() -> int:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        cut = 0
        try:
            for steps in range(12):
                finished, made = await cancel_twice(server.open_bot_socket(), steps)
                if made is not None:
                    await made.close()
                elif not finished:
                    cut += steps > 0  # at 0 it had not begun
                root = server._socket_root  # made with the first socket
                assert root is None or list(root.iterdir()) == []
        finally:
            await server.stop(0)
        return cut

    assert asyncio.run(sweep()) >= 2  # the sweep cut at least two opens half-way


#: A bot that leaves the work to a child process and waits for it (as a shell script or
#: a build tool's wrapper does); neither ever connects.
CHILD = "import time; time.sleep(600)"
FORKING_BOT = (
    f"import subprocess, sys; subprocess.run([sys.executable, '-c', {CHILD!r}, sys.argv[1]])"
)


@pytest.mark.parametrize("sandboxed", [False, True], ids=["no-sandbox", "sandbox"])
def test_killing_the_referee_also_kills_what_its_bots_started(
    tmp_path: Path, short_tmp: Path, sandboxed: bool
) -> None:
    """The launcher's death signal reaches only the process it became; the watchdog
    (referee/jail/watchdog.py) kills each bot's whole process group, and removes the
    referee's private socket folder."""
    marker = new_marker()
    args = [sys.executable, "-m", "referee.cli", "match", "--out", str(tmp_path / "out")]
    args += ["--startup-ms=60000", *([] if sandboxed else ["--no-sandbox"])]
    (tmp_path / "bots").mkdir()
    for name in ("a", "b", "c"):
        # In a folder of its own: a bot's folder may not hold the output folder.
        path = tmp_path / "bots" / f"{name}.toml"
        command = [sys.executable, "-c", FORKING_BOT, marker]
        path.write_text(f'name = "{name}"\ncommand = {json.dumps(command)}\n')
        args += ["--bot", str(path)]
    tmp = short_tmp  # where the referee makes its private socket folders
    env = {**os.environ, "TMPDIR": str(tmp)}
    err = tmp_path / "stderr.txt"
    with err.open("wb") as sink:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=sink, env=env)
    try:
        deadline = time.monotonic() + 60

        def children() -> list[int]:
            return [p for p in processes_with(marker, bots_only=True) if _is_child(p)]

        while len(children()) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)  # polling /proc for the bots' children, not waiting out a race
        assert len(children()) == 3, (
            f"the bots' children never started (referee status {proc.poll()}): "
            f"{err.read_text()[-2000:]}"
        )
        assert bool(list(tmp.glob("sticheln-sockets-*"))) == sandboxed
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert_no_processes(marker, within=10)
        deadline = time.monotonic() + 10
        while list(tmp.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.02)  # polling for the watchdog's clean-up, not waiting out a race
        assert not list(tmp.iterdir()), "the referee's socket folder was left behind"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def _is_child(pid: int) -> bool:
    """The process runs the bot's child program (its command line holds the sleep)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[2] == CHILD.encode()
    except (OSError, IndexError):
        return False


CXX_LAUNCHER = r"""
#include <iostream>
#include <string>
#include <unistd.h>

// A compiled bot's first steps: it runs from its folder, linking libstdc++ from /usr/lib,
// then becomes the Python test bot (a folder its bot file declares readable).
int main(int argc, char** argv) {
    std::string script = std::string(BOTS) + "/lowest_bot.py";
    std::cout << "compiled bot started" << std::endl;
    execlp("python3", "python3", script.c_str(), argc > 1 ? argv[1] : "", (char*)nullptr);
    std::cout << "exec failed" << std::endl;
    return 127;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_a_compiled_bot_in_its_folder_plays_in_the_sandbox() -> None:
    marker = new_marker()
    folder = Path(tempfile.mkdtemp(prefix="sticheln-compiled-"))
    try:
        folder.chmod(0o755)  # as root the bot runs as nobody: its folder must be readable
        (folder / "build").mkdir(mode=0o755)
        source = folder / "bot.cpp"
        source.write_text(CXX_LAUNCHER)
        subprocess.run(
            [
                "g++",
                "-O0",
                f'-DBOTS="{BOTS_DIR}"',
                "-o",
                str(folder / "build" / "bot"),
                str(source),
            ],
            check=True,
            timeout=120,
        )
        bot_file = folder / "compiled.toml"
        bot_file.write_text(
            f'name = "compiled"\ncommand = ["build/bot", "--marker={marker}"]\n'
            # It starts Python: its runtime (its own libraries are read from the binary).
            'runtime = "python3"\n'
            f"[sandbox]\nread = [{json.dumps(str(BOTS_DIR))}]\n"
        )
        lowest = _bot_file(folder, "lowest", marker)
        out = Path(f"{folder}-out")  # beside the bot's folder: never inside what a bot reads
        result = subprocess.run(
            [
                *(sys.executable, "-m", "referee.cli", "match", "--out", str(out), *READ_BOTS),
                *("--bot", str(bot_file), "--bot", str(lowest), "--bot", str(lowest)),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        (record,) = (out / "matches").glob("*.jsonl")
        lines = [json.loads(x) for x in record.read_text().splitlines()]
        assert lines[0]["sandbox"] == "bubblewrap"
        (log,) = (out / "logs").glob("*compiled.log")
        assert not [x for x in lines if x["type"] == "fault"], log.read_text()
        assert "compiled bot started" in log.read_text()
        assert_no_processes(marker)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(f"{folder}-out", ignore_errors=True)


def test_a_sandboxed_bot_is_sent_sigterm_before_it_is_killed(tmp_path: Path) -> None:
    """bubblewrap ends its sandbox at once on a signal of its own: the SIGTERM goes to the
    bot's processes inside, which get their grace period."""
    marker = new_marker()
    spec = bot_from_table(
        {
            "name": "ending",
            "command": [sys.executable, "ending_bot.py", f"--marker={marker}"],
            "workdir": str(BOTS_DIR),
            "env": {"ENDINGS": str(tmp_path / "endings")},
        }
    )

    async def main() -> BotProcess:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        try:
            slot = server.registry.open_seat("m", 0, "ending")
            process = await start_bot(server, spec, [slot], tmp_path / "ending.log")
            assert process.sandboxed
            assert await await_handshake(slot, process, 30) == ""
            await process.stop(grace=10)
            return process
        finally:
            await server.stop(0)

    process = run(main())
    collect_reports(tmp_path)
    notes = [line.split()[2] for line in (tmp_path / "endings").read_text().splitlines()]
    assert notes == ["sigterm"]
    # It exited by itself with 143 (128 + SIGTERM), which bubblewrap passes on: from outside
    # the sandbox that reads as the signal's end.
    assert process.returncode == 143
    assert process.describe_exit() == "killed by SIGTERM"
    assert_no_processes(marker)


def test_a_league_file_chooses_the_sandbox(tmp_path: Path) -> None:
    def league(sandbox: object) -> str:
        config = league_from_table(
            {"league": {"name": "l", "seed": 1}, "sandbox": sandbox},
            tmp_path,
            tmp_path / "league.toml",
            {"STICHELN_ADMIN_TOKEN": "x" * 32},
        )
        return config.sandbox

    assert league({}) == "strongest"
    assert league({"mode": "none"}) == "none"
    with pytest.raises(ConfigError, match=r"\[sandbox\] mode = 'off' is not allowed"):
        league({"mode": "off"})


#: Run in the sandbox: what a runtime learns of the machine's CPUs, memory and activity.
COUNTERS = """
import json, os
def text(name):
    try:
        with open("/proc/" + name) as f:
            return f.read()
    except OSError as exc:
        return exc.strerror
print(json.dumps({
    "cpu_count": os.cpu_count(),
    "nprocs": os.sysconf("SC_NPROCESSORS_ONLN"),
    **{name: text(name) for name in ("loadavg", "uptime", "stat", "meminfo", "vmstat",
                                     "pressure/cpu", "sys/fs/file-nr", "sys/kernel/pty/nr")},
}))
"""


def test_a_sandboxed_bot_sees_fixed_counters_and_the_machines_cpus(tmp_path: Path) -> None:
    """The host's counters (load, threads, CPU time, free memory, open files) would carry
    messages between seats: the sandbox shows fixed figures of its own or nothing, and
    runtimes still count the machine's CPUs (the C library reads ``/proc/stat`` where
    ``/sys`` is missing; Node's ``os.cpus()`` too) and see the bot's memory bound."""
    tmp_path.chmod(0o755)
    (tmp_path / "counters.py").write_text(COUNTERS)
    node = shutil.which("node")
    (tmp_path / "counters.js").write_text(
        "const os = require('os');\n"
        "console.log(JSON.stringify({cpus: os.cpus().length, total: os.totalmem(), "
        "free: os.freemem(), load: os.loadavg(), parallel: os.availableParallelism?.()}));\n"
    )
    sandbox = Sandbox()
    user = sandbox.lease_user()
    try:
        policy = sandbox.policy(tmp_path, (), None, user.ids if user else None, memory_mb=512)
        seen = []
        for command in (
            [sys.executable, "counters.py"],
            *([[node, "counters.js"]] if node else []),
        ):
            with bwrap_descriptors(policy, command) as (argv, fds):
                done = subprocess.run(
                    argv, cwd=tmp_path, pass_fds=fds, capture_output=True, text=True, timeout=60
                )
            assert done.returncode == 0, done.stderr
            seen.append(json.loads(done.stdout))
    finally:
        if user is not None:
            user.release()
    python = seen[0]
    assert python["cpu_count"] == python["nprocs"] == os.cpu_count()
    assert python["loadavg"] == "0.00 0.00 0.00 1/1 1\n" and python["uptime"] == "0.00 0.00\n"
    stat = dict(line.split(maxsplit=1) for line in python["stat"].splitlines())
    assert stat["ctxt"] == "0" and stat["processes"] == "0"
    assert set(stat["cpu"].split()) == {"0"}
    memory = {line.split(":")[0]: line.split()[1] for line in python["meminfo"].splitlines()}
    assert memory["MemTotal"] == memory["MemFree"] == memory["MemAvailable"] == str(512 << 10)
    for name in ("vmstat", "pressure/cpu", "sys/fs/file-nr", "sys/kernel/pty/nr"):
        if Path("/proc", name).exists():
            assert python[name] == "Permission denied", name
    if node:
        js = seen[1]
        assert js["cpus"] == os.cpu_count() and js["load"] == [0, 0, 0]
        assert js["total"] == js["free"] == 512 << 20


@pytest.mark.skipif(shutil.which("java") is None, reason="no JVM installed")
def test_a_jvm_bot_sizes_its_heap_from_its_own_memory_bound(tmp_path: Path) -> None:
    """The sandbox refuses ``sysinfo`` (the host's counters), whence a JVM learns the
    machine's memory: the C library then answers with what lay on its stack (a heap of
    300 MiB to 2 GiB, start to start). The jail gives it ``-XX:MaxRAM``, the bot's bound."""
    tmp_path.chmod(0o755)
    java = str(Path(shutil.which("java") or "java").resolve())
    etc = tuple(p for p in Path("/etc").glob("java-*") if p.is_dir())
    spec = BotSpec(
        name="jvm",
        command=(java, "-XX:+PrintFlagsFinal", "-version"),
        workdir=tmp_path,
        env={"JAVA_TOOL_OPTIONS": "-Xss2m"},
    )

    async def main() -> list[str]:
        sandbox = Sandbox()
        heaps = []
        for start in range(2):
            user = sandbox.lease_user()
            try:
                policy = sandbox.policy(tmp_path, etc, None, user.ids if user else None)
                log = tmp_path / f"jvm{start}.log"
                process = await jail.start(spec, "unix:/nowhere", "t", log, policy=policy)
                try:
                    await asyncio.wait_for(process.proc.wait(), 60)
                finally:
                    await process.stop(grace=0)
                assert process.returncode == 0, log.read_text()[-2000:]
                flags = [x.split() for x in log.read_text().splitlines() if " = " in x]
                heaps += [x[3] for x in flags if x[1] in ("MaxHeapSize", "ThreadStackSize")]
            finally:
                if user is not None:
                    user.release()
        return heaps

    # A quarter of the default 4096 MiB bound, every start; the bot file's options kept.
    assert run(main()) == ["1073741824", "2048"] * 2


@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK installed")
def test_a_build_step_compiles_java(tmp_path: Path) -> None:
    """A build step's jail (all of /usr) binds the JDK's configuration under /etc, which
    its files under /usr link to: without it ``javac`` cannot load its messages."""
    tmp_path.chmod(0o755)
    (tmp_path / "A.java").write_text("class A { public static void main(String[] a) {} }")
    sandbox = Sandbox()
    user = sandbox.lease_user()
    try:
        policy = sandbox.policy(tmp_path, user=user.ids if user else None)
        script = "cp A.java /tmp && cd /tmp && javac A.java && java -XX:-UsePerfData A"
        with bwrap_descriptors(policy, ["/bin/sh", "-c", script]) as (argv, fds):
            done = subprocess.run(
                argv, cwd=tmp_path, pass_fds=fds, capture_output=True, text=True, timeout=90
            )
    finally:
        if user is not None:
            user.release()
    assert done.returncode == 0, done.stderr[-2000:]


def test_made_files_are_bound_from_their_descriptors() -> None:
    files = ((Path("/etc/passwd"), b"root:x:0:0::/:/bin/false\n"), (Path("/etc/hosts"), b""))
    argv = bwrap_command(_policy(files=files), ["python3", "bot.py"], file_fds=(7, 9))
    assert _pairs(argv, "--ro-bind-data") == [("7", "/etc/passwd"), ("9", "/etc/hosts")]
    for i, flag in enumerate(argv):
        if flag == "--ro-bind-data":
            assert argv[i - 2 : i] == ["--perms", "0444"], "readable by the bot's user"
    with pytest.raises(ValueError, match="descriptor"):
        bwrap_command(_policy(files=files), ["python3", "bot.py"], file_fds=(7,))


def test_a_sandboxed_bot_knows_its_own_user_and_none_of_the_hosts() -> None:
    sandbox = Sandbox()
    user = sandbox.lease_user()
    try:
        policy = sandbox.policy(BOTS_DIR, user=user.ids if user else None)
        probe = (
            "import getpass, socket; print(getpass.getuser(), socket.gethostbyname('localhost'));"
            "print(len(open('/etc/passwd').read().splitlines()))"
        )
        with bwrap_descriptors(policy, [sys.executable, "-c", probe]) as (argv, fds):
            # No USER or LOGNAME: getpass asks the sandbox's /etc/passwd.
            done = subprocess.run(
                argv, pass_fds=fds, capture_output=True, text=True, timeout=60, env={}
            )
    finally:
        if user is not None:
            user.release()
    assert done.returncode == 0, done.stderr
    name, address, users = done.stdout.split()
    assert name == "bot" and address == "127.0.0.1"
    assert int(users) <= 3, "root, nobody and the bot: not the host's accounts"


def _layout(root: Path, modes: dict[str, int]) -> None:
    """Folders under ``root``, each with its mode, outer ones first."""
    for name, mode in modes.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name).chmod(mode)


def _reads_its_folder(policy: SandboxPolicy) -> bool:
    """Whether a process in the jail of ``policy`` lists its folder by its name (as a bot
    does that runs a file of it by its full path, or imports from it)."""
    probe = f"import os; os.listdir({str(policy.workdir)!r})"
    with bwrap_descriptors(policy, [sys.executable, "-c", probe]) as (argv, fds):
        done = subprocess.run(argv, pass_fds=fds, capture_output=True, text=True, timeout=60)
    return done.returncode == 0


# (the folders from the outermost, with their modes; read-only grants; the folder a warning
# must name, "" for none). "home" stands for /root: closed to others, above the bot's folder.
FOLDER_LAYOUTS = [
    pytest.param(
        {"home": 0o700, "home/clone": 0o755, "home/clone/bot": 0o755}, [], "", id="home-0700"
    ),
    pytest.param(
        {"home": 0o700, "home/clone": 0o755, "home/clone/bot": 0o700},
        [],
        "home/clone/bot",
        id="own-folder-0700-under-home-0700",
    ),
    pytest.param(
        {"home": 0o755, "home/clone": 0o700, "home/clone/bot": 0o755},
        ["home/clone"],
        "home/clone",
        id="granted-parent-0700",
    ),
    pytest.param(
        {"home": 0o700, "home/clone": 0o755, "home/clone/bot": 0o755},
        ["home/clone"],
        "",
        id="granted-parent-under-home-0700",
    ),
]


@pytest.mark.skipif(
    os.geteuid() != 0, reason="bots get uids of their own only under a root referee"
)
@pytest.mark.parametrize(("modes", "grants", "blocks"), FOLDER_LAYOUTS)
def test_the_folder_warning_says_what_the_jail_shows(
    modes: dict[str, int], grants: list[str], blocks: str
) -> None:
    sandbox = Sandbox()
    sandbox.check()
    user = sandbox.lease_user()
    assert user is not None
    # Not under /tmp, which the jail replaces with a private one of its own.
    root = Path(tempfile.mkdtemp(prefix="folder-modes-", dir=ROOT))
    try:
        _layout(root, modes)
        folder = root / "home/clone/bot"
        policy = sandbox.policy(folder, [root / g for g in grants], user=user.ids)
        why = unreadable(policy, sandbox.uids)
        assert _reads_its_folder(policy) == (why == ""), why
        if blocks:
            assert f"{root / blocks}," in why or why.endswith(f"-R o+rX {root / blocks})"), why
            assert str(root / "home,") not in why and "/home)" not in why
        else:
            assert why == ""
    finally:
        user.release()
        for path in sorted(root.rglob("*"), reverse=True):
            path.chmod(0o755)
        shutil.rmtree(root)
