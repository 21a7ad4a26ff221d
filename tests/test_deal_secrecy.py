"""Deals nobody can predict, and seeds nobody sees before their reveal.

A hostile bot author has the tournament file, the docs (the derivation of docs/deal.md)
and every seed revealed so far. These tests play real tournaments (the real command or
``run_tournament``, real bot processes on loopback) and check that:

- no strategy such an author could try predicts the next match's seed;
- two tournaments of one configuration deal differently, and a resumed one deals as if it
  had never stopped;
- no message a bot receives before the reveal, no record line before the end, no log
  line and no metric holds a match's seed (in any form) or the deal key;
- in duplicate mode every seating but a deal's last withholds the seed in ``MatchEnd``,
  says why, and starts no later than the deal's other seatings end.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import hmac
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from bots.harness import collect_reports
from google.protobuf import text_format
from hypothesis import given
from hypothesis import strategies as st

from referee.league.feed import replay_feed
from referee.match.dealkey import KEY_ENV, DealKey
from referee.match.record import read_record
from referee.results.store import ResumeRefused
from referee.results.verify import verify_tournament
from referee.tournament.config import TournamentConfig, load_config
from referee.tournament.run import Shard, run_tournament
from sticheln.v1 import bot_pb2, league_pb2

BOTS = Path(__file__).parent / "bots"
ENV = {k: v for k, v in os.environ.items() if k != KEY_ENV}
ENV["PYTHONUNBUFFERED"] = "1"


def seed_forms(seed: int) -> tuple[list[bytes], list[str]]:
    """The ways a seed could show: in wire bytes, and in text."""
    wire = [
        seed.to_bytes(8, "big"),
        seed.to_bytes(8, "little"),
        bot_pb2.MatchEnd(seed=seed).SerializeToString()[1:],  # as a varint
    ]
    return wire, [str(seed), f"{seed:x}", f"{seed:X}", f"{seed:016x}"]


def key_forms(key: DealKey) -> tuple[list[bytes], list[str]]:
    return [key.secret], [key.hex(), key.hex().upper()]


def holds(text: str, wire: bytes, forms: tuple[list[bytes], list[str]]) -> bool:
    return any(f in wire for f in forms[0]) or any(t in text for t in forms[1])


def write_tournament(tmp: Path, name: str, **options: object) -> Path:
    """A tournament file of three recording bots (each capturing what it receives)."""
    table = {
        "name": name,
        "seed": 1,
        "table_size": 3,
        "matches_per_table": 6,
        "parallel": 1,
        "out": f"out-{name}",
        **options,
    }
    text = "[tournament]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    text += '[rules]\npreset = "sticheln"\nrounds = 2\n'
    text += "[clock]\ndecision_ms = 10000\nstartup_ms = 60000\n"
    # What a bot is sent is the subject, not the tier: bubblewrap, a fifth of gVisor's
    # cost per sandbox (a duplicate tournament's default is the strongest tier).
    text += '[sandbox]\nmode = "bubblewrap"\n'
    for i in range(3):
        text += (
            f'[[bots]]\nname = "rec{i}"\n'
            f'command = ["{sys.executable}", "recording_bot.py", "--marker={tmp.name}"]\n'
            f'workdir = "{BOTS}"\n'
            f'env = {{ CAPTURE = "{tmp / f"{name}-cap{i}"}", ENVIRON = "{tmp / f"{name}-env{i}"}" }}\n'
        )
    path = tmp / f"{name}.toml"
    path.write_text(text)
    return path


def captured(path: Path) -> list[bot_pb2.RefereeMessage]:
    return [
        bot_pb2.RefereeMessage.FromString(base64.b64decode(line))
        for line in path.read_text().splitlines()
    ]


@dataclass
class Played:
    tmp: Path
    out: Path
    key: DealKey
    log: str
    metrics: str


def wait_for(
    condition: Callable[[], bool], seconds: float, what: str, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None or condition(), f"the referee ended before {what}"
        assert time.monotonic() < deadline, f"no {what} in {seconds} s"
        time.sleep(0.1)  # polling files for a condition, not waiting out a race


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """A duplicate tournament (2 deals x 3 seatings, 3 matches at once) played by the real
    command, given its deal key in the environment; its JSON log lines and a scrape of its
    metrics after the last match."""
    tmp = tmp_path_factory.mktemp("secrecy")
    key = DealKey.new()
    path = write_tournament(tmp, "dup", mode="duplicate", parallel=3)
    stdout, stderr = tmp / "stdout", tmp / "stderr"
    with stdout.open("wb") as so, stderr.open("wb") as se:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "referee.cli",
                "tournament",
                str(path),
                "--log-level",
                "debug",
                "--metrics-port",
                "0",
                "--metrics-linger",
                "inf",
            ],
            stdout=so,
            stderr=se,
            env={**ENV, KEY_ENV: key.hex()},
            cwd=tmp,
        )
    try:
        wait_for(lambda: "exports in" in stdout.read_text(), 300, "finished tournament", proc)
        found = re.search(r"metrics on (http://\S+/metrics)", stderr.read_text())
        assert found, stderr.read_text()[:2000]
        with urllib.request.urlopen(found.group(1), timeout=10) as response:
            metrics = response.read().decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    collect_reports(tmp)  # the captures and environments the bots told of in their logs
    return Played(tmp, tmp / "out-dup", key, stderr.read_text(), metrics)


def records(out: Path) -> list[list[dict[str, object]]]:
    return [list(read_record(p)) for p in sorted((out / "matches").glob("*.jsonl"))]


def test_no_message_before_its_reveal_holds_a_seed_or_the_key(played: Played) -> None:
    key = played.key
    seeds = {deal: key.match_seed(deal) for deal in (0, 1)}
    for i in range(3):
        messages = captured(played.tmp / f"dup-cap{i}")
        ends = [m.match_end for m in messages if m.HasField("match_end")]
        assert len(ends) == 6  # every bot sits at every match of the one table
        withheld = [e for e in ends if e.seed_withheld]
        assert len(withheld) == 4
        for e in withheld:
            assert e.seed == 0 and e.seed_nonce == b""
            assert "played again by a later seating" in e.seed_withheld
        revealed = sorted(e.seed for e in ends if not e.seed_withheld)
        assert revealed == sorted(seeds.values())
        for m in messages:
            wire, text = m.SerializeToString(), text_format.MessageToString(m)
            assert not holds(text, wire, key_forms(key)), "a message holds the deal key"
            for seed in seeds.values():
                if holds(text, wire, seed_forms(seed)):
                    # Only the MatchEnd of the deal's last seating reveals it.
                    assert m.HasField("match_end") and not m.match_end.seed_withheld, m
                    assert m.match_end.seed == seed


def test_every_record_is_sealed_until_its_end(played: Played) -> None:
    key = played.key
    found = records(played.out)
    assert len(found) == 6
    withheld = 0
    for lines in found:
        header, end = lines[0], lines[-1]
        assert end["type"] == "end"
        deal = header["deal"]
        assert isinstance(deal, int)
        seed = key.match_seed(deal)
        assert end["seed"] == str(seed)
        assert header["deal_key_commitment"] == key.commitment()
        assert "seed" not in header and "nonce" not in header
        withheld += bool(end.get("seed_withheld"))
        for line in lines[:-1]:
            text = json.dumps(line)
            assert not holds(text, b"", seed_forms(seed)), line
        for line in lines:
            assert not holds(json.dumps(line), b"", key_forms(key))
    assert withheld == 4


def test_a_bot_is_told_a_random_match_id_that_names_no_deal_or_seating(
    played: Played,
) -> None:
    headers = [lines[0] for lines in records(played.out)]
    real = {str(h["match_id"]) for h in headers}
    shown = {str(h["bot_match_id"]) for h in headers}
    starts: list[str] = []
    welcomes: list[str] = []
    for i in range(3):
        for m in captured(played.tmp / f"dup-cap{i}"):
            if m.HasField("match_start"):
                starts.append(m.match_start.match_id)
            elif m.HasField("welcome"):
                welcomes.append(m.welcome.message)
    assert len(starts) == 18  # six matches, each of the three bots in each
    # Every seat of a match is told its one id; each match's differs, and none is the
    # tournament's own (which counts matches, and so names the deal and the seating).
    assert set(starts) == shown and len(shown) == len(headers) == 6
    assert all(re.fullmatch(r"[0-9a-f]{16}", m) for m in shown)
    assert not shown & real
    for text in starts + welcomes:
        assert not any(r in text for r in real), text
        assert "dup" not in text, text


def test_every_seating_of_a_deal_hands_a_seat_the_same_bot_seed(played: Played) -> None:
    key = played.key
    # The bots are sent a random id per match; the record's header keeps it beside its own.
    deal_of = {lines[0]["bot_match_id"]: lines[0]["deal"] for lines in records(played.out)}
    sent: dict[tuple[int, int], set[int]] = {}
    bots_per_seat: dict[tuple[int, int], set[int]] = {}
    for i in range(3):
        for m in captured(played.tmp / f"dup-cap{i}"):
            if m.HasField("match_start"):
                start = m.match_start
                where = (deal_of[start.match_id], start.seat)
                sent.setdefault(where, set()).add(start.bot_seed)
                bots_per_seat.setdefault(where, set()).add(i)
    assert sorted(sent) == [(d, s) for d in (0, 1) for s in range(3)]
    for (deal, seat), seeds in sent.items():
        # Three seatings rotate three bots through the seat: each got the seat's one seed.
        assert len(bots_per_seat[deal, seat]) == 3
        assert seeds == {key.bot_seed(deal, seat)}
    assert len({seed for seeds in sent.values() for seed in seeds}) == 6
    for lines in records(played.out):
        deal = lines[0]["deal"]
        assert lines[-1]["bot_seeds"] == [str(key.bot_seed(deal, s)) for s in range(3)]


def test_no_log_line_or_metric_holds_a_seed_or_the_key(played: Played) -> None:
    key = played.key
    forms = [seed_forms(key.match_seed(d)) for d in (0, 1)] + [key_forms(key)]
    json_lines = [json.loads(x) for x in played.log.splitlines() if x.startswith("{")]
    assert len(json_lines) > 10
    # The commitment is published in the tournament's first log line.
    assert json_lines[0]["event"] == "tournament_start"
    assert json_lines[0]["deal_key_commitment"] == key.commitment()
    assert "sticheln_matches_finished 6.0" in played.metrics
    for form in forms:
        assert not holds(played.log, b"", form)
        assert not holds(played.metrics, b"", form)


def test_the_key_is_only_in_the_database_and_the_final_exports(played: Played) -> None:
    key = played.key
    holding = sorted(
        p.name
        for p in played.out.rglob("*")
        if p.is_file() and holds(p.read_bytes().decode("latin-1"), p.read_bytes(), key_forms(key))
    )
    assert holding == ["deal-key.txt", "ratings.json", "report.html", "tournament.db"]
    assert (played.out / "deal-key.txt").read_text() == key.hex() + "\n"
    assert verify_tournament(played.out).clean


def test_bots_never_inherit_the_deal_key(played: Played) -> None:
    environs = [
        json.loads(line)
        for i in range(3)
        for line in (played.tmp / f"dup-env{i}").read_text().splitlines()
    ]
    # The start check (one process per bot), then duplicate mode's fresh processes for
    # every match: none of them sees the key.
    assert len(environs) == 3 + 3 * 6
    for env in environs:
        assert KEY_ENV not in env
        assert not any(played.key.hex() in v.lower() for v in env.values())


def test_a_deals_last_seating_starts_after_its_other_seatings_ended(played: Played) -> None:
    with sqlite3.connect(played.out / "tournament.db") as con:
        rows = con.execute("SELECT idx, deal, started_at, finished_at FROM matches").fetchall()
    assert len(rows) == 6
    for deal in (0, 1):
        seatings = sorted((r for r in rows if r[1] == deal), key=lambda r: r[0])
        *others, last = seatings
        assert all(last[2] >= o[3] for o in others), seatings


def test_a_spectator_sees_the_seed_at_the_end_only_and_never_a_withheld_one(
    played: Played,
) -> None:
    async def watch(lines: list[dict[str, object]]) -> list[league_pb2.WatchMatchResponse]:
        feed = replay_feed("m", lines)
        return [m async for m in feed.watch()]

    for lines in records(played.out):
        messages = asyncio.run(watch(lines))
        end = lines[-1]
        seed = int(str(end["seed"]))
        for m in messages[:-1]:
            assert not holds(
                text_format.MessageToString(m), m.SerializeToString(), seed_forms(seed)
            )  # type: ignore[attr-defined]
        last = messages[-1].end  # type: ignore[attr-defined]
        assert last.seed == (0 if end.get("seed_withheld") else seed)


# -- prediction ---------------------------------------------------------------------------


def old_formula(public_seed: int, deal: int) -> int:
    """The derivation deals used to come from: a hash of the public seed."""
    digest = hashlib.sha256(
        b"sticheln/tournament/v1" + public_seed.to_bytes(8, "big") + deal.to_bytes(8, "big")
    ).digest()
    return int.from_bytes(digest[:8], "big")


def docs_formula(key: bytes, deal: int) -> int:
    """docs/deal.md's derivation, with a key the attacker guesses."""
    digest = hmac.digest(key, b"sticheln/deal/v2" + deal.to_bytes(8, "big"), "sha256")
    return int.from_bytes(digest[:8], "big")


