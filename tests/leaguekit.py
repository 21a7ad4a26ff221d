"""Test helpers for the league: a real ``referee serve`` process, real bot processes,
and the league's database (a SQLite file or a PostgreSQL database) read directly.

Not a test module: the league tests import it. Everything talks gRPC over 127.0.0.1, and
every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
import psycopg
from machine import stretched

from referee.match.record import read_record
from referee.rules import parse_card
from sticheln.v1 import league_pb2, league_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
REFEREE = [sys.executable, "-m", "referee.cli"]
ADMIN_TOKEN = "test-admin-token-0123456789"
ADMIN = (("authorization", f"Bearer {ADMIN_TOKEN}"),)
T = TypeVar("T")


def wait_for(check: Callable[[], T | None], timeout: float, what: str, every: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after
    ``timeout`` seconds of a quiet machine (stretched on a loaded one: a hang detector)."""
    timeout = stretched(timeout)
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def write_config(
    path: Path,
    league: dict[str, Any],
    rules: dict[str, Any] | None = None,
    clock: dict[str, int] | None = None,
) -> Path:
    """A league file with ``[league]`` ``league`` (port 0, a short publish interval: each
    publish fits the standings in a process of its own, a third of a CPU second)."""
    table = {"port": 0, "publish_interval_s": 0.5, "bootstrap": 20, "out": "out", **league}
    lines = ["[league]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in table.items()]
    lines += ["[rules]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in (rules or {"preset": "sticheln"}).items()]
    lines += ["[clock]"]
    # Ten times and more what an honest bot needs on a loaded machine (tests/bots/harness.py).
    clock = {"decision_ms": 10_000, "time_bank_ms": 4000, **(clock or {})}
    lines += [f"{k} = {v}" for k, v in clock.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Serve:
    """A ``referee serve`` process; :attr:`address` is the address it printed."""

    def __init__(
        self,
        config: Path,
        log: Path,
        extra: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        env = {**os.environ, "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN, **(env or {})}
        self.log = log
        self.proc = subprocess.Popen(
            [*REFEREE, "serve", "--config", str(config), *extra],
            stdout=subprocess.PIPE,
            stderr=log.open("ab"),
            env=env,
            cwd=ROOT,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        out = self.proc.stdout
        threading.Thread(target=lambda: [lines.put(x) for x in out], daemon=True).start()
        #: The lines printed after the first (``web on URL`` when the league serves pages).
        self.lines = lines
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"referee serve printed no address; log: {self.tail()}") from None
        assert " serving on " in first, first
        self.address = first.rsplit(" ", 1)[1].strip()
        self.channel = grpc.insecure_channel(self.address)
        self.league = league_pb2_grpc.LeagueStub(self.channel)

    def tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then the exit status."""
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(
                f"referee serve did not stop on SIGTERM; log: {self.tail()}"
            ) from None

    def register(self, name: str, owner: str = "") -> str:
        """Register ``name`` (its owner: ``owner``, by default one of its own, so that the
        league's seating rules never keep two test bots apart); its bot token."""
        reply = self.league.RegisterBot(
            league_pb2.RegisterBotRequest(
                name=name, owner=owner or f"{name}-owner", description=f"{name} bot"
            ),
            metadata=ADMIN,
            timeout=10,
        )
        return reply.token

    def standings(self) -> league_pb2.StandingsResponse:
        return self.league.Standings(league_pb2.StandingsRequest(), timeout=10)

    def recent(self, limit: int = 500) -> league_pb2.RecentMatchesResponse:
        return self.league.RecentMatches(league_pb2.RecentMatchesRequest(limit=limit), timeout=10)


@contextmanager
def serving(
    config: Path, log: Path, extra: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> Iterator[Serve]:
    """A ``referee serve`` process for the block (``env`` added to its environment); it
    must exit 0 on SIGTERM at the end."""
    s = Serve(config, log, extra, env)
    try:
        yield s
    finally:
        code = s.stop()
    assert code == 0, f"referee serve exited {code}; log: {s.tail()}"


#: The sample bots by kind: the command, given the common options.
KINDS = {
    "random": [sys.executable, str(SAMPLES / "python" / "random_bot.py")],
    "heuristic": [sys.executable, str(SAMPLES / "python" / "heuristic_bot.py")],
    "node": ["node", str(SAMPLES / "node" / "bot.js")],
    # The random sample bot thinking THINK_MS per decision: matches that last long enough
    # to stop something in the middle of one.
    "slow": [sys.executable, str(ROOT / "tests" / "bots" / "slow_random_bot.py")],
}


class Bots:
    """Sample bot processes joined to a league; every one is killed at the end."""

    def __init__(self, address: str, logs: Path) -> None:
        self.address = address
        self.logs = logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self, kind: str, name: str, token: str, seats: int = 1, think_ms: int = 0
    ) -> subprocess.Popen[bytes]:
        cmd = [*KINDS[kind], "--referee", self.address, "--token", token, "--name", name]
        cmd += ["--seats", str(seats)]
        env = {**os.environ, "THINK_MS": str(think_ms)}
        log = (self.logs / f"bot-{name}.log").open("ab")
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, cwd=ROOT)
        self.procs[name] = proc
        return proc

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait(10)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
        self.procs.clear()


@contextmanager
def bots(address: str, logs: Path) -> Iterator[Bots]:
    b = Bots(address, logs)
    try:
        yield b
    finally:
        b.close()


# -- the database, read directly ------------------------------------------------------------


@dataclass(frozen=True)
class LeagueDb:
    """Where a league test keeps its database: ``target`` (a SQLite file or a PostgreSQL
    URL) and the ``[league]`` keys that put it there (none for the default file)."""

    kind: str
    target: Path | str
    table: dict[str, Any] = field(default_factory=dict)


def sqlite_db(folder: Path) -> LeagueDb:
    """The default: ``out/league.db`` next to a league file in ``folder`` (``out = "out"``)."""
    return LeagueDb("sqlite", folder / "out" / "league.db")


def postgres_db(url: str) -> LeagueDb:
    """A database on the throwaway PostgreSQL server, given in the league file."""
    return LeagueDb("postgresql", url, {"database": url})


def query(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of one query (``?`` parameters) on the league's database, from a
    connection of its own: what another process reading the database sees."""
    if isinstance(db, str) and "://" in db:
        with psycopg.connect(db, autocommit=True, connect_timeout=10) as pg:
            return [tuple(r) for r in pg.execute(sql.replace("?", "%s"), params).fetchall()]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def db_rows(db: Path | str, league: str) -> list[dict[str, Any]]:
    """Every finished match: idx, match_id, seed, finish order and its seats' rows."""
    matches = query(
        db,
        "SELECT idx, match_id, seed, finish_order, status, seating FROM matches "
        "WHERE tournament = ? ORDER BY idx",
        (league,),
    )
    seats = query(
        db,
        "SELECT idx, seat, bot, total, place, forfeited FROM results WHERE tournament = ? "
        "ORDER BY idx, seat",
        (league,),
    )
    by_idx: dict[int, list[tuple[Any, ...]]] = {}
    for row in seats:
        by_idx.setdefault(row[0], []).append(row)
    out = []
    for idx, match_id, seed, order, status, planned in matches:
        rows = by_idx.get(idx, [])
        out.append(
            {
                "idx": idx,
                "match_id": match_id,
                "seed": int(seed),
                "finish_order": order,
                "status": status,
                "planned_seating": json.loads(planned),
                "seating": [r[2] for r in rows],
                "totals": [r[3] for r in rows],
                "places": [r[4] for r in rows],
                "forfeited": [r[2] for r in rows if r[5]],
            }
        )
    return out


def finished(db: Path | str, league: str) -> list[dict[str, Any]]:
    """The finished matches, in finishing order."""
    done = [m for m in db_rows(db, league) if m["status"] == "finished"]
    return sorted(done, key=lambda m: m["finish_order"])


def fetched_record(
    league: league_pb2_grpc.LeagueStub, match_id: str, folder: Path
) -> list[dict[str, Any]]:
    """A finished match's record as the League service hands it out (``GetMatchRecord``),
    read back line by line through a file in ``folder``, as a spectator would save it."""
    record = league.GetMatchRecord(league_pb2.GetMatchRecordRequest(match_id=match_id), timeout=10)
    path = folder / "record.jsonl"
    path.write_text(record.record_jsonl, encoding="utf-8")
    return list(read_record(path))


# -- what a spectator may see -----------------------------------------------------------------


def oracle(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What WatchMatch must send for a match record, restated from docs/rules.md rule 11, "what
    each seat may know": the deal is hidden (only the dealer is public), each pick is public
    once every seat has picked (under secret visibility only once the round is scored),
    plays, tricks, scores and faults (without detail) are public; the seed once completed."""
    header = lines[0]
    secret = header["rules"]["pain_visibility"] == "secret"
    out: list[tuple[Any, ...]] = [
        ("match", header["match_id"], tuple(header["seating"]), header["commitment"])
    ]
    picks: dict[int, list[list[int]]] = {}
    for line in lines[1:]:
        kind, r = line["type"], line.get("round", 0)
        if kind == "round_start":
            out.append(("dealt", r, line["dealer"]))
        elif kind == "reveal":
            picks[r] = [[parse_card(c) for c in p] for p in line["pain"]]
            out.append(("revealed", r, [[] for _ in picks[r]] if secret else picks[r]))
        elif kind == "play":
            out.append(("play", r, line["seat"], parse_card(line["card"])))
        elif kind == "trick":
            cards = [parse_card(c) for c in line["cards"]]
            out.append(("trick", r, line["leader"], cards, line["winner"], line["tie"]))
        elif kind == "round_end":
            out.append(("scored", r, line["scores"], line["totals"], picks.pop(r, [])))
        elif kind == "fault":
            out.append(
                ("fault", r, line["seat"], line["reason"], line["strikes"], line["forfeited"])
            )
        elif kind == "end":
            done = line["reason"] == "completed"
            seed, nonce = (int(line["seed"]), line["nonce"]) if done else (0, "")
            out.append(("end", line["totals"], line["places"], line["reason"], seed, nonce))
    return out


def watched(messages: list[league_pb2.WatchMatchResponse]) -> list[tuple[Any, ...]]:
    """The WatchMatch messages in :func:`oracle`'s terms (every field they carry)."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        kind = m.WhichOneof("kind")
        if kind == "match":
            w = m.match
            out.append(("match", w.match_id, tuple(w.seating), w.seed_commitment.hex()))
        elif kind == "end":
            e = m.end
            out.append(
                ("end", list(e.totals), list(e.places), e.reason, e.seed, e.seed_nonce.hex())
            )
        else:
            ev, r = m.event, m.event.round_index
            what = ev.WhichOneof("kind")
            if what == "round_dealt":
                out.append(("dealt", r, ev.round_dealt.dealer))
            elif what == "pain_revealed":
                out.append(("revealed", r, [list(p.cards) for p in ev.pain_revealed.pain]))
            elif what == "card_played":
                out.append(("play", r, ev.card_played.seat, ev.card_played.card))
            elif what == "trick":
                t = ev.trick
                out.append(("trick", r, t.leader, list(t.cards), t.winner, t.tie))
            elif what == "round_scored":
                s = ev.round_scored
                picks = [list(p.cards) for p in s.pain]
                out.append(("scored", r, list(s.scores), list(s.totals), picks))
            elif what == "fault":
                f = ev.fault
                out.append(("fault", r, f.seat, f.reason, f.strikes, f.forfeited))
            else:
                raise AssertionError(f"unexpected event {ev}")
    return out


def assert_nothing_hidden(
    messages: list[league_pb2.WatchMatchResponse], lines: list[dict[str, Any]]
) -> None:
    """No hand card before it is played, no set-aside card, no pick before its reveal."""
    header = lines[0]
    secret = header["rules"]["pain_visibility"] == "secret"
    deals = {x["round"]: x for x in lines if x["type"] == "round_start"}
    picks = {x["round"]: x["pain"] for x in lines if x["type"] == "reveal"}
    played: dict[int, set[int]] = {}
    public_picks: set[int] = set()
    for m in messages:
        if m.WhichOneof("kind") != "event":
            continue
        ev, r = m.event, m.event.round_index
        what = ev.WhichOneof("kind")
        seen = played.setdefault(r, set())
        if what == "round_dealt":
            public_picks = set()
        cards: list[int] = []
        if what == "card_played":
            seen.add(ev.card_played.card)
            cards = [ev.card_played.card]
        elif what == "trick":
            cards = list(ev.trick.cards)
        elif what == "pain_revealed":
            cards = [c for p in ev.pain_revealed.pain for c in p.cards]
            if not secret:
                public_picks |= set(cards)
        elif what == "round_scored":
            cards = [c for p in ev.round_scored.pain for c in p.cards]
            public_picks |= set(cards)
        set_aside = {parse_card(c) for c in deals[r]["set_aside"]}
        pick_cards = {parse_card(c) for p in picks.get(r, []) for c in p}
        for c in cards:
            assert c not in set_aside, f"set-aside card {c} shown in round {r}: {ev}"
            if c in pick_cards:
                assert c in public_picks or c in seen, f"pick {c} shown before its reveal: {ev}"
            else:
                assert c in seen, f"card {c} shown before it was played in round {r}: {ev}"
