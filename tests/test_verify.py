"""``referee verify`` on a real finished tournament, and what it catches.

One duplicate-mode tournament of the sample bots (Python and Node.js, real processes, the
real ``referee tournament`` command) is played once per module; each test audits it, or a
copy of its output folder with one thing altered.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from referee.match.dealkey import KEY_ENV, DealKey

ROOT = Path(__file__).resolve().parent.parent
CMD = [sys.executable, "-m", "referee.cli"]
ENV = {k: v for k, v in os.environ.items() if k != KEY_ENV}


def referee(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CMD, *args], capture_output=True, text=True, timeout=timeout, env=ENV, check=False
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of a finished duplicate tournament: 2 deals x 3 seatings."""
    tmp = tmp_path_factory.mktemp("audit")
    bots = "".join(
        f'[[bots]]\nfile = "{ROOT / "sample_bots" / name}"\n'
        for name in ("random.toml", "heuristic.toml", "node.toml")
    )
    path = tmp / "audit.toml"
    path.write_text(
        '[tournament]\nname = "audit"\nseed = 1\ntable_size = 3\nmatches_per_table = 6\n'
        'mode = "duplicate"\nparallel = 2\nout = "out"\n[rules]\npreset = "sticheln"\nrounds = 2\n'
        "[clock]\ndecision_ms = 10000\nstartup_ms = 60000\n"
        # The deal key is the subject, not the tier: bubblewrap, a fraction of gVisor's
        # cost per sandbox (a duplicate tournament's default is the strongest tier).
        '[sandbox]\nmode = "bubblewrap"\n' + bots
    )
    done = referee("tournament", str(path))
    assert done.returncode == 0, done.stderr
    assert f"its deal key is in {tmp / 'out' / 'deal-key.txt'}" in done.stdout
    return tmp / "out"


def copy(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(finished, out)
    return out


def records(out: Path) -> list[Path]:
    return sorted((out / "matches").glob("*.jsonl"))


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(path: Path, lines: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))


def verify(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return referee("verify", str(out), *extra, timeout=120)


def test_a_finished_tournament_verifies(finished: Path) -> None:
    done = verify(finished)
    assert done.returncode == 0, done.stdout + done.stderr
    key = DealKey.from_hex((finished / "deal-key.txt").read_text())
    assert f"deal key matches commitment {key.commitment()}" in done.stdout
    assert "6 records replay" in done.stdout and "results.csv agrees (18 rows)" in done.stdout
    meta = json.loads((finished / "ratings.json").read_text())["meta"]
    assert meta["deal_key"] == key.hex() and meta["deal_key_commitment"] == key.commitment()
    assert key.commitment() in (finished / "report.html").read_text()
    # Given the commitment published at creation, it verifies too.
    assert verify(finished, "--commitment", key.commitment()).returncode == 0


def test_the_sample_bots_skip_the_check_of_a_withheld_seed(finished: Path) -> None:
    logs = {p.name: p.read_text() for p in (finished / "logs").glob("*.log")}
    python = [t for n, t in logs.items() if "random" in n or "heuristic" in n]
    node = [t for n, t in logs.items() if "node" in n]
    assert python and node
    for text in python + node:
        assert "does not match" not in text  # every revealed seed opened its commitment
    # 4 of the 6 matches withhold their seed (every seating of a deal but the last).
    assert sum(t.count("withheld, commitment not checked") for t in python) == 2 * 4
    assert sum(t.count("withheld, commitment not checked") for t in node) == 4


def test_records_logs_and_the_database_are_private(finished: Path) -> None:
    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    assert mode(finished) == 0o700
    for folder in ("matches", "logs"):
        assert mode(finished / folder) == 0o700, folder
    files = [*records(finished), *(finished / "logs").glob("*.log")]
    files += [p for p in finished.glob("tournament.db*")]
    assert len(files) > 6 + 3
    for path in files:
        assert mode(path) == 0o600, path


def test_one_altered_card_is_caught(finished: Path, tmp_path: Path) -> None:
    out = copy(finished, tmp_path)
    target = records(out)[2]
    lines = lines_of(target)
    n, start = next((i, x) for i, x in enumerate(lines) if x["type"] == "round_start")
    hands = start["hands"]
    assert isinstance(hands, list)
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]  # one card changes hands
    write_lines(target, lines)
    done = verify(out)
    assert done.returncode == 1
    problems = done.stdout.splitlines()
    assert problems == [
        f"{out}/matches/{target.name}: line {n + 1}: seat 0's dealt hand differs from the "
        "engine's deal from the seed"
    ]
    assert "1 problem(s) in 6 records" in done.stderr