def guessed_keys(name: str, public_seed: int, config_text: str) -> list[bytes]:
    """Keys an attacker might hope the referee made from what is public."""
    guesses = [bytes(32), hashlib.sha256(config_text.encode()).digest()]
    for text in (name, str(public_seed), f"{name}/{public_seed}"):
        guesses.append(hashlib.sha256(text.encode()).digest())
    guesses += [t.to_bytes(32, "big") for t in range(1 << 10)]
    return guesses


def predictions(
    name: str, public_seed: int, config_text: str, revealed: list[int], deal: int
) -> set[int]:
    """Every guess at deal ``deal``'s seed, from the config, the docs and the seeds so far."""
    guesses = {old_formula(public_seed, deal)}
    guesses |= {docs_formula(k, deal) for k in guessed_keys(name, public_seed, config_text)}
    guesses |= set(revealed)  # a seed used again
    guesses |= {s + 1 for s in revealed} | {s ^ 1 for s in revealed}
    if revealed:  # a seed chained from the last one
        last = revealed[-1].to_bytes(8, "big")
        guesses.add(int.from_bytes(hashlib.sha256(last).digest()[:8], "big"))
        guesses.add(docs_formula(last.rjust(32, b"\0"), deal))
    return guesses


def brute_force_public_seed(revealed: list[int], bits: int = 16) -> list[int]:
    """Small public seeds under which the old formula gives a revealed seed."""
    wanted = set(revealed)
    return [
        t
        for t in range(1 << bits)
        if any(old_formula(t, d) in wanted for d in range(len(revealed)))
    ]


