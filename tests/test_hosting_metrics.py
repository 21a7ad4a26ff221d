"""A hosted league's metrics, scraped from real processes: the league's build and
validation times, queue depth and submissions (``referee serve`` with ``[hosting]``), and
an external ``referee league worker``'s own endpoint, one scrape target per worker, which
counts the matches that worker played (``sticheln_worker_matches_played_total``), the
decisions of its seats and its warm pool (``sticheln_warm_bot_*``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

from leaguekit import REFEREE, ROOT, query, serving, sqlite_db, wait_for
from prometheus_client.parser import text_string_to_metric_families
from test_hosting import PYTHON_BOT, VALIDATED_S, bots_json, cli, code_dir, league_file, submitted

__all__ = ["code_dir"]  # the fixture, imported for the tests here


def scrape(port: int) -> dict[str, float]:
    """Every sample of a metrics endpoint, by name and labels (``name{k="v"}``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


def printed_port(log: Path) -> int | None:
    found = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", log.read_text())
    return int(found.group(1)) if found else None


def test_the_league_times_builds_and_an_external_worker_counts_its_matches(
    tmp_path: Path, code_dir: Path
) -> None:
    db = sqlite_db(tmp_path)
    db.table["metrics_port"] = 0
    config = league_file(tmp_path, db, code_dir, workers=0)
    log = tmp_path / "serve.log"
    with serving(config, log) as s:
        league_port = wait_for(lambda: printed_port(log), 30, "the league's metrics port")
        for name in ("alpha", "beta", "gamma"):
            # The Python sample bot with a build step (it has nothing to build: `true`),
            # its code each entry's own (the same code is built once).
            folder = tmp_path / name
            shutil.copytree(PYTHON_BOT, folder, symlinks=False)
            toml = (folder / "bot.toml").read_text()
            (folder / "bot.toml").write_text(toml + f'build = "true {name}"\n')
            token = s.register(name)
            submitted(
                cli(s.address, "submit", str(folder), "--bot-file", "bot.toml", token=token),
                name,
                1,
            )
        wait_for(
            lambda: all(r["status"] == "playing" for r in bots_json(s.address).values()),
            VALIDATED_S * 3,
            "three hosted bots playing",
            every=1,
        )
        league = scrape(league_port)
        assert league["sticheln_hosted_build_seconds_count"] == 3
        assert league["sticheln_hosted_build_seconds_sum"] > 0
        assert league["sticheln_hosted_validation_seconds_count"] == 3
        # Validation includes the build.
        assert (
            league["sticheln_hosted_validation_seconds_sum"]
            >= league["sticheln_hosted_build_seconds_sum"]
        )
        assert league['sticheln_hosted_submissions_total{status="playing"}'] == 3
        # No worker yet: the league plays nothing and the queue says so.
        wait_for(
            lambda: scrape(league_port)["sticheln_hosted_queue_depth"] >= 1,
            30,
            "a queued match in the league's queue depth",
        )
        worker_log = tmp_path / "worker.log"
        worker = subprocess.Popen(
            [*REFEREE, "league", "worker", "--database", str(db.target), "--name", "w1",
             "--code-dir", str(code_dir.parent / "w1"), "--out", str(tmp_path / "w1"),
             "--metrics-port", "0", "--sandbox", "bubblewrap"],
            stdout=subprocess.PIPE, stderr=worker_log.open("wb"), text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        try:
            assert worker.stdout is not None
            assert worker.stdout.readline().startswith("worker w1 playing league hosted")
            worker_port = wait_for(lambda: printed_port(worker_log), 30, "the worker's port")
            played_by_w1 = 'sticheln_worker_matches_played_total{worker="w1"}'
            wait_for(
                lambda: scrape(worker_port).get(played_by_w1, 0) >= 2,
                180,
                "the worker to play two matches",
                every=0.5,
            )

            def done() -> int:
                return int(
                    query(
                        db.target,
                        "SELECT COUNT(*) FROM match_queue WHERE status = 'done' AND worker = 'w1'",
                    )[0][0]
                )

            # The worker plays on while it is read: the scrape is bracketed by two counts.
            before = done()
            seen = scrape(worker_port)
            after = done()
            played = seen[played_by_w1]
            # Its seats' decisions are counted here, where they were played.
            assert sum(v for k, v in seen.items() if k.startswith("sticheln_decisions_total")) > 0
            # What the worker counted is what it stored (the queue row is marked done
            # just after the count).
            assert before <= played <= after + 1
            # Its warm pool: two matches of three entries share a bot, whose process the
            # first match started and a later one reused; each bot's memory is its cgroup's.
            assert seen['sticheln_warm_bot_seatings_total{process="warm"}'] >= 1
            assert seen["sticheln_warm_bot_starts_total"] >= 2
            held = [
                seen[f'sticheln_warm_bot_processes{{state="{s}"}}'] for s in ("serving", "idle")
            ]
            assert sum(held) >= 2
            memory = [v for k, v in seen.items() if k.startswith("sticheln_warm_bot_memory_bytes")]
            assert memory and all(v > 1 << 20 for v in memory)
        finally:
            worker.terminate()
            worker.wait(60)
