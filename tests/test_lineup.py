"""A tournament that seats two bots of one author at a table warns, one line a pair, before
it starts: two seats of one author can pass each other information (docs/security.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from referee.jail.bots import BotSpec
from referee.tournament.lineup import code_hash, shared_authors


def _folder(root: Path, name: str, program: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "bot.py").write_text(program)
    (folder / "data").mkdir()
    (folder / "data" / "weights.bin").write_bytes(bytes(range(256)) * 64)
    return folder


def test_a_bot_s_code_hash_is_its_command_and_its_folder_s_files(tmp_path: Path) -> None:
    one = _folder(tmp_path, "one", "print(1)\n")
    copy = _folder(tmp_path, "copy", "print(1)\n")
    bot = BotSpec(name="a", command=("python3", "bot.py"), workdir=one)
    same = BotSpec(name="b", command=("python3", "bot.py"), workdir=copy)
    assert code_hash(bot) == code_hash(same)  # the same code, wherever it lies
    assert code_hash(BotSpec(name="c", command=("python3", "bot.py", "-v"), workdir=one)) != (
        code_hash(bot)
    )
    before = code_hash(same)
    (copy / "data" / "weights.bin").write_bytes(b"\x01" + bytes(range(255)) * 64)
    assert code_hash(same) != before  # a data file is code too
    (copy / "data" / "weights.bin").write_bytes(bytes(range(256)) * 64)
    assert code_hash(same) == before
    # A link is hashed as the name it points to, never followed out of the folder.
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, copy / "elsewhere")
    linked = code_hash(same)
    (outside / "big").write_bytes(b"x" * 1000)
    assert code_hash(same) == linked != before
    assert code_hash(BotSpec(name="d", token="t")) == ""  # dials in: no code here


def test_pairs_that_share_an_owner_or_their_code_are_named_once_each(tmp_path: Path) -> None:
    a = BotSpec(name="a", command=("python3", "bot.py"), workdir=_folder(tmp_path, "a", "1"))
    b = BotSpec(
        name="b", command=("python3", "bot.py"), workdir=_folder(tmp_path, "b", "2"), owner="ann"
    )
    c = BotSpec(name="c", command=("python3", "bot.py"), workdir=a.workdir, owner="ann")
    d = BotSpec(name="d", command=("python3", "bot.py"), workdir=_folder(tmp_path, "d", "3"))
    pairs = {("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")}
    lines = shared_authors([a, b, c, d], pairs)
    assert len(lines) == 2
    assert lines[0].startswith("warning: bots a and c share their code (sha256 ")
    assert lines[1].startswith("warning: bots b and c share an owner (ann) and meet at a table")
    assert all("177 bit/s" in line for line in lines)
    # Pairs that never meet are not named.
    assert shared_authors([a, b, c, d], {("a", "d"), ("b", "d")}) == []


def test_referee_tournament_warns_before_it_starts(tmp_path: Path) -> None:
    _folder(tmp_path, "mine", "print('mine')\n")
    _folder(tmp_path, "theirs", "print('theirs')\n")
    bots = [
        ("mine", "mine", "ann"),
        ("mine-again", "mine", ""),  # a second entry of the same program
        ("also-ann", "theirs", "ann"),
        ("stranger", "theirs", ""),
    ]
    text = '[tournament]\nname = "t"\nmode = "duplicate"\ntable_size = 4\nmatches_per_table = 4\n'
    for name, folder, owner in bots:
        text += f'[[bots]]\nname = "{name}"\ncommand = ["python3", "bot.py"]\n'
        text += f'workdir = "{folder}"\n' + (f'owner = "{owner}"\n' if owner else "")
    path = tmp_path / "t.toml"
    path.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "referee.cli", "tournament", str(path), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: bots")]
    assert [w.split(" share ")[0] for w in warnings] == [
        "warning: bots also-ann and mine",
        "warning: bots also-ann and stranger",
        "warning: bots mine and mine-again",
    ]
    assert "an owner (ann)" in warnings[0] and "their code" not in warnings[0]
    assert "their code" in warnings[1] and "owner" not in warnings[1]
    assert "their code" in warnings[2]