def small_tournament(tmp: Path, name: str) -> Path:
    path = write_tournament(tmp, name, matches_per_table=6, parallel=2)
    return path


def play(config: TournamentConfig, indices: list[int] | None = None) -> None:
    outcome = asyncio.run(run_tournament(config, progress=False, workers=1, indices=indices))
    assert outcome.shard_finished == outcome.shard_planned


def seeds_of(out: Path) -> list[int]:
    """The seeds the matches revealed, in deal order (every match its own deal here)."""
    by_deal = {int(str(x[0]["deal"])): int(str(x[-1]["seed"])) for x in records(out)}
    return [by_deal[d] for d in sorted(by_deal)]


@pytest.mark.timeout(300)
def test_a_hostile_predictor_fails_and_one_config_deals_differently_twice(
    tmp_path: Path,
) -> None:
    path = small_tournament(tmp_path, "one")
    first = load_config(path)
    # The same file, run again into another folder and database.
    second = dataclasses.replace(
        first, out=tmp_path / "out-two", database=str(tmp_path / "out-two" / "tournament.db")
    )
    play(first)
    play(second)
    seeds = seeds_of(tmp_path / "out-one")
    assert len(seeds) == 6
    config_text = path.read_text()
    for deal in range(1, len(seeds)):
        guesses = predictions("one", 1, config_text, seeds[:deal], deal)
        assert seeds[deal] not in guesses, f"deal {deal} was predicted"
    assert brute_force_public_seed(seeds) == []
    # Two tournaments of the same file: other keys, other deals, other hands.
    other = seeds_of(tmp_path / "out-two")
    assert not set(seeds) & set(other)
    hands = [
        next(x for x in records(tmp_path / f"out-{n}")[0] if x["type"] == "round_start")["hands"]
        for n in ("one", "two")
    ]
    assert hands[0] != hands[1]


