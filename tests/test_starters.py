"""The starters work where they are copied: each sample bot folder (Python, Node.js, C++)
copied to a folder outside the repository, built there the way its README says, plays a
real match through ``referee match``.

The C++ copy is built once for this module with the README's plain CMake commands (about
a minute on two cores); the Node copy brings its ``node_modules`` along, as a copy of an
installed folder does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cpp_bot import _missing_toolchain

from referee.match.record import replay

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"


def _env() -> dict[str, str]:
    # The Python bot files say "python3": this interpreter's folder first on PATH.
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def copy_starter(name: str, into: Path) -> Path:
    """``sample_bots/<name>`` copied to ``into/<name>`` (without a build folder)."""
    source, target = SAMPLES / name, into / name

    def build_folder(folder: str, names: list[str]) -> list[str]:
        return ["build"] if Path(folder) == source and "build" in names else []

    shutil.copytree(source, target, ignore=build_folder)
    return target


def bot_file(folder: Path, name: str, command: list[str]) -> Path:
    """A bot file beside the copied starter, its command run in ``folder``."""
    path = folder / f"{name}.toml"
    path.write_text(f"name = {json.dumps(name)}\ncommand = {json.dumps(command)}\n")
    return path


def play_with(bot: Path, out: Path) -> list[dict[str, Any]]:
    """A match of the copied bot (seat 0) against two Python sample bots; its record."""
    played = subprocess.run(
        [
            sys.executable,
            *("-m", "referee.cli", "match"),
            *("--bot", str(bot)),
            *("--bot", str(SAMPLES / "random.toml")),
            *("--bot", str(SAMPLES / "minimal-python.toml")),
            *("--seed", "5", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    (record,) = (out / "matches").glob("*.jsonl")
    replay(record)  # the engine agrees with every move
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    end = lines[-1]
    logs = "".join(p.read_text() for p in (out / "logs").glob("*-seat0-*.log"))
    assert end["reason"] == "completed" and end["forfeited"] == [], logs
    assert [x for x in lines if x["type"] == "fault"] == []
    mine = [x for x in lines if x["type"] in ("pain", "play") and x["seat"] == 0]
    assert mine and not any(x["fallback"] for x in mine)
    return lines


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[Path]:
    """A folder outside the repository, that the sandboxed bot (another user) may read, as
    a bot author's own folder is (pytest's temporary folders are the owner's only)."""
    base = Path(tempfile.mkdtemp(prefix="sticheln-starters-"))
    base.chmod(0o755)
    assert ROOT not in base.parents
    # The author's folder, beside the referee's output folders (which no bot may read, so
    # they may not be inside a bot's folder).
    folder = base / "author"
    folder.mkdir(mode=0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.timeout(150)
def test_a_copied_python_starter_plays_a_match(elsewhere: Path) -> None:
    copy_starter("python", elsewhere)
    bot = bot_file(elsewhere, "mine-python", ["python3", "python/heuristic_bot.py"])
    play_with(bot, elsewhere.parent / "out-python")


@pytest.mark.timeout(150)
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_copied_node_starter_plays_a_match(elsewhere: Path) -> None:
    assert (SAMPLES / "node" / "node_modules" / "@grpc" / "grpc-js").is_dir(), (
        "the Node bot's packages are missing: run npm ci in sample_bots/node"
    )
    copy_starter("node", elsewhere)
    # Nothing of the repository is left to read: its proto files came along.
    bot = bot_file(elsewhere, "mine-node", ["node", "node/bot.js"])
    play_with(bot, elsewhere.parent / "out-node")
    minimal = bot_file(elsewhere, "mine-minimal-node", ["node", "node/minimal_bot.js"])
    play_with(minimal, elsewhere.parent / "out-minimal-node")


@pytest.mark.timeout(900)
def test_a_copied_cpp_starter_builds_with_plain_cmake_and_plays_a_match(elsewhere: Path) -> None:
    missing = _missing_toolchain()
    if missing:
        pytest.skip(f"the C++ toolchain is not installed (missing: {missing})")
    folder = copy_starter("cpp", elsewhere)
    # The README's commands, as a bot author types them for the copy.
    for argv in (
        ["cmake", "-S", str(folder), "-B", str(folder / "build")],
        ["cmake", "--build", str(folder / "build"), "-j2"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=840, cwd=elsewhere)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # Its ctest: the vectors are not beside the copy, so the test is skipped and says how
    # to point the build at them; pointed there, it runs and passes.
    ctest = ["ctest", "--output-on-failure", "-V"]
    done = subprocess.run(ctest, capture_output=True, text=True, timeout=120, cwd=folder / "build")
    assert "No tests were found" not in done.stdout + done.stderr
    assert "Skipped" in done.stdout and "-DSTICHELN_CONFORMANCE_DIR=" in done.stdout, done.stdout
    vectors = f"-DSTICHELN_CONFORMANCE_DIR={ROOT / 'conformance'}"
    subprocess.run(["cmake", "-S", str(folder), "-B", str(folder / "build"), vectors], check=True)
    done = subprocess.run(ctest, capture_output=True, text=True, timeout=120, cwd=folder / "build")
    assert done.returncode == 0 and "all vectors agree" in done.stdout, done.stdout[-3000:]
    bot = bot_file(elsewhere, "mine-cpp", ["cpp/build/sticheln-bot"])
    play_with(bot, elsewhere.parent / "out-cpp")


@pytest.mark.timeout(300)
def test_the_cpp_readme_copy_of_a_built_starter_configures(tmp_path: Path) -> None:
    """The README's "Writing your own" as typed in a clone where the starter is built
    already (as the README's Build section and scripts/test.sh leave it): the copy must
    not bring the build folder along, whose CMake cache names the repository's folder
    and makes cmake refuse the copy."""
    missing = _missing_toolchain()
    if missing:
        pytest.skip(f"the C++ toolchain is not installed (missing: {missing})")
    readme = (SAMPLES / "cpp" / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Writing your own", 1)[1]
    copy, configure = section.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()[:2]
    clone, home = tmp_path / "clone", tmp_path / "home"
    home.mkdir()
    copy_starter("cpp", clone / "sample_bots")
    built = ["cmake", "-S", "sample_bots/cpp", "-B", "sample_bots/cpp/build"]
    subprocess.run(built, cwd=clone, capture_output=True, check=True, timeout=240)
    env = {**os.environ, "HOME": str(home)}
    for line in (copy, configure.split(" && ")[0]):
        done = subprocess.run(
            ["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=240
        )
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
