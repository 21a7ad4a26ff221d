"""Nothing kept that nobody needs: the archives and unpacked folders of refused and
retired submissions go once ``retention_days`` have passed (their records, hashes and
reports stay), what anything still uses stays, and the store's size is a metric."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from leaguekit import LeagueDb, query, serving, wait_for
from test_hosting import PYTHON_BOT, VALIDATED_S, bots_json, broken_bot, cli, league_file, submitted
from test_hosting import code_dir as code_dir  # the fixture
from test_hosting_metrics import printed_port, scrape

from referee.league.retention import DAY_S, Retention
from referee.league.submissions import Submissions
from referee.results.store import Store

pytestmark = pytest.mark.timeout(900)


def test_only_what_nothing_uses_is_past_its_retention(tmp_path: Path) -> None:
    store = Store(tmp_path / "league.db")
    subs = Submissions(store)
    for sha in ("a1", "a2", "b1", "b2", "q1", "shared"):
        subs.put_archive(sha, b"x")
    now = 1_000_000.0
    rows = [
        # bot, number, sha, build, status, decided_at
        ("ann", 1, "a1", "", "retired", now - 3 * DAY_S),  # retired 2 days ago (by #2)
        ("ann", 2, "a2", "", "retired", now - 2 * DAY_S),  # retired 12 h ago (by #3)
        ("ann", 3, "shared", "", "playing", now - 0.5 * DAY_S),
        ("bob", 1, "b1", "b2", "refused", now - 2 * DAY_S),  # upload and its build
        ("bob", 2, "shared", "", "refused", now - 2 * DAY_S),  # the same code plays for ann
        ("cy", 1, "q1", "", "refused", now - 2 * DAY_S),  # its code queued for a match
    ]
    for bot, number, sha, build, status, decided in rows:
        store.execute(
            "INSERT INTO league_submissions (bot, number, sha256, format, bot_file, status, "
            "build_sha256, submitted_at, decided_at) VALUES (?, ?, ?, 'tar.gz', 'bot.toml', "
            "?, ?, ?, ?)",
            (bot, number, sha, status, build, decided - 60, decided),
        )
    store.execute(
        "INSERT INTO match_queue (tournament, idx, match_id, seating, code, status, queued_at) "
        "VALUES ('l', 0, 'l-000000', '[]', ?, 'queued', 0)",
        (json.dumps({"cy": {"sha256": "q1"}}),),
    )
    code = tmp_path / "code"
    for sha in ("a1", "b1", "shared"):
        (code / sha).mkdir(parents=True)
        (code / sha / "bot.py").write_text("print()\n")
    retention = Retention(store, code, retention_days=1.0)
    assert retention.expired(now) == {"a1", "b1", "b2"}
    # Whoever sees an archive's row gone finds its folder gone too: the sweep removes the
    # folder first (a league's pages and tests read the rows while it sweeps).
    execute = store.execute
    left_at_delete: list[str] = []

    def watched(sql: str, params: Any = ()) -> Any:
        if sql.startswith("DELETE FROM league_archives") and (code / params[0]).exists():
            left_at_delete.append(params[0])
        return execute(sql, params)

    store.execute = watched  # type: ignore[method-assign]
    swept = retention.sweep(now)
    store.execute = execute  # type: ignore[method-assign]
    assert left_at_delete == []
    assert (swept.archives, swept.folders) == (3, 2)
    left = {sha for (sha,) in store.execute("SELECT sha256 FROM league_archives").fetchall()}
    assert left == {"a2", "q1", "shared"}
    assert sorted(p.name for p in code.iterdir()) == ["shared"]
    assert swept.database_bytes == 3 and swept.code_dir_bytes == len("print()\n")
    # The records stay, with their hashes.
    assert store.execute("SELECT COUNT(*) FROM league_submissions").fetchone()[0] == 6
    # A day later the second retired one goes too; the playing code stays.
    later = retention.expired(now + DAY_S)
    assert "a2" in later and not later & {"shared", "q1"}
    store.close()


def test_a_leagues_refused_and_retired_code_is_removed_after_its_retention(
    tmp_path: Path, code_dir: Path
) -> None:
    db = LeagueDb("sqlite", tmp_path / "out" / "league.db")
    db.table["metrics_port"] = 0
    # 1.7 s: the league sweeps every second.
    config = league_file(tmp_path, db, code_dir, retention_days=2e-5)
    log = tmp_path / "serve.log"
    with serving(config, log) as s:
        port = wait_for(lambda: printed_port(log), 30, "the league's metrics port")
        alpha = s.register("alpha")
        broken = s.register("broken")
        first = submitted(
            cli(s.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml", token=alpha),
            "alpha",
            1,
        )
        refused = submitted(
            cli(s.address, "submit", str(broken_bot(tmp_path / "broken")), "--bot-file",
                "bot.toml", token=broken), "broken", 1,
        )  # fmt: skip
        wait_for(
            lambda: bots_json(s.address)["alpha"]["status"] == "playing",
            VALIDATED_S,
            "alpha's first submission to play",
            every=1,
        )
        # A second submission of other code retires the first.
        again = tmp_path / "alpha-2"
        shutil.copytree(PYTHON_BOT, again, symlinks=False)
        (again / "bot.toml").write_text((again / "bot.toml").read_text() + "# version 2\n")
        second = submitted(
            cli(s.address, "submit", str(again), "--bot-file", "bot.toml", token=alpha),
            "alpha",
            2,
        )
        wait_for(
            lambda: bots_json(s.address)["alpha"]["playing_submission"] == 2,
            VALIDATED_S,
            "alpha's second submission to play",
            every=1,
        )

        def archives() -> set[str]:
            return {sha for (sha,) in query(db.target, "SELECT sha256 FROM league_archives")}

        wait_for(
            lambda: first not in archives() and refused not in archives(),
            60,
            "the retired and the refused archives to be removed",
            every=0.5,
        )
        assert second in archives()
        assert not (code_dir / first).exists() and not (code_dir / refused).exists()
        assert (code_dir / second).is_dir()
        size = int(query(db.target, "SELECT SUM(size) FROM league_archives")[0][0])
        metrics = wait_for(
            lambda: (
                (m := scrape(port)).get('sticheln_hosted_store_bytes{part="database"}') == size
                and m
            ),
            30,
            "the store's size in the metrics",
            every=0.5,
        )
        assert metrics['sticheln_hosted_store_bytes{part="code_dir"}'] > 0
        # Their records stay: the hash and the report.
        rows = query(
            db.target,
            "SELECT bot, number, sha256, status, report FROM league_submissions ORDER BY bot, number",
        )
        assert [(b, n, st) for b, n, _, st, _ in rows] == [
            ("alpha", 1, "retired"),
            ("alpha", 2, "playing"),
            ("broken", 1, "refused"),
        ]
        assert rows[0][2] == first and rows[2][2] == refused
        assert "boom: the bot cannot find its model" in rows[2][4]
        # The playing bot still plays from its kept code.
        assert bots_json(s.address)["alpha"]["status"] == "playing"
