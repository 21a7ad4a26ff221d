"""The images' file layouts, assembled from the Dockerfiles' COPY lines, really play.

No container runtime is needed: the final stage of each Dockerfile is replayed as file
copies into a temporary folder (WORKDIR and COPY; the virtualenv and the node binary
the images copy from their build stages are this test's own), and then the command of
compose's `match` profile runs there: the referee image's `referee match` with the
sample bots it starts, and the bots image's Node.js bot dialing in with the token of
deploy/bots/node-external.toml, as the `node-bot` service does.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from referee.runtime.healthcheck import check

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "deploy" / "docker"
NODE_MODULES = ROOT / "sample_bots" / "node" / "node_modules"


def assemble(dockerfile: Path, into: Path) -> None:
    """Copy what the final stage of ``dockerfile`` copies from the build context."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    last_from = max(i for i, ln in enumerate(lines) if ln.startswith("FROM "))
    cwd = Path("/")
    for line in lines[last_from + 1 :]:
        words = shlex.split(line)
        if words[0] == "WORKDIR":
            cwd = cwd / words[1]
            (into / cwd.relative_to("/")).mkdir(parents=True, exist_ok=True)
        elif words[0] == "COPY":
            stage = next((w.split("=", 1)[1] for w in words if w.startswith("--from=")), None)
            args = [w for w in words[1:] if not w.startswith("--")]
            *sources, dest = args
            target = into / (cwd / dest).relative_to("/")
            if stage is not None:
                # From a build stage: only the Node bot's packages matter here (npm ci
                # of the same package-lock.json); the venv and node are this machine's.
                if sources[0].endswith("/node_modules"):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.symlink_to(NODE_MODULES)
                continue
            paths = [Path(p) for s in sources for p in sorted(glob.glob(str(ROOT / s)))]
            assert paths, f"{dockerfile.name}: {line}: nothing to copy"
            for path in paths:
                if path.is_dir():
                    shutil.copytree(path, target, dirs_exist_ok=True)
                else:
                    into_dir = dest.endswith("/") or len(paths) > 1
                    out = target / path.name if into_dir else target
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("jailed", "first"),
    [(False, False), (True, False), (True, True)],
    ids=["as-composed", "jailed", "jailed-as-process-1"],
)
def test_the_images_play_the_compose_match(tmp_path: Path, jailed: bool, first: bool) -> None:
    """As composed (trusted sample bots, no sandbox), and with the referee image's bots in
    the jail (sandbox, system-call filter, a uid each), as a container allowed to make it
    runs them; and with the referee as process 1 of its own PID namespace, as it is the
    entry point of a container (its bots once took it for init and never started)."""
    if shutil.which("node") is None or not NODE_MODULES.is_dir():
        pytest.skip("node and sample_bots/node/node_modules are needed (npm ci)")
    if first and (os.geteuid() != 0 or shutil.which("unshare") is None):
        pytest.skip("a PID namespace of its own needs root and util-linux's unshare")
    if jailed:
        # A folder the bots' uids may read, as the image's /app is (pytest's is private).
        tmp_path = Path(tempfile.mkdtemp(prefix="sticheln-image-"))
        tmp_path.chmod(0o755)
    try:
        _play_the_compose_match(tmp_path, jailed, first)
    finally:
        if jailed:
            shutil.rmtree(tmp_path, ignore_errors=True)


def _play_the_compose_match(tmp_path: Path, jailed: bool, first: bool) -> None:
    assemble(DOCKER / "referee.Dockerfile", tmp_path / "referee")
    assemble(DOCKER / "bots.Dockerfile", tmp_path / "bots")
    app = tmp_path / "referee" / "app"
    # Nothing of the repository is reachable from the copies but what was copied.
    assert not (app / "tests").exists() and not (tmp_path / "bots" / "bots" / "referee").exists()
    services = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())["services"]
    port = _free_port()
    command = [
        f"--port={port}" if a.startswith("--port=") else a for a in services["match"]["command"]
    ]
    assert f"--port={port}" in command
    if jailed:
        command.remove("--no-sandbox")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    # The referee as process 1: unshare forks it into a new PID namespace (and its /proc).
    pid1 = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"] if first else []
    referee = subprocess.Popen(
        [*pid1, sys.executable, "-m", "referee.cli", *command, "--seed=3"],
        cwd=app,
        env={**os.environ, "PATH": path},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    bot: subprocess.Popen[str] | None = None
    try:
        # compose: node-bot depends on the match service being healthy.
        deadline = time.monotonic() + 30
        while not check(f"127.0.0.1:{port}", timeout=1)[0]:
            assert referee.poll() is None, referee.communicate()
            assert time.monotonic() < deadline, "the match referee never became healthy"
            time.sleep(0.1)
        env = dict(services["node-bot"]["environment"])
        assert env["STICHELN_REFEREE"] == "match:50051"
        env["STICHELN_REFEREE"] = f"127.0.0.1:{port}"  # the service name, on loopback
        bots_cmd = ["node", "node/bot.js"]  # the bots image's CMD
        bot = subprocess.Popen(
            bots_cmd,
            cwd=tmp_path / "bots" / "bots" / "sample_bots",
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        out, err = referee.communicate(timeout=90)
        bot_out, _ = bot.communicate(timeout=20)
    finally:
        for proc in (referee, bot):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(10)
    assert referee.returncode == 0, err
    assert bot.returncode == 0, bot_out
    rows = [ln.split() for ln in out.splitlines() if re.match(r"\s+\d\s+\d\s", ln)]
    assert sorted(r[2] for r in rows) == ["heuristic", "node", "random"]
    assert all(r[4] == "0" for r in rows), out  # no faults
    records = list((app / "results" / "compose-match" / "matches").glob("*.jsonl"))
    assert len(records) == 1
    header = json.loads(records[0].read_text().splitlines()[0])
    assert header["sandbox"] == ("bubblewrap" if jailed else "none")
    assert ("system calls filtered" in err) == jailed
