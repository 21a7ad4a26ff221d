"""A sandboxed bot reads its runtime, a finite list of the host's files, not all of /usr
(referee/jail/runtime.py), and what it may read is kept resident where deals replay
(referee/jail/resident.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee import jail
from referee.jail import resident, runtime
from referee.jail.bots import BotSpec
from referee.jail.sandbox import Sandbox, SandboxUnavailable, bot_path
from referee.match.pool import bot_reads, reads_line

REPO = Path(__file__).resolve().parent.parent
PATH = bot_path()


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sticheln-runtime-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_runtime_follows_from_the_command(folder: Path) -> None:
    script = folder / "bot"
    script.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    script.chmod(0o755)
    shell = folder / "run.sh"
    shell.write_text("#!/bin/sh\nexec ./x\n")
    shell.chmod(0o755)
    assert runtime.infer(["python3", "bot.py"], folder, PATH) == "python3"
    assert runtime.infer([sys.executable, "bot.py"], folder, PATH) == "python3"
    assert runtime.infer(["./bot"], folder, PATH) == "python3"
    assert runtime.infer(["node", "bot.js"], folder, PATH) == "node"
    assert runtime.infer(["java", "-jar", "bot.jar"], folder, PATH) == "jvm"
    assert runtime.infer(["./run.sh"], folder, PATH) == "native"
    assert runtime.infer(["/bin/true"], folder, PATH) == "native"


def test_the_python_runtime_is_the_interpreter_its_library_and_packages_only() -> None:
    reads = runtime.read_set("python3", ["python3", "bot.py"], REPO, PATH)
    assert Path("/usr") not in reads.binds and Path("/") not in reads.binds
    stdlib = Path(os.__file__).parent
    assert stdlib in reads.binds and stdlib / "test" in reads.hidden
    bound = [str(p) for p in reads.binds]
    assert any(p.endswith("site-packages/grpc") for p in bound), bound
    assert not any(p.endswith("site-packages/_pytest") for p in bound), "a test tool"
    assert any(Path(p).name.startswith("libc.so") for p in bound), "what the modules load"
    files, size = reads.size
    assert 1000 < files < 20000 and 50 << 20 < size < 1 << 30, reads.describe()
    assert "runtime python3 (" in reads_line(reads, None)


def test_a_native_bot_reads_the_libraries_its_executable_loads(folder: Path) -> None:
    true = Path(shutil.which("true") or "/bin/true")
    reads = runtime.read_set("native", [str(true)], folder, PATH)
    names = {p.name for p in reads.binds}
    assert any(n.startswith("libc.so") for n in names), names
    assert any(n.startswith("ld-linux") for n in names), names
    assert reads.size[1] < 64 << 20, reads.describe()
    with pytest.raises(runtime.RuntimeUnavailable, match="not allowed"):
        runtime.read_set("system", [str(true)], folder, PATH)


@pytest.mark.parametrize("held", ["0", "1"])
def test_a_sandboxed_bot_sees_its_runtime_and_nothing_else_of_usr(
    folder: Path, held: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        sandbox = Sandbox("bubblewrap")
        sandbox.check()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv(resident.VARIABLE, held)
    probe = (
        "import os, grpc, json; print('SEEN', json.dumps([os.path.exists(p) for p in "
        "('/usr/bin/ls', '/usr/share', '/usr/lib/jvm', os.__file__, '/etc/ld.so.cache')]))"
    )
    (folder / "data.bin").write_bytes(b"x" * 100_000)
    spec = BotSpec(name="probe", command=("python3", "-c", probe), workdir=folder)
    reads = bot_reads(spec)
    assert reads.runtime == "python3"
    user = sandbox.lease_user()
    log = folder / "probe.log"
    try:
        policy = sandbox.policy(folder, (), None, user.ids if user else None, runtime=reads)
        assert policy.runtime == "python3" and Path("/usr") not in policy.system
        if held == "1":
            report = resident.hold(policy.read_only)
            assert report.files >= 1 and report.size >= 100_000

        async def go() -> None:
            process = await jail.start(spec, "unix:/nowhere", "-", log, policy=policy)
            await process.proc.wait()
            await process.stop()

        asyncio.run(go())
    finally:
        resident.release_all()
        if user is not None:
            user.release()
    text = log.read_text()
    seen = next((x for x in text.splitlines() if x.startswith("SEEN ")), text[-1000:])
    assert seen == "SEEN [false, false, false, true, true]", seen
