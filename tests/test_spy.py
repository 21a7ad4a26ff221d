"""A real duplicate tournament with a bot that reads the host's page cache by timing
(``tests/bots/spy_bot.py``): it must learn no opponent's hand in any seating, in either
tier, while with the cure turned off (``STICHELN_JAIL_RESIDENT=0``) the same bot reads
the earlier seatings' hands back, so that this test could fail (docs/security.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import BOTS_DIR

from referee.jail import gvisor

pytestmark = pytest.mark.timeout(1200)

MAILBOX_BYTES = (4 * 17 + 1) * (512 << 10) + 4096
TIERS = [
    "bubblewrap",
    pytest.param(
        "gvisor",
        marks=pytest.mark.skipif(bool(gvisor.missing()), reason=gvisor.missing() or "-"),
    ),
]


@pytest.fixture
def folder() -> Iterator[Path]:
    """The bots' folder (readable by the bots' uids), with the spy's mailbox: a file
    nobody has read since it was written (its pages dropped, as after a boot)."""
    path = Path(tempfile.mkdtemp(prefix="sticheln-spy-"))
    path.chmod(0o755)
    for script in ("spy_bot.py", "lowest_bot.py", "botlib.py"):
        shutil.copy(BOTS_DIR / script, path / script)
        (path / script).chmod(0o644)
    # Beside the bots' folder, granted to them: `referee tournament` reads every file of a
    # bot's folder for its code hash (referee.tournament.lineup), which would load it.
    data = Path(f"{path}-data")
    data.mkdir(mode=0o755)
    mailbox = data / "mailbox.bin"
    mailbox.write_bytes(os.urandom(MAILBOX_BYTES))
    mailbox.chmod(0o644)
    fd = os.open(mailbox, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    yield path
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(data, ignore_errors=True)


def _tournament(folder: Path, tier: str, env: dict[str, str]) -> list[dict[str, object]]:
    """Play a duplicate tournament of the spy and two lowest bots (two deals, three
    seatings each); per seating in order of play: its deal, the spy's own key and what it
    decoded."""
    files = []
    for name, script in (
        ("spy", "spy_bot.py"),
        ("low1", "lowest_bot.py"),
        ("low2", "lowest_bot.py"),
    ):
        path = folder / f"{name}.toml"
        path.write_text(
            f'name = "{name}"\ncommand = [{json.dumps(sys.executable)}, "{script}"]\n'
            f'[env]\nSPY_FILE = "{Path(f"{folder}-data") / "mailbox.bin"}"\n'
        )
        files.append(path)
    out = Path(f"{folder}-out")
    config = Path(f"{folder}-dup.toml")
    config.write_text(
        '[tournament]\nname = "spy"\nseed = 11\nmode = "duplicate"\ntable_size = 3\n'
        f'matches_per_table = 6\nparallel = 1\nout = "{out}"\n'
        '[rules]\npreset = "sticheln"\nrounds = 1\n[clock]\nstartup_ms = 120000\n'
        f'[sandbox]\nmode = "{tier}"\nread = ["{folder}-data"]\n'
        + "".join(f'[[bots]]\nfile = "{f}"\n' for f in files)
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "referee.cli", "tournament", str(config)],
            capture_output=True,
            text=True,
            timeout=1100,
            env={**os.environ, **env},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # The organiser reads, before play, what each bot may read and how large it is.
        said = [x.split()[0] for x in done.stderr.splitlines() if " reads runtime python3 (" in x]
        assert sorted(said) == ["low1", "low2", "spy"], done.stderr[-3000:]
        seatings = []
        for record in (out / "matches").glob("*.jsonl"):
            lines = [json.loads(x) for x in record.read_text().splitlines()]
            header = lines[0]
            hands = next(x["hands"] for x in lines if x["type"] == "round_start")
            seat = header["seating"].index("spy")
            (log,) = (out / "logs").glob(f"{header['match_id']}-seat{seat}-spy*.log")
            spy = [x.split()[1:] for x in log.read_text().splitlines() if x.startswith("SPY ")]
            seatings.append(
                {
                    "started": header["started_at"],
                    "deal": json.dumps(sorted(sorted(h) for h in hands)),
                    "key": next(int(x[1]) for x in spy if x[0] == "hand"),
                    "read": [int(x[2]) for x in spy if x[0] == "read"],
                    "regions_read": [int(x[1]) for x in spy if x[0] == "read"],
                    "runtime": next((x[1] for x in spy if x[0] == "runtime"), ""),
                    "log": "\n".join(" ".join(x) for x in spy),
                }
            )
        return sorted(seatings, key=lambda s: str(s["started"]))
    finally:
        shutil.rmtree(out, ignore_errors=True)
        config.unlink(missing_ok=True)


def _leaks(seatings: list[dict[str, object]]) -> list[str]:
    """Every seating that decoded the key of a hand an opponent holds in it (a hand the
    spy held in another seating of the same deal)."""
    keys: dict[object, set[int]] = {}
    for s in seatings:
        keys.setdefault(s["deal"], set()).add(int(s["key"]))  # type: ignore[call-overload]
    found = []
    for i, s in enumerate(seatings):
        others = keys[s["deal"]] - {s["key"]}
        hits = others & set(s["read"])  # type: ignore[call-overload]
        if hits:
            found.append(f"seating {i + 1} read the opponents' hand keys {sorted(hits)}")
    return found


@pytest.mark.parametrize("tier", TIERS)
def test_a_spy_timing_page_cache_reads_learns_no_hand_in_a_duplicate_tournament(
    folder: Path, tier: str
) -> None:
    seatings = _tournament(folder, tier, {})
    assert len(seatings) == 6 and len({s["deal"] for s in seatings}) == 2
    assert not _leaks(seatings), [s["log"] for s in seatings]
    if tier == "bubblewrap":
        # The mailbox nobody had read was resident before the first seating started: its
        # regions all read as written (every page fast), so the spy found no free one. (In
        # gVisor a sandbox's first read of any page is a trip through its gofer, slow
        # whatever the host's cache holds: the spy finds every region free, every time.)
        first = seatings[0]
        assert len(first["regions_read"]) >= 3, first["log"]  # type: ignore[arg-type]


def test_without_the_cure_the_spy_reads_the_earlier_seatings_hands(folder: Path) -> None:
    seatings = _tournament(folder, "bubblewrap", {"STICHELN_JAIL_RESIDENT": "0"})
    assert seatings[0]["regions_read"] == [], seatings[0]["log"]  # a cold mailbox
    assert _leaks(seatings), [s["log"] for s in seatings]
