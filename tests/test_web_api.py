"""The web API without a browser: a real ``referee serve`` with its web port and sample
bot processes, plain HTTP over 127.0.0.1.

Read-only routes, security headers, clear errors, documents that agree with the database
and the records, and a web spy: while a match runs, every API route is crawled and no
hand of that match may appear anywhere; its live stream carries exactly the public events.
The league keeps its data on SQLite, then on PostgreSQL.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from leaguekit import LeagueDb, Serve, bots, finished, oracle, wait_for
from prometheus_client.parser import text_string_to_metric_families
from webkit import get_json, request, sse_events, web_league

from referee.match.record import read_record
from referee.rules import parse_card

LEAGUE = "webapi"
ROUTES = [
    "/",
    "/bot",
    "/head-to-head",
    "/matches",
    "/match",
    "/static/app.css",
    "/api/info",
    "/api/standings",
    "/api/bots",
    "/api/bot",
    "/api/head-to-head",
    "/api/matches",
    "/api/updates",
]


class League:
    def __init__(self, serve: Serve, url: str, out: Path, db: LeagueDb) -> None:
        self.serve, self.url, self.out, self.db = serve, url, out, db

    def get(self, path: str) -> Any:
        return get_json(self.url + path)

    def db_finished(self) -> list[dict[str, Any]]:
        return finished(self.db.target, LEAGUE)

    def record(self, match_id: str) -> list[dict[str, Any]]:
        lines = list(read_record(self.out / "matches" / f"{match_id}.jsonl"))
        for line in lines:
            line.pop("_line", None)
        return lines

    def running(self) -> str:
        """A running match's id (waits for one to start)."""
        found: list[str] = wait_for(
            lambda: [m["match_id"] for m in self.get("/api/matches")["running"]],
            60,
            "a running match",
        )
        return found[0]


@pytest.fixture(scope="module")
def league(module_league_db: tuple[Path, LeagueDb]) -> Iterator[League]:
    tmp, db = module_league_db
    table = {"name": LEAGUE, "table_size": 3, "parallel": 1, "metrics_port": 0, **db.table}
    with web_league(tmp, table) as (serve, url), bots(serve.address, tmp) as b:
        # Every match seats all three; the slow one makes each last a few seconds.
        for kind, name, think in (
            ("heuristic", "heur", 0),
            ("random", "rand", 0),
            ("slow", "slow", 25),
        ):
            b.start(kind, name, serve.register(name), think_ms=think)
        lg = League(serve, url, tmp / "out", db)
        wait_for(lambda: len(lg.db_finished()) >= 2, 120, "two finished matches")
        yield lg


def test_every_route_is_read_only_and_sends_a_content_security_policy(league: League) -> None:
    mid = league.db_finished()[0]["match_id"]
    routes = [*ROUTES, f"/api/matches/{mid}", f"/api/matches/{mid}/record.jsonl"]
    for path in routes:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert request(league.url + path, method).status == 405, (method, path)
    for path in [p for p in routes if p != "/api/updates"] + ["/api/nothing-here"]:
        reply = request(league.url + path)
        csp = reply.headers.get("Content-Security-Policy", "")
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, path
        assert "unsafe-inline" not in csp
        assert reply.headers.get("X-Content-Type-Options") == "nosniff", path
    pages = request(league.url + "/").body.decode()
    assert "<script>" not in pages and 'type="module" src="/static/' in pages


def test_bad_input_gets_a_one_line_error(league: League) -> None:
    cases = {
        "/api/matches?limit=many": (400, "limit='many' is not allowed; allowed: 1 to 500"),
        "/api/matches?limit=0": (400, "limit='0' is not allowed"),
        "/api/bot": (400, "the query parameter 'name'"),
        "/api/bot?name=nobody": (404, "no bot 'nobody'"),
        "/api/matches/nope-000001": (404, "no finished match 'nope-000001'"),
        "/static/secret.txt": (404, "no file 'secret.txt'"),
    }
    for path, (status, message) in cases.items():
        reply = request(league.url + path)
        assert reply.status == status, path
        error = reply.json()["error"]
        assert message in error and "\n" not in error, (path, error)


