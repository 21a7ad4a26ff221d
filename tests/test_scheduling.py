"""The suite's own scheduling (tests/conftest.py): on ``pytest -n N --dist loadgroup``, as
scripts/test.sh runs it, the tests of a module that share a module-scoped fixture (a
tournament, a comparison or a league played for the module's pages) run on one worker, one
after another, so that the fixture is made once. Spread over the workers, each would make
it again, and it is most of the module's CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from machine import stretched

TESTS = Path(__file__).resolve().parent

SHARED = """
import os
import pytest

@pytest.fixture(scope="module")
def made():
    with open(os.environ["MADE_LOG"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")
    yield

@pytest.mark.parametrize("n", range(6))
def test_shares(made, n):
    pass
"""

ALONE = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_alone(n):
    pass
"""


def test_a_module_fixture_is_made_once_on_two_workers(tmp_path: Path) -> None:
    (tmp_path / "test_a_alone.py").write_text(ALONE, encoding="utf-8")
    (tmp_path / "test_b_shares.py").write_text(SHARED, encoding="utf-8")
    log = tmp_path / "made.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "STICHELN_TEST"))}
    env.update(MADE_LOG=str(log), PYTHONPATH=str(TESTS))
    # The suite's conftest, loaded as a plugin into a session of these two modules alone.
    command = [sys.executable, "-m", "pytest", "-p", "conftest", "-n", "2", "--dist", "loadgroup"]
    command += ["-q", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", str(tmp_path)]
    done = subprocess.run(
        [*command, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=stretched(120),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "12 passed" in done.stdout, done.stdout[-2000:]
    made = log.read_text(encoding="utf-8").split()
    assert len(made) == 1, f"the module fixture was made {len(made)} times, on {made}"