def test_altered_bot_seeds_are_caught(finished: Path, tmp_path: Path) -> None:
    out = copy(finished, tmp_path)
    target = records(out)[1]
    lines = lines_of(target)
    seeds = lines[-1]["bot_seeds"]
    assert isinstance(seeds, list)
    seeds[0], seeds[1] = seeds[1], seeds[0]  # two seats' seeds swapped
    write_lines(target, lines)
    done = verify(out)
    assert done.returncode == 1
    (problem,) = done.stdout.splitlines()
    assert problem.startswith(f"{out}/matches/{target.name}: line {len(lines)}: bot_seeds [")
    assert problem.endswith(f"are not the deal key's bot seeds of deal {lines[0]['deal']}")


def test_an_altered_score_is_caught_in_a_record_and_in_results_csv(
    finished: Path, tmp_path: Path
) -> None:
    out = copy(finished, tmp_path)
    target = records(out)[0]
    lines = lines_of(target)
    n, end = next((i, x) for i, x in enumerate(lines) if x["type"] == "round_end")
    scores = end["scores"]
    assert isinstance(scores, list)
    scores[1] += 1
    write_lines(target, lines)
    done = verify(out)
    assert done.returncode == 1
    assert done.stdout.startswith(f"{out}/matches/{target.name}: line {n + 1}: round 0 scores")

    out = copy(finished, tmp_path / "b")
    rows = list(csv.reader((out / "results.csv").open()))
    total = rows[0].index("total")
    rows[4][total] = str(int(rows[4][total]) - 1)
    with (out / "results.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    done = verify(out)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{out}/results.csv: line 5: match {rows[4][rows[0].index('match_id')]} seat "
        f"{rows[4][rows[0].index('seat')]} total {rows[4][total]}; the record has "
        f"{int(rows[4][total]) + 1}"
    ]


def test_an_altered_decision_count_is_caught(finished: Path, tmp_path: Path) -> None:
    # The end line's decisions are the answers in time (applied, or refused as illegal or
    # malformed): what the record's lines add up to.
    out = copy(finished, tmp_path)
    target = records(out)[3]
    lines = lines_of(target)
    applied = sum(1 for x in lines if x["type"] in ("pain", "play") and not x["fallback"])
    assert lines[-1]["decisions"] == applied  # the sample bots answer every request in time
    lines[-1]["decisions"] = applied + 1
    write_lines(target, lines)
    done = verify(out)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{out}/matches/{target.name}: line {len(lines)}: decisions {applied + 1}; the record "
        f"holds {applied} answers applied and 0 refused as illegal or malformed (a late "
        "answer is none)"
    ]


def test_a_wrong_key_is_caught(finished: Path, tmp_path: Path) -> None:
    published = DealKey.from_hex((finished / "deal-key.txt").read_text()).commitment()
    out = copy(finished, tmp_path)
    wrong = DealKey.new()
    (out / "deal-key.txt").write_text(wrong.hex() + "\n")
    done = verify(out)
    assert done.returncode == 1
    assert (
        f"{out}/deal-key.txt: the key's commitment {wrong.commitment()} is not the published"
        in (done.stdout)
    )

    # An organiser who swaps the key and its commitment in every export: the records'
    # seeds do not follow from that key, and the commitment published at creation differs.
    meta_path = out / "ratings.json"
    doc = json.loads(meta_path.read_text())
    doc["meta"].update(deal_key=wrong.hex(), deal_key_commitment=wrong.commitment())
    meta_path.write_text(json.dumps(doc))
    done = verify(out)
    assert done.returncode == 1
    problems = done.stdout.splitlines()
    assert len([p for p in problems if "is not the deal key's seed of deal" in p]) == 6
    assert all(p.startswith(f"{out}/matches/") for p in problems)
    done = verify(out, "--commitment", published)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        f"{out}/ratings.json: deal_key_commitment {wrong.commitment()} is not the commitment "
        f"published at creation ({published})"
    )