@pytest.mark.timeout(300)
def test_a_resumed_tournament_deals_from_the_key_it_was_created_with(tmp_path: Path) -> None:
    config = load_config(small_tournament(tmp_path, "res"))
    play(config, indices=[0, 1])
    out = tmp_path / "out-res"
    before = {p.name: p.read_text() for p in (out / "matches").glob("*.jsonl")}
    assert len(before) == 2 and not (out / "deal-key.txt").exists()
    play(config)
    after = {p.name: p.read_text() for p in (out / "matches").glob("*.jsonl")}
    assert len(after) == 6
    assert all(after[n] == text for n, text in before.items())  # not played again
    commitments = {json.loads(t.split("\n", 1)[0])["deal_key_commitment"] for t in after.values()}
    key = DealKey.from_hex((out / "deal-key.txt").read_text())
    assert commitments == {key.commitment()}
    audit = verify_tournament(out)
    assert audit.clean, audit.problems  # every seed, before and after the resume, from one key
    # A database whose finished matches were dealt without a key (an older referee) is not
    # resumed with a new key: its deals would follow from two derivations.
    with sqlite3.connect(out / "tournament.db") as con:
        con.execute("DELETE FROM deal_keys")
        con.execute("UPDATE matches SET status = 'planned' WHERE idx = 5")
    with pytest.raises(ResumeRefused, match="started by an older referee that dealt from the"):
        play(config)


