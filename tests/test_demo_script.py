"""scripts/demo.sh installs the referee once and again only when what the install depends
on changed (the package metadata, the build hook, the compiled engine's sources), then
runs the demo tournament with the arguments it was given."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or shutil.which("setpriv") is None,
    reason="the script would install Debian packages first",
)


def _copy(tmp_path: Path) -> Path:
    """What the script reads, with a .venv whose python and referee only log their calls."""
    repo = tmp_path / "repo"
    parts = ("scripts/demo.sh", "scripts/runsc.sh", "pyproject.toml", "setup.py")
    for part in (*parts, "examples/demo.toml"):
        (repo / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, repo / part)
    shutil.copytree(ROOT / "referee" / "rules", repo / "referee" / "rules")
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "referee"):
        fake = bin_dir / tool
        fake.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path}/calls"\n')
        fake.chmod(0o755)
    return repo


def _run(repo: Path, *args: str) -> list[str]:
    calls = repo.parent / "calls"
    calls.unlink(missing_ok=True)
    subprocess.run(
        ["bash", str(repo / "scripts" / "demo.sh"), *args],
        check=True,
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHON": "/nonexistent-python"},  # the .venv exists: unused
    )
    return calls.read_text().splitlines()


def test_demo_installs_once_and_again_only_after_a_change(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    first = _run(repo, "--parallel", "1")
    assert [c for c in first if "pip install" in c][-1].endswith(
        "pip install -q --disable-pip-version-check -e ."
    )
    assert first[-1] == "referee tournament examples/demo.toml --parallel 1"
    second = _run(repo)
    assert second == ["referee tournament examples/demo.toml"]
    # A change to the compiled engine's sources (or setup.py, pyproject.toml) reinstalls.
    with (repo / "referee" / "rules" / "trick.py").open("a") as f:
        f.write("\n# changed\n")
    third = _run(repo)
    assert any("-e ." in c for c in third)
    assert _run(repo) == ["referee tournament examples/demo.toml"]