def test_the_check_by_hand_of_docs_deal_md_runs_on_a_finished_tournament(finished: Path) -> None:
    import re

    doc = (ROOT / "docs" / "deal.md").read_text()
    start = doc.index("By hand, with nothing but Python's standard library")
    found = re.compile(r"```python\n(.*?)```", re.S).search(doc, start)
    assert found is not None
    first = records(finished)[0]
    code = found.group(1).replace("results/demo/matches/demo-00000", str(first)[: -len(".jsonl")])
    code = code.replace("results/demo", str(finished))
    exec(compile(code, "docs/deal.md", "exec"), {})
    # The same check fails on a record whose seed was changed.
    lines = lines_of(first)
    lines[-1]["seed"] = str(int(str(lines[-1]["seed"])) ^ 1)
    broken = finished.parent / "broken.jsonl"
    write_lines(broken, lines)
    with pytest.raises(AssertionError):
        exec(compile(code.replace(str(first), str(broken)), "docs/deal.md", "exec"), {})


def test_replay_reads_version_2_and_version_1_records(finished: Path, tmp_path: Path) -> None:
    v2 = records(finished)[0]
    done = referee("replay", str(v2), timeout=60)
    assert done.returncode == 0, done.stderr
    lines = lines_of(v2)
    seed = lines[-1]["seed"]
    assert f"seed {seed}" in done.stdout
    # The same match as an older referee wrote it: the seed in the header.
    header, end = dict(lines[0]), dict(lines[-1])
    header.update(version=1, seed=end.pop("seed"), nonce=end.pop("nonce"))
    del header["deal"], header["deal_key_commitment"]
    v1 = tmp_path / "v1.jsonl"
    write_lines(v1, [header, *lines[1:-1], end])
    again = referee("replay", str(v1), timeout=60)
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout
    # A version 2 record without its end line has no seed to replay from.
    cut = tmp_path / "cut.jsonl"
    write_lines(cut, lines[:-1])
    sealed = referee("replay", str(cut), timeout=60)
    assert sealed.returncode == 1
    assert "no end line: the match did not finish, and its seed is sealed" in sealed.stderr
    # A seed that does not open the commitment is named with its line.
    lines[-1]["seed"] = str(int(str(seed)) + 1)
    write_lines(cut, lines)
    wrong = referee("replay", str(cut), timeout=60)
    assert wrong.returncode == 1
    assert f"line {len(lines)}: the seed and nonce do not hash to the header's commitment" in (
        wrong.stderr
    )


def test_a_match_played_from_another_deal_is_caught_against_the_schedule(
    finished: Path, tmp_path: Path
) -> None:
    config = finished.parent / "audit.toml"
    done = verify(finished, "--config", str(config))
    assert done.returncode == 0, done.stdout
    # An organiser replaces match 0 by a match played from deal 1 (a copy of match 3) and
    # makes results.csv agree: consistent in itself, but not the schedule's deal.
    out = copy(finished, tmp_path)
    lines = lines_of(out / "matches" / "audit-00003.jsonl")
    lines[0]["match_id"] = "audit-00000"
    write_lines(out / "matches" / "audit-00000.jsonl", lines)
    header, end = lines[0], lines[-1]
    seating, totals, places = header["seating"], end["totals"], end["places"]
    assert isinstance(seating, list) and isinstance(totals, list) and isinstance(places, list)
    rows = list(csv.reader((out / "results.csv").open()))
    col = {name: i for i, name in enumerate(rows[0])}
    for row in rows[1:]:
        if row[col["match_id"]] == "audit-00000":
            seat = int(row[col["seat"]])
            row[col["bot"]] = seating[seat]
            row[col["total"]], row[col["place"]] = str(totals[seat]), str(places[seat])
    with (out / "results.csv").open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    assert verify(out).returncode == 0
    done = verify(out, "--config", str(config))
    assert done.returncode == 1
    (problem,) = done.stdout.splitlines()
    assert problem.startswith(f"{out}/matches/audit-00000.jsonl: line 1: seating ")
    assert "and deal 1; the schedule has" in problem and problem.endswith("and deal 0")
    # A scheduled match whose record is missing is named too.
    (out / "matches" / "audit-00005.jsonl").unlink()
    done = verify(out, "--config", str(config))
    assert f"{out}/matches/audit-00005.jsonl: a scheduled match without a record" in done.stdout