@given(st.binary(min_size=32, max_size=32))
def test_a_deal_key_never_prints_itself(secret: bytes) -> None:
    key = DealKey(secret)
    for shown in (repr(key), str(key), f"{key}", f"{[key]}", f"{ {'k': key} }"):
        assert key.hex() not in shown.lower()
        assert key.commitment()[:16] in shown


@pytest.mark.timeout(300)
def test_a_deals_last_seating_reveals_only_when_every_other_shard_is_done(
    tmp_path: Path,
) -> None:
    """One deal, three seatings (matches 0, 1, 2); shard 0/2 plays 0 and 2, shard 1/2 plays 1,
    on one database. Match 2 reveals the seed only if match 1 has ended before it starts."""
    base = load_config(write_tournament(tmp_path, "sh", mode="duplicate", matches_per_table=3))
    key = DealKey.new()

    def run(name: str, shards: list[int]) -> dict[int, dict[str, object]]:
        out = tmp_path / name
        config = dataclasses.replace(base, out=out, database=str(out / "tournament.db"))
        for i in shards:
            outcome = asyncio.run(
                run_tournament(config, progress=False, workers=1, shard=Shard(i, 2), deal_key=key)
            )
            assert outcome.shard_finished == outcome.shard_planned
        return {int(str(x[0]["match_id"])[-5:]): x[-1] for x in records(out)}

    ends = run("first-0", [0])
    assert sorted(ends) == [0, 2]
    assert "played again by a later seating" in str(ends[0]["seed_withheld"])
    assert "another shard" in str(ends[2]["seed_withheld"])
    ends = run("first-1", [1, 0])
    assert "played again by a later seating" in str(ends[1]["seed_withheld"])
    assert "seed_withheld" not in ends[2]  # matches 0 and 1 had ended: 2 reveals
    assert all(e["seed"] == str(key.match_seed(0)) for e in ends.values())
    assert verify_tournament(tmp_path / "first-1").clean
