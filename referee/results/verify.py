"""``referee verify``: audit a finished tournament from its output folder alone.

A tournament publishes the commitment to its deal key when it is created and the key
itself when its last match has ended (``deal-key.txt`` and ``ratings.json``). With them
anyone can check, without trusting the referee that ran it:

- the key is the one committed to (and, given ``--commitment``, the one published at
  creation);
- every match record's seed is the key's seed for the record's deal number, and opens the
  seed commitment every seat received at the start of the match;
- every record replays with the rules engine: every dealt hand from the seed, every
  play legal, every trick winner, round score, total and place, and the end line's count
  of decisions (:func:`referee.match.record.replay`);
- ``results.csv`` says what the records say, for every match and seat;
- given the tournament's schedule (``referee verify --config FILE``), every scheduled
  match has a record, with the schedule's seating and deal number: an organiser cannot
  have picked deals (or seatings) other than the schedule's.

Every problem is one line naming the file (and the line, where there is one) and what
differs; see docs/deal.md.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.match.dealkey import DealKey, check_commitment
from referee.match.record import ReplayError, replay


@dataclass
class Audit:
    """What :func:`verify_tournament` found."""

    problems: list[str] = field(default_factory=list)
    records: int = 0
    result_rows: int = 0
    commitment: str = ""

    @property
    def clean(self) -> bool:
        """No problem found."""
        return not self.problems


def verify_tournament(
    out: Path,
    commitment: str = "",
    schedule: Mapping[str, tuple[tuple[str, ...], int]] | None = None,
) -> Audit:
    """Check the finished tournament in output folder ``out`` (see the module docstring).
    ``commitment``, when given, is the deal-key commitment published at creation;
    ``schedule``, when given, maps every scheduled match id to its seating and deal."""
    out = Path(out)
    audit = Audit()
    problem = audit.problems.append
    key = _published_key(out, commitment.strip().lower(), audit)
    records: dict[str, dict[str, Any]] = {}
    broken: set[str] = set()  # match ids whose record is already reported
    for path in sorted((out / "matches").glob("*.jsonl")):
        audit.records += 1
        name = f"matches/{path.name}"
        try:
            result = replay(path)
        except ReplayError as exc:
            problem(f"{name}: {exc}")
            broken.add(path.stem)
            continue
        except OSError as exc:
            problem(f"{name}: cannot be read: {exc.strerror or exc}")
            broken.add(path.stem)
            continue
        header, end = result.header, result.end
        match_id = str(header.get("match_id", path.stem))
        records[match_id] = {"header": header, "end": end}
        if schedule is not None:
            planned = schedule.get(match_id)
            if planned is None:
                problem(f"{name}: line 1: match {match_id} is not in the tournament's schedule")
            elif (tuple(header.get("seating", [])), header.get("deal")) != planned:
                problem(
                    f"{name}: line 1: seating {list(header.get('seating', []))} and deal "
                    f"{header.get('deal')}; the schedule has {list(planned[0])} and deal {planned[1]}"
                )
        if key is None:
            continue
        if header.get("deal_key_commitment") != key.commitment():
            problem(
                f"{name}: line 1: deal_key_commitment {header.get('deal_key_commitment')!r} is not "
                f"the tournament's {key.commitment()}"
            )
        deal = header.get("deal")
        if not isinstance(deal, int) or isinstance(deal, bool) or not 0 <= deal < 1 << 64:
            problem(f"{name}: line 1: no deal number (record version {header.get('version')})")
        elif result.seed != key.match_seed(deal):
            problem(
                f"{name}: line {end.get('_line', '?')}: seed {result.seed} is not the deal key's "
                f"seed of deal {deal} ({key.match_seed(deal)})"
            )
        elif "bot_seeds" in end:  # records before bot seeds have none to check
            players = len(header.get("seating", []))
            if end["bot_seeds"] != [str(s) for s in key.bot_seeds(deal, players)]:
                problem(
                    f"{name}: line {end.get('_line', '?')}: bot_seeds {end['bot_seeds']} are not "
                    f"the deal key's bot seeds of deal {deal}"
                )
    _check_results(out, records, broken, audit)
    if schedule is not None:
        for match_id in sorted(set(schedule) - set(records) - broken):
            problem(f"matches/{match_id}.jsonl: a scheduled match without a record")
    return audit


def _published_key(out: Path, commitment: str, audit: Audit) -> DealKey | None:
    """The revealed deal key, checked against ratings.json's commitment (and the one
    given); None, with the problem noted, when it cannot be had."""
    problem = audit.problems.append
    try:
        meta = json.loads((out / "ratings.json").read_text(encoding="utf-8")).get("meta", {})
    except (OSError, ValueError, AttributeError) as exc:
        problem(f"ratings.json: cannot be read: {exc}")
        meta = {}
    published = str(meta.get("deal_key_commitment", "")).lower()
    audit.commitment = commitment or published
    if not published:
        problem("ratings.json: no deal_key_commitment in meta")
    elif commitment and published != commitment:
        problem(
            f"ratings.json: deal_key_commitment {published} is not the commitment published at "
            f"creation ({commitment})"
        )
    try:
        text = (out / "deal-key.txt").read_text(encoding="ascii")
        key = DealKey.from_hex(text)
    except (OSError, ValueError) as exc:
        problem(f"deal-key.txt: {exc}")
        return None
    if meta.get("deal_key") not in (None, key.hex()):
        problem("ratings.json: deal_key is not the key in deal-key.txt")
    wanted = commitment or published
    if wanted and not check_commitment(key.hex(), wanted):
        problem(
            f"deal-key.txt: the key's commitment {key.commitment()} is not the published "
            f"commitment {wanted}"
        )
        return None
    return key


def _check_results(
    out: Path, records: dict[str, dict[str, Any]], broken: set[str], audit: Audit
) -> None:
    """Every row of results.csv against its record, and every record against results.csv
    (rows of a match whose record did not replay are not reported again)."""
    problem = audit.problems.append
    seen: dict[str, set[int]] = {}
    try:
        with open(out / "results.csv", encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            for row in reader:
                audit.result_rows += 1
                where = f"results.csv: line {reader.line_num}"
                try:
                    match_id, seat = row["match_id"], int(row["seat"])
                    total, place = int(row["total"]), int(row["place"])
                    bot, forfeited = row["bot"], row["forfeited"] == "true"
                except (KeyError, TypeError, ValueError) as exc:
                    problem(f"{where}: not a result row ({exc})")
                    continue
                found = records.get(match_id)
                if found is None and match_id in broken:
                    continue
                if found is None:
                    problem(f"{where}: match {match_id} has no record that replays")
                    continue
                seen.setdefault(match_id, set()).add(seat)
                header, end = found["header"], found["end"]
                seating, totals = header.get("seating", []), end.get("totals", [])
                if not 0 <= seat < len(seating):
                    problem(f"{where}: match {match_id} has no seat {seat}")
                    continue
                for column, said, recorded in (
                    ("bot", bot, seating[seat]),
                    ("total", total, totals[seat]),
                    ("place", place, end.get("places", [])[seat]),
                    ("forfeited", forfeited, seat in end.get("forfeited", [])),
                ):
                    if said != recorded:
                        problem(
                            f"{where}: match {match_id} seat {seat} {column} {said}; the record has {recorded}"
                        )
    except OSError as exc:
        problem(f"results.csv: cannot be read: {exc.strerror or exc}")
        return
    for match_id, found in records.items():
        seats = len(found["header"].get("seating", []))
        if seen.get(match_id, set()) != set(range(seats)):
            problem(f"matches/{match_id}.jsonl: not every seat of the match is in results.csv")