def test_standings_matches_and_bots_agree_with_the_database(league: League) -> None:
    db = league.db_finished()

    def listed() -> Any:
        # The list may be up to a second behind the database.
        found = league.get("/api/matches?limit=500")
        ids = {m["match_id"] for m in found["finished"]}
        return found if {m["match_id"] for m in db} <= ids else None

    matches = wait_for(listed, 10, "the finished matches listed")
    ids = [m["match_id"] for m in matches["finished"]]
    assert ids == sorted(ids, reverse=True)  # newest first
    by_id = {m["match_id"]: m for m in db}
    for m in matches["finished"]:
        if m["match_id"] in by_id:
            row = by_id[m["match_id"]]
            assert (m["seating"], m["totals"], m["places"]) == (
                row["seating"],
                row["totals"],
                row["places"],
            )
    assert matches["progress"]["planned"] is None
    assert matches["progress"]["finished"] >= len(db)
    wait_for(lambda: league.get("/api/standings")["matches"] > 0, 30, "published standings")
    standings = league.get("/api/standings")["standings"]
    assert {s["bot"] for s in standings} == {"heur", "rand", "slow"}
    # Ranked bots first, in rank order; provisional ones after them, unranked.
    ranks = [s["rank"] for s in standings if not s["provisional"]]
    assert ranks == sorted(ranks) and None not in ranks
    assert all(s["rank"] is None for s in standings if s["provisional"])
    provisional = [s["provisional"] for s in standings]
    assert provisional == sorted(provisional)
    for s in standings:
        # An end the data cannot bound is open: no number, and the flag says so.
        assert (s["ci_low"] is None) == s["ci_low_open"]
        assert (s["ci_high"] is None) == s["ci_high_open"]
        if not (s["ci_low_open"] or s["ci_high_open"]):
            assert s["ci_low"] <= s["ci_high"]
        assert s["live_elo"] is not None and s["matches"] > 0
    names = {b["name"]: b for b in league.get("/api/bots")["bots"]}
    assert set(names) == {"heur", "rand", "slow"}
    assert names["slow"]["description"] == "slow bot" and names["slow"]["connected_streams"] == 1
    # The owner's address is the administrator's to know, not the public's.
    assert all("owner" not in b for b in names.values())
    detail = league.get("/api/bot?name=heur")
    assert detail["matches"] == len(detail["rating_history"]) >= 2
    assert detail["think"]["decision_ms"] == 10_000  # leaguekit's clock
    assert detail["think"]["decisions"] > 0
    assert [p["q"] for p in detail["think"]["percentiles"]] == [0.5, 0.9, 0.99, 1.0]
    h2h = league.get("/api/head-to-head")
    assert h2h["bots"] == ["heur", "rand", "slow"]
    for i in range(3):
        assert h2h["cells"][i][i] is None
        for j in range(3):
            if i != j:
                a, b = h2h["cells"][i][j], h2h["cells"][j][i]
                assert a["matches"] == b["matches"]
                assert a["better_share"] + b["better_share"] == pytest.approx(1.0)
                assert a["score_diff"] == pytest.approx(-b["score_diff"])


def test_the_viewer_document_and_the_download_equal_the_record(league: League) -> None:
    mid = league.db_finished()[0]["match_id"]
    doc = league.get(f"/api/matches/{mid}")
    lines = league.record(mid)
    assert doc["seating"] == lines[0]["seating"]
    # The seed is in the end line (record version 2) or the header (version 1).
    assert doc["seed"] == next(str(x["seed"]) for x in reversed(lines) if "seed" in x)
    dealt = [x for x in lines if x["type"] == "round_start"]
    tricks = [x for x in lines if x["type"] == "trick"]
    ends = [x for x in lines if x["type"] == "round_end"]
    assert [r["hands"] for r in doc["rounds"]] == [x["hands"] for x in dealt]
    shown = [
        (r["round"], t["cards"], t["winner"], t["reason"])
        for r in doc["rounds"]
        for t in r["tricks"]
    ]
    assert shown == [(x["round"], x["cards"], x["winner"], x["reason"]) for x in tricks]
    assert [r["scores"] for r in doc["rounds"]] == [x["scores"] for x in ends]
    # After the last trick of a round every hand is empty (the pain card is set aside).
    assert all(h == [] for r in doc["rounds"] for h in r["tricks"][-1]["hands_after"])
    download = request(f"{league.url}/api/matches/{mid}/record.jsonl")
    assert download.status == 200
    assert download.body == (league.out / "matches" / f"{mid}.jsonl").read_bytes()
    assert f'filename="{mid}.jsonl"' in download.headers["Content-Disposition"]


