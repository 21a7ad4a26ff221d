"""A real Prometheus (the Debian package's /usr/bin/prometheus) scraping a real tournament.

Prometheus runs on loopback with deploy/prometheus/prometheus.yml (the same job and alert
rules; the target rewritten to the referee's loopback metrics port, a short scrape
interval, a temporary storage folder). The referee plays a short tournament of the
random sample bot with ``--metrics-linger inf``, so that Prometheus can take a last
scrape of the final values; the test then compares what Prometheus's HTTP API answers
with the tournament's database and ratings.json.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from machine import stretched

from referee.results.store import Store
from referee.runtime.healthcheck import check
from referee.tournament.config import load_config

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
JOB = "sticheln-referee"
BOTS = ("r1", "r2", "r3", "r4")
T = TypeVar("T")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _poll(what: str, probe: Callable[[], T | None], within: float) -> T:
    """``probe()`` until it returns something other than None; fail naming ``what``
    (``within`` seconds of a quiet machine, stretched on a loaded one)."""
    deadline = time.monotonic() + stretched(within)
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None:
            return last
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _processes_with_env(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (the bots of this test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


class PrometheusApi:
    """The few HTTP API calls the test needs."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path: str, **params: str) -> Any:
        url = f"{self.base}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=5) as reply:
            return json.loads(reply.read())

    def ready(self) -> bool | None:
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=2) as reply:
                return True if reply.status == 200 else None
        except OSError:
            return None

    def target_tried(self) -> bool | None:
        targets = self.get("/api/v1/targets")["data"]["activeTargets"]
        return True if targets and targets[0]["health"] in ("up", "down") else None

    def query(self, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Instant query: label set (without __name__) -> value."""
        data = self.get("/api/v1/query", query=expr)
        assert data["status"] == "success", data
        return {
            tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")): float(
                r["value"][1]
            )
            for r in data["data"]["result"]
        }

    def by_bot(self, expr: str) -> dict[str, float]:
        return {dict(labels)["bot"]: value for labels, value in self.query(expr).items()}

    def scalar(self, expr: str) -> float | None:
        values = list(self.query(expr).values())
        return values[0] if len(values) == 1 else None


def _stop(proc: subprocess.Popen[Any], grace: float = 10) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(5)


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[PrometheusApi, int]]:
    """A Prometheus on a free loopback port scraping ``127.0.0.1:<metrics port>``."""
    if not Path(PROMETHEUS).is_file():
        pytest.fail("prometheus not found: apt-get install prometheus (scripts/test.sh does)")
    metrics_port = _free_port()
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "500ms", "evaluation_interval": "500ms"}
    config["rule_files"] = [str(ROOT / "deploy" / "prometheus" / r) for r in config["rule_files"]]
    # The referee's job alone (the others scrape the compose file's league profile).
    config["scrape_configs"] = [j for j in config["scrape_configs"] if j["job_name"] == JOB]
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": [f"127.0.0.1:{metrics_port}"]}]
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    port = _free_port()
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config_file}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        api = PrometheusApi(port)
        _poll("Prometheus to be ready", lambda: api.ready() if proc.poll() is None else None, 30)
        # Scraping begins a few seconds after start-up (target updates are batched): wait
        # for the first attempt, so that the tournament is scraped from its start.
        _poll("Prometheus to try the target", lambda: api.target_tried(), 30)
        yield api, metrics_port
    finally:
        _stop(proc)
        log.close()


def _league(tmp_path: Path, marker: str) -> Path:
    bots = "".join(
        f'[[bots]]\nname = "{name}"\ncommand = ["python3", "python/random_bot.py"]\n'
        f'workdir = "{ROOT / "sample_bots"}"\nenv = {{ TEST_MARKER = "{marker}" }}\n'
        for name in BOTS
    )
    path = tmp_path / "scraped.toml"
    path.write_text(
        '[tournament]\nname = "scraped"\nseed = 5\ntable_size = 3\nmatches_per_table = 3\n'
        'parallel = 2\nout = "out"\n[clock]\ndecision_ms = 10000\nstartup_ms = 60000\n' + bots
    )
    return path


def _tournament(league: Path, *options: str) -> subprocess.Popen[str]:
    """``referee tournament LEAGUE OPTIONS…`` in a subprocess that finds this venv's tools."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "referee.cli",
            "tournament",
            str(league),
            *options,
            "--log-level=warning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_prometheus_scrapes_the_tournament_results(
    tmp_path: Path, prometheus: tuple[PrometheusApi, int]
) -> None:
    api, metrics_port = prometheus
    marker = f"sticheln-test-{uuid.uuid4().hex}"
    league = _league(tmp_path, marker)
    config = load_config(league)
    grpc_port = _free_port()
    referee = _tournament(
        league, f"--port={grpc_port}", f"--metrics-port={metrics_port}", "--metrics-linger=inf"
    )
    try:
        # The target is scraped while the tournament runs ...
        _poll(
            "Prometheus to scrape the referee",
            lambda: True if api.scalar(f'up{{job="{JOB}"}}') == 1 else None,
            60,
        )
        assert api.scalar("sticheln_matches_planned") == 12
        # ... and after it: the referee lingers with the final values. The health service
        # on the fixed port answers SERVING for the server and NOT_SERVING for the referee
        # service once the exports are written. (While the matches' server stops, for its
        # grace period, both are NOT_SERVING; then nothing answers until the linger binds.)
        # The referee service is asked first: the stopping server turns the whole server
        # NOT_SERVING before it, so a SERVING server after a NOT_SERVING referee service is
        # the linger's, never the stopping matches' server caught between two answers.
        address = f"127.0.0.1:{grpc_port}"
        lingering = (
            (False, f"{address}: service 'sticheln.v1.Referee' is NOT_SERVING"),
            (True, f"{address}: the server is SERVING"),
        )
        _poll(
            "the tournament to finish and linger",
            lambda: (
                True
                if (check(address, "sticheln.v1.Referee", timeout=2), check(address, timeout=2))
                == lingering
                else None
            ),
            180,
        )
        assert referee.poll() is None, referee.communicate()

        def final() -> float | None:
            value = api.scalar("sticheln_matches_finished")
            return value if value == 12 else None

        _poll("Prometheus to see the last match", final, 30)
        store = Store(config.database)
        try:
            results = store.results(config.name)
        finally:
            store.close()
        matches = len({r.idx for r in results})
        assert matches == 12
        decisions: dict[str, float] = {}
        for r in results:
            decisions[r.bot] = decisions.get(r.bot, 0) + len(r.think_us)

        def settled() -> dict[str, float] | None:
            seen = api.by_bot("sum by (bot) (sticheln_decisions_total)")
            return seen if seen == decisions else None

        _poll(f"decisions per bot to reach {decisions}", settled, 30)
        assert api.scalar("sticheln_matches_total") == matches
        assert api.scalar("sticheln_matches_running") == 0
        # Scrapes taken while the matches were played saw them being played.
        assert api.scalar("max_over_time(sticheln_matches_running[10m])") in (1, 2)
        assert api.scalar("min_over_time(sticheln_matches_finished[10m])") < matches
        assert api.scalar("sticheln_match_duration_seconds_count") == matches
        assert api.scalar("sticheln_decision_limit_seconds") == 10.0
        assert api.scalar("sum(sticheln_think_time_seconds_count)") == sum(decisions.values())
        ratings = config.out / "ratings.json"
        if not ratings.exists():  # what the referee printed says why (it lingers on)
            referee.terminate()
            out, err = referee.communicate(timeout=60)
            pytest.fail(f"no {ratings} after the tournament; stdout: {out}; stderr: {err}")
        standings = json.loads(ratings.read_text())["standings"]
        live = {s["bot"]: s["live_elo"] for s in standings}

        def exported_elo() -> dict[str, float] | None:
            # The gauges end on the exported live Elo (replayed in schedule order), set
            # when the exports are written: a scrape after that sees exactly them.
            elo = api.by_bot("sticheln_elo")
            same = set(elo) == set(BOTS) and all(
                elo[b] == pytest.approx(live[b], abs=1e-6) for b in BOTS
            )
            return elo if same else None

        _poll(f"live Elo to reach the exported {live}", exported_elo, 30)
        # The dashboard's p99 panel query works on the real histogram.
        p99 = api.by_bot(
            "histogram_quantile(0.99, sum by (bot, le) (sticheln_think_time_seconds_bucket))"
        )
        assert set(p99) == set(BOTS) and all(0 < v <= 1.5 for v in p99.values())
        # The alert rules are loaded and healthy; none fires for a healthy tournament.
        rules = api.get("/api/v1/rules")["data"]["groups"]
        loaded = {r["name"]: r for g in rules for r in g["rules"]}
        assert set(loaded) == {
            "StichelnRefereeDown",
            "StichelnBotFaultRateHigh",
            "StichelnThinkTimeNearLimit",
            "StichelnNoMatchFinished",
        }
        assert all(r["health"] in {"ok", "unknown"} for r in loaded.values()), loaded
        assert api.get("/api/v1/alerts")["data"]["alerts"] == []
        # SIGTERM ends the linger; the finished tournament's status stands.
        referee.send_signal(signal.SIGTERM)
        out, err = referee.communicate(timeout=20)
        assert referee.returncode == 0, err
        assert "12/12 matches finished" in out
        assert "interrupted" not in err
        # Prometheus notices the referee is gone: the StichelnRefereeDown expression.
        _poll(
            "up to drop to 0",
            lambda: True if api.scalar(f'up{{job="{JOB}"}} == 0') == 0 else None,
            30,
        )
    finally:
        _stop(referee)
    deadline = time.monotonic() + 5
    while _processes_with_env(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with_env(marker) == [], "bot processes left behind"


def _scrape(port: int) -> dict[str, float] | None:
    """The referee's exposition as name{labels} -> value, or None while it is not up."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_a_finite_linger_serves_the_final_metrics_then_exits(tmp_path: Path) -> None:
    marker = f"sticheln-test-{uuid.uuid4().hex}"
    league = _league(tmp_path, marker)
    league.write_text(league.read_text().replace("matches_per_table = 3", "matches_per_table = 1"))
    planned = 4  # one match per table of 3 of the 4 bots
    metrics_port = _free_port()
    # The linger is ten times what a loaded machine may hold the test's polls back.
    referee = _tournament(league, f"--metrics-port={metrics_port}", "--metrics-linger=10")
    try:

        def finished() -> dict[str, float] | None:
            # A scrape reads one metric after the other while the tournament updates
            # them: the final values are those of a scrape with both counts complete.
            samples = _scrape(metrics_port)
            counts = ("sticheln_matches_finished", "sticheln_matches_total")
            if samples and all(samples.get(c) == planned for c in counts):
                return samples
            return None

        samples = _poll("the final metrics", finished, 60)
        assert samples["sticheln_matches_planned"] == planned
        # It ends by itself after the linger.
        out, err = referee.communicate(timeout=stretched(30))
        assert referee.returncode == 0, err
        assert f"{planned}/{planned} matches finished" in out
        assert "tournament over; serving metrics for 10 s" in err
        assert _scrape(metrics_port) is None
    finally:
        _stop(referee)
    assert _processes_with_env(marker) == []


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_a_bad_linger_is_refused_with_one_line(tmp_path: Path, value: str) -> None:
    league = _league(tmp_path, "unused")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "referee.cli",
            "tournament",
            str(league),
            f"--metrics-linger={value}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"referee tournament: --metrics-linger: {float(value)} is not allowed; "
        "allowed: 0 or more seconds, or inf"
    ]
    assert not (tmp_path / "out").exists()  # refused before anything was started or written
