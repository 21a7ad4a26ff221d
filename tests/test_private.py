"""Private files: created 0600, and an existing database is made private without being
opened (closing a descriptor of it would drop this process's SQLite locks)."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

from referee.results.store import Store
from referee.runtime.private import create_private


def _names(db: Path) -> list[str]:
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [name for (name,) in reader.execute("SELECT name FROM t ORDER BY name")]
    finally:
        reader.close()


def test_a_new_file_is_created_private_and_an_existing_one_made_private(tmp_path: Path) -> None:
    new = create_private(tmp_path / "new")
    old = tmp_path / "old"
    old.write_text("kept")
    old.chmod(0o644)
    create_private(old)
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert old.read_text() == "kept"


def test_another_process_closing_the_database_hides_no_later_write(tmp_path: Path) -> None:
    # The league's order: the registry's connection first, then the store's, which makes
    # the file private. Another process (a fit of the standings, a script) then opens and
    # closes the database; what the first connection commits afterwards must reach a new
    # reader. With the file opened and closed by create_private, that process took itself
    # for the last connection and deleted the write-ahead log still in use here.
    db = tmp_path / "league.db"
    first = sqlite3.connect(db, isolation_level=None)
    first.execute("PRAGMA journal_mode=WAL")
    first.execute("CREATE TABLE t (name TEXT)")
    first.execute("INSERT INTO t VALUES ('before')")
    store = Store(db)
    try:
        code = f"from referee.results.store import Store; Store({str(db)!r}).close()"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        first.execute("INSERT INTO t VALUES ('after')")
        assert _names(db) == ["after", "before"]
    finally:
        store.close()
        first.close()
