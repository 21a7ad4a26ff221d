"""Tournament files: a valid one loads; every bad one is refused with one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from referee.results.store import describe_changes
from referee.tournament.config import ConfigError, load_config

# In a folder of their own: a bot's folder may never hold the output folder (results/).
BOT = """
[[bots]]
name = "{name}"
command = ["python3", "bot.py"]
workdir = "bots"
"""


def write(tmp_path: Path, body: str, bots: int = 4) -> Path:
    path = tmp_path / "league.toml"
    path.write_text(body + "".join(BOT.format(name=f"b{i}") for i in range(bots)))
    return path


def test_a_valid_file_loads_with_defaults(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, '[tournament]\nname = "t"\ntable_size = 3\n'))
    assert cfg.table_size == 3
    assert cfg.matches_per_table == 3
    assert [b.name for b in cfg.bots] == ["b0", "b1", "b2", "b3"]
    assert cfg.database == str((tmp_path / "results" / "t" / "tournament.db").resolve())
    assert cfg.clock.decision_ms == 1000


def test_the_example_league_file_loads() -> None:
    cfg = load_config(Path(__file__).parent.parent / "examples" / "league.toml")
    assert cfg.table_size == 3 and len(cfg.bots) == 4


@pytest.mark.parametrize(
    ("body", "bots", "expected"),
    [
        ('[[bots]]\nfile = "missing.toml"\n', 3, "missing.toml: bot file not found"),
        ("[tournament]\ntable_size = 5\n", 4, "table_size = 5 is larger than the 4 bots declared"),
        ('[rules]\npreset = "bridge"\n', 4, "[rules] preset = 'bridge' is not allowed"),
        ("[clock]\ndecision_ms = -5\n", 4, "[clock] decision_ms = -5 is not allowed"),
        ("[clock]\nthink_ms = 5\n", 4, "[clock] has unknown key 'think_ms'"),
        ('[tournament]\nmode = "swiss"\n', 4, "mode = 'swiss' is not allowed"),
        (
            '[tournament]\nmode = "duplicate"\nmatches_per_table = 6\n',
            4,
            "not allowed in duplicate mode",
        ),
        ("[tournament]\nparallel = 0\n", 4, "parallel = 0 is not allowed"),
        ('[tournament]\nanchor = "nobody"\n', 4, "anchor = 'nobody' is not one of the bots"),
        ("[tournament\n", 4, "not valid TOML"),
        (
            '[rules]\npreset = "french-2-14"\n[tournament]\ntable_size = 3\n',
            4,
            "does not fit the rules",
        ),
        ('[[bots]]\nname = "b0"\ncommand = "x"\n', 3, "bot name 'b0' is declared twice"),
        ('[[bots]]\nname = "ext"\ntoken = "t"\n', 3, "has no command"),
    ],
)
def test_bad_files_are_refused_with_one_line(
    tmp_path: Path, body: str, bots: int, expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, body, bots))
    message = str(info.value)
    assert expected in message
    assert "\n" not in message


def test_the_command_prints_the_error_and_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, "[tournament]\ntable_size = 9\n")
    proc = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "table_size = 9" in lines[0]


def test_dry_run_prints_the_schedule_without_contacting_bots(tmp_path: Path) -> None:
    path = write(tmp_path, '[tournament]\nname = "dry"\ntable_size = 3\nmatches_per_table = 3\n')
    proc = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "12 matches, 4 tables of 3" in proc.stdout
    # The schedule is public: seatings and deal numbers, never a seed (the deal key that
    # gives the seeds does not exist before the tournament is created).
    assert len([line for line in proc.stdout.splitlines() if " deal " in line]) == 12
    assert "seed" not in proc.stdout
    assert not (tmp_path / "results").exists()  # nothing was started or stored


def test_describe_changes_names_the_changed_keys() -> None:
    old = {"seed": 1, "rules": {"trump_rule": "highest"}, "bots": [{"name": "a", "command": ["x"]}]}
    new = {
        "seed": 2,
        "rules": {"trump_rule": "last_suit"},
        "bots": [{"name": "a", "command": ["y"]}],
    }
    changes = describe_changes(old, new)
    assert "seed: 1 -> 2" in changes
    assert "rules.trump_rule: 'highest' -> 'last_suit'" in changes
    assert "bots[a].command: ['x'] -> ['y']" in changes


def test_what_a_bot_may_read_and_its_seats_are_part_of_the_fingerprint(tmp_path: Path) -> None:
    body = '[tournament]\nname = "t"\ntable_size = 3\n'
    plain = load_config(write(tmp_path, body))
    # Unset, they are not in it: a tournament begun before they were fingerprinted resumes.
    assert all("read" not in b and "seats" not in b for b in plain.fingerprint()["bots"])
    (tmp_path / "data").mkdir()
    more = write(tmp_path, body)
    # More for the last bot's entry: two seats, and a folder to read.
    more.write_text(more.read_text() + 'seats = 2\n[bots.sandbox]\nread = ["data"]\n')
    changed = load_config(more)
    assert changed.fingerprint_hash() != plain.fingerprint_hash()
    changes = describe_changes(plain.fingerprint(), changed.fingerprint())
    assert f"bots[b3].read: None -> ['{(tmp_path / 'data').resolve()}']" in changes
    assert "bots[b3].seats: None -> 2" in changes


def test_a_bot_s_cgroup_bounds_are_part_of_the_fingerprint(tmp_path: Path) -> None:
    body = '[tournament]\nname = "t"\ntable_size = 3\n'
    plain = load_config(write(tmp_path, body))
    # At their defaults they are not in it: a tournament begun before them resumes.
    assert all(
        set(b["limits"]) == {"cpu_seconds", "memory_mb"} for b in plain.fingerprint()["bots"]
    )
    more = write(tmp_path, body)
    more.write_text(more.read_text() + "[bots.limits]\nprocesses = 64\ncpus = 0.5\n")
    changes = describe_changes(plain.fingerprint(), load_config(more).fingerprint())
    assert "bots[b3].limits.processes: None -> 64" in changes
    assert "bots[b3].limits.cpus: None -> 0.5" in changes


def test_a_table_left_out_is_the_table_with_every_key_left_out() -> None:
    # A table's default is made without validating (Table.defaults, so that importing the
    # models builds none of them); it must equal what the file would give for [table] alone.
    from referee.compare.config import CompareFile
    from referee.config.tables import BotFileRef, BotTable, Table
    from referee.league.config import LeagueFile
    from referee.tournament.config import TournamentFile

    checked = 0
    for model in (TournamentFile, LeagueFile, CompareFile, BotTable, BotFileRef):
        for name, field in model.model_fields.items():
            default = field.default
            if isinstance(default, Table):
                assert default == type(default).model_validate({}), (model.__name__, name)
                assert default.model_fields_set == set()
                checked += 1
    assert checked >= 15
