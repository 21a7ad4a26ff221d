"""A sandboxed bot reads its runtime, a finite list of the host's files, not all of /usr
(referee/jail/runtime.py), and what it may read is kept resident where deals replay
(referee/jail/resident.py)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee import jail
from referee.jail import resident, runtime, trees
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


def test_the_packages_read_are_the_distributions_own_folders_never_a_shared_one(
    folder: Path,
) -> None:
    """From each distribution's RECORD: a folder two distributions share (a namespace
    package's google/) is never bound whole, only what of it the wanted ones own."""
    records = {
        "grpcio-1.0.dist-info": ["grpc/__init__.py", "grpc/_cython/cygrpc.so"],
        "protobuf-5.0.dist-info": ["google/protobuf/__init__.py", "google/_upb/_message.so"],
        "googleapis_common_protos-1.0.dist-info": ["google/api/http.py", "../../bin/tool"],
        "Other.Name-2.0.dist-info": ['"odd,name.py"', "other/x.py"],
    }
    for info, files in records.items():
        listed = [*files, f"{info}/METADATA", f"{info}/RECORD"]
        for name in listed:
            path = folder / name.strip('"')
            if ".." not in name:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("")
        (folder / info / "RECORD").write_text("".join(f"{n},sha256=x,1\n" for n in listed))
    found = runtime.package_paths({"grpcio", "protobuf"}, str(folder))
    assert found == {
        folder / "grpc",
        folder / "grpcio-1.0.dist-info",
        folder / "google" / "protobuf",
        folder / "google" / "_upb",
        folder / "protobuf-5.0.dist-info",
    }
    # Names compare as packaging compares them; a quoted path with a comma is one file.
    assert runtime.package_paths({"other-name"}, str(folder)) == {
        folder / "odd,name.py",
        folder / "other",
        folder / "Other.Name-2.0.dist-info",
    }


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
    libc = next(
        p
        for p in runtime.read_set("native", ["/bin/true"], folder, PATH).binds
        if p.name.startswith("libc.so")
    )
    probe = (
        "import os, grpc, json; print('SEEN', json.dumps([os.path.exists(p) for p in "
        "('/usr/bin/ls', '/usr/share', '/usr/lib/jvm', os.__file__, '/etc/ld.so.cache')]));"
        f"print('LIBS', os.stat({str(libc)!r}).st_ino, json.dumps(os.listdir({str(libc.parent)!r})))"
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
        if os.getuid() == 0:  # the host's files may be linked into trees (referee/jail/trees.py)
            assert libc.parent in [place for _, place in policy.trees]
        shown = {p.name for p in policy.system if p.parent == libc.parent}
        shown |= {k.name for k, _ in policy.links if k.parent == libc.parent}
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
    # The libraries' folder shows the runtime's files and links there, nothing else of it,
    # and the same files (a tree's hard links), not copies.
    libs = next(x for x in text.splitlines() if x.startswith("LIBS "))
    inode, names = libs.removeprefix("LIBS ").split(" ", 1)
    assert int(inode) == libc.stat().st_ino
    assert sorted(json.loads(names)) == sorted(shown)


def test_holding_a_bots_files_leaves_their_access_times_as_they_were(folder: Path) -> None:
    # A bot's file whose access time is not past its mtime: the next read on a relatime
    # mount would set it, and a bot sees that the referee read it (route access_time).
    script = folder / "bot.py"
    script.write_bytes(b"#" * 10_000)
    info = os.stat(script)
    os.utime(script, ns=(info.st_mtime_ns - 10**9, info.st_mtime_ns))
    try:
        report = resident.hold([folder])
        assert report.files == 1 and report.size == 10_000
        assert os.stat(script).st_atime_ns == info.st_mtime_ns - 10**9
        # The control: an ordinary read of the same file does move it (relatime).
        if "noatime" not in _mount_options(folder):
            script.read_bytes()
            assert os.stat(script).st_atime_ns > info.st_mtime_ns
    finally:
        resident.release_all()


def _mount_options(path: Path) -> list[str]:
    """The options of the mount ``path`` lies on (its longest mount point)."""
    best, options = "", []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if str(path).startswith(fields[4].rstrip("/") + "/") and len(fields[4]) > len(best):
                best, options = fields[4], fields[5].split(",")
    return options


def test_a_tree_is_made_once_and_anew_when_a_file_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree holds hard links to its members, named by what it holds: the same members
    give the same tree, a member replaced (a new inode) a new one."""
    monkeypatch.setenv(trees.VARIABLE, str(tmp_path / "trees"))
    place = tmp_path / "lib"
    (place / "pkg").mkdir(parents=True)
    for name in ("a.so", "b.so", "pkg/c.py"):
        (place / name).write_text(name)
    (place / "pkg" / "hidden").mkdir()
    (place / "pkg" / "hidden" / "secret").write_text("x")
    members = (place / "a.so", place / "b.so", place / "pkg")
    links = ((place / "a.so.1", "a.so"),)
    hidden = (place / "pkg" / "hidden",)
    first = trees._made(place, members, links, hidden)
    if first is None:
        pytest.skip("no tree can be made here (another file system, or links refused)")
    assert (first / "a.so").stat().st_ino == (place / "a.so").stat().st_ino
    assert os.readlink(first / "a.so.1") == "a.so"
    assert (first / "pkg" / "c.py").read_text() == "pkg/c.py"
    assert list((first / "pkg" / "hidden").iterdir()) == []
    assert trees._made(place, members, links, hidden) == first
    # A tree that lost a file (a cleaner of /var/tmp) is made again, whole.
    (first / "pkg" / "c.py").unlink()
    assert trees._made(place, members, links, hidden) == first
    assert (first / "pkg" / "c.py").read_text() == "pkg/c.py"
    (place / "b.so.new").write_text("new")
    (place / "b.so.new").rename(place / "b.so")
    second = trees._made(place, members, links, hidden)
    assert second is not None and second != first
    assert (second / "b.so").read_text() == "new"
    assert oct((tmp_path / "trees").stat().st_mode & 0o777) == "0o700"


def test_referees_making_the_same_tree_at_once_share_it_and_none_puts_it_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Referees on one host (a suite's processes, a tournament's workers) that first need
    the same tree at the same moment: one makes it, the others find it whole. None may
    take another's fresh tree for a damaged one and put it aside while a sandbox of the
    other binds it (a bot then found no runtime and ended before its handshake)."""
    monkeypatch.setenv(trees.VARIABLE, str(tmp_path / "trees"))
    place = tmp_path / "lib"
    place.mkdir()
    members = []
    for i in range(400):
        (place / f"m{i}.so").write_text(str(i))
        members.append(place / f"m{i}.so")
    start = threading.Barrier(8)
    made: list[Path | None] = []

    def referee() -> None:
        start.wait()
        made.append(trees._made(place, tuple(members), (), ()))

    threads = [threading.Thread(target=referee) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if all(tree is None for tree in made):
        pytest.skip("no tree can be made here (another file system, or links refused)")
    assert len(set(made)) == 1 and len(made) == 8, made  # every one found it, none failed
    (tree,) = set(made)
    assert tree is not None and len(list(tree.iterdir())) == 400
    aside = [p.name for p in (tmp_path / "trees").iterdir() if p.name.endswith(".stale")]
    assert aside == [], aside