def _oracle_terms(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The web's live events in :func:`leaguekit.oracle`'s terms."""
    cards = lambda xs: [parse_card(c) for c in xs]  # noqa: E731
    out: list[tuple[Any, ...]] = []
    for e in events:
        t, r = e["type"], e.get("round")
        if t == "match":
            out.append(("match", e["match_id"], tuple(e["seating"]), e["commitment"]))
        elif t == "dealt":
            out.append(("dealt", r, e["dealer"]))
        elif t == "revealed":
            out.append(("revealed", r, [cards(p) for p in e["pain"]]))
        elif t == "play":
            out.append(("play", r, e["seat"], parse_card(e["card"])))
        elif t == "trick":
            out.append(("trick", r, e["leader"], cards(e["cards"]), e["winner"], e["tie"]))
        elif t == "scored":
            out.append(("scored", r, e["scores"], e["totals"], [cards(p) for p in e["pain"]]))
        elif t == "fault":
            out.append(("fault", r, e["seat"], e["reason"], e["strikes"], e["forfeited"]))
        elif t == "end":
            seed = int(e.get("seed", 0))
            out.append(("end", e["totals"], e["places"], e["reason"], seed, e.get("nonce", "")))
    return out


def test_web_spy_finds_no_hand_of_a_running_match(league: League) -> None:
    """Crawl every API route while a match runs; its hands appear nowhere, its record is
    refused, and its live stream carries exactly the public events of its record."""
    running = league.running()
    live: list[dict[str, Any]] = []
    reader = threading.Thread(
        target=lambda: live.extend(
            sse_events(f"{league.url}/api/matches/{running}/live", 10_000, 60)
        )
    )
    reader.start()
    bodies: dict[str, bytes] = {}
    crawls = 0
    while any(m["match_id"] == running for m in league.get("/api/matches")["running"]):
        paths = list(ROUTES)
        paths += [
            f"/api/bot?name={urllib.parse.quote(b['name'])}"
            for b in league.get("/api/bots")["bots"]
        ]
        for m in league.get("/api/matches?limit=500")["finished"][:5]:
            paths += [f"/api/matches/{m['match_id']}", f"/api/matches/{m['match_id']}/record.jsonl"]
        for path in paths:
            if path == "/api/updates":
                bodies[f"{path}#{crawls}"] = json.dumps(
                    sse_events(league.url + path, 1, 10)
                ).encode()
            else:
                bodies[f"{path}#{crawls}"] = request(league.url + path).body
        for path in (f"/api/matches/{running}", f"/api/matches/{running}/record.jsonl"):
            reply = request(league.url + path)
            if reply.status == 200:
                # It finished meanwhile (a finished match is public): the crawl is over.
                wait_for(
                    lambda: (
                        running
                        in [m["match_id"] for m in league.get("/api/matches?limit=500")["finished"]]
                    ),
                    10,
                    f"{running} listed as finished after {path} answered",
                )
                break
            assert reply.status == 409, (path, reply.status)
            assert "still running" in reply.json()["error"]
            bodies[f"{path}#{crawls}"] = reply.body
        crawls += 1
    reader.join(60)
    assert crawls >= 1
    lines = league.record(running)
    assert lines[-1]["type"] == "end"
    hands = [
        h
        for x in lines
        if x["type"] == "round_start"
        for h in [*x["hands"], x["set_aside"]]
        if len(h) >= 3
    ]
    for key, body in bodies.items():
        text = body.decode("utf-8", "replace")
        for hand in hands:
            fragment = ",".join(json.dumps(c) for c in hand)
            assert fragment not in text, f"a hand of running match {running} in {key}"
    # The live stream, joined while the match ran, says exactly what a spectator may know.
    assert _oracle_terms(live) == oracle(lines)


def test_live_viewers_and_requests_are_counted(league: League) -> None:
    log = league.serve.log.read_text(encoding="utf-8", errors="replace")
    port = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", log)
    assert port, "the league printed no metrics address"
    metrics_url = f"http://127.0.0.1:{port.group(1)}/metrics"

    def sample(name: str, **labels: str) -> float:
        text = request(metrics_url).body.decode()
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == name and s.labels == labels:
                    return float(s.value)
        return 0.0

    before = sample("sticheln_web_requests_total", route="/api/standings", code="200")
    league.get("/api/standings")
    league.get("/api/standings")
    assert sample("sticheln_web_requests_total", route="/api/standings", code="200") == before + 2
    running = league.running()
    with urllib.request.urlopen(f"{league.url}/api/matches/{running}/live", timeout=30) as stream:
        stream.readline()
        wait_for(lambda: sample("sticheln_web_clients", stream="match") == 1, 10, "one live viewer")
    wait_for(lambda: sample("sticheln_web_clients", stream="match") == 0, 30, "no live viewer")
