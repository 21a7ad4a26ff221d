"""The web documents without a server: the viewer document of a real match record (also
one whose seed sits at its end), the live broadcast against the League service's feed at
every delay, and the head-to-head matrix."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from collections import Counter
from typing import Any

import pytest
from leaguekit import REFEREE, ROOT, SAMPLES

from referee.league.feed import MatchFeed
from referee.match.record import read_record
from referee.results import documents as data
from referee.results.store import StoredResult
from referee.web.live import event_json
from referee.web.server import Broadcast


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """A real 4-seat match played by sample bots."""
    out = tmp_path_factory.mktemp("web-data")
    bots = ["random.toml", "heuristic.toml", "random.toml", "heuristic.toml"]
    cmd = [*REFEREE, "match", "--seed", "11", "--out", str(out)]
    for b in bots:
        cmd += ["--bot", str(SAMPLES / b)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = (
        (out / "matches").glob("*.jsonl") if (out / "matches").is_dir() else out.glob("*.jsonl")
    )
    lines = list(read_record(path))
    for line in lines:
        line.pop("_line", None)
    return lines


def _seed(record: list[dict[str, Any]]) -> str:
    """The seed: in the end line (record version 2) or in the header (version 1)."""
    return next(str(x["seed"]) for x in reversed(record) if "seed" in x)


def test_the_viewer_document_keeps_every_card(record: list[dict[str, Any]]) -> None:
    doc = data.viewer_document(record)
    assert doc["seed"] == _seed(record)
    assert len(doc["rounds"]) == 4
    for r in doc["rounds"]:
        dealt = [Counter(h) for h in r["hands"]]
        played: list[Counter[str]] = [Counter() for _ in dealt]
        for t in r["tricks"]:
            for p in t["plays"]:
                played[p["seat"]][p["card"]] += 1
            for s, hand in enumerate(t["hands_after"]):
                # In hand = dealt - pain card - played so far.
                assert Counter(hand) == dealt[s] - Counter(r["pain"][s]) - played[s]
            assert [p["card"] for p in t["plays"]] == t["cards"]
            assert t["plays"][0]["seat"] == t["leader"]
        assert r["scores"] is not None and len(r["scores"]) == 4
    assert doc["end"]["places"] == record[-1]["places"]


def test_the_seed_is_read_from_the_header_or_the_end(record: list[dict[str, Any]]) -> None:
    """Version 1 records carry the seed in the header, version 2 in the end line."""
    seed = _seed(record)
    bare = [{k: v for k, v in x.items() if k not in ("seed", "nonce")} for x in record]
    in_header = [{**bare[0], "seed": seed}, *bare[1:]]
    at_end = [*bare[:-1], {**bare[-1], "seed": seed, "nonce": "00"}]
    for lines in (in_header, at_end):
        doc = data.viewer_document(lines)
        assert doc["seed"] == seed
        assert "seed" not in doc["end"] and "nonce" not in doc["end"]
    assert data.viewer_document(bare)["seed"] is None  # an unfinished record has none
    unknown = [*record[:3], {"type": "from_the_future", "round": 0}, *record[3:]]
    assert data.viewer_document(unknown)["rounds"] == data.viewer_document(record)["rounds"]
    with pytest.raises(data.RecordShapeError, match="line 1: the record does not start"):
        data.viewer_document(record[1:])


@pytest.mark.parametrize("delay", [0, 1, 2])
def test_the_broadcast_sends_what_watch_match_sends_at_every_step(
    record: list[dict[str, Any]], delay: int
) -> None:
    """Line by line as a match is played: the web broadcast holds exactly the messages the
    League service's WatchMatch has sent by then."""

    async def go() -> None:
        feed = MatchFeed(record[0]["match_id"])
        # A clock that stands still: every line of a released round is due at once, as
        # WatchMatch sends it (the pace is the next test's).
        broadcast = Broadcast(feed, delay, clock=lambda: 0.0)
        sent: list[dict[str, Any]] = []

        async def watch() -> None:
            async for msg in feed.watch(delay):
                sent.append(event_json(msg))

        watcher = asyncio.ensure_future(watch())
        for line in [*record, None]:
            if line is None:
                feed.finish()
            else:
                feed.append(line)
            for _ in range(5):
                await asyncio.sleep(0)
            broadcast.pump()
            shown = [_unscored(_event(c)) for c in broadcast.chunks]
            assert shown == sent
            # What a live stream writes: the events from a viewer's point on, in one block.
            for start in (0, len(broadcast.chunks) // 2):
                block, sent_now = broadcast.since(start)
                assert block == b"".join(broadcast.chunks[start:])
                assert sent_now == len(broadcast.chunks)
        await asyncio.wait_for(watcher, 5)
        assert broadcast.done and sent[-1]["type"] == "end"

    asyncio.run(go())


def _event(chunk: bytes) -> dict[str, Any]:
    """One server-sent event of a live stream: its ``id:`` line is the event's number in
    the stream (a viewer resumes after it); its ``data:`` line the event."""
    lines = chunk.decode().splitlines()
    assert lines[0].startswith("id: ") and lines[1].startswith("data: "), lines
    return json.loads(lines[1][len("data: ") :])


def _unscored(ev: dict[str, Any]) -> dict[str, Any]:
    """A web event without the running scores the broadcast adds to WatchMatch's."""
    if ev["type"] in ("revealed", "trick"):
        ev.pop("scores", None)
        ev.pop("points", None)
    return ev


def test_the_live_running_scores_end_at_each_rounds_scores(record: list[dict[str, Any]]) -> None:
    feed = MatchFeed(record[0]["match_id"])
    broadcast = Broadcast(feed, 0)
    for line in record:
        feed.append(line)
    feed.finish()
    broadcast.pump()
    events = [_event(c) for c in broadcast.chunks]
    last: list[int] | None = None
    rounds = 0
    for ev in events:
        if ev["type"] == "trick":
            assert (ev["winner"] < 0) == ("points" not in ev)
            last = ev["scores"]
        elif ev["type"] == "scored":
            assert last == ev["scores"]
            rounds += 1
    assert rounds == 4


def test_secret_pain_cards_give_no_running_scores_away(record: list[dict[str, Any]]) -> None:
    """Under secret visibility the pain suits are hidden until the round is scored, and
    running scores would tell them: none are sent."""
    lines = copy.deepcopy(record)
    lines[0]["rules"]["pain_visibility"] = "secret"
    feed = MatchFeed(lines[0]["match_id"])
    broadcast = Broadcast(feed, 0)
    for line in lines:
        feed.append(line)
    feed.finish()
    broadcast.pump()
    events = [_event(c) for c in broadcast.chunks]
    assert any(e["type"] == "trick" for e in events)
    for ev in events:
        if ev["type"] in ("revealed", "trick"):
            assert "scores" not in ev and "points" not in ev, ev


def test_a_delayed_round_plays_at_the_pace_it_was_played(record: list[dict[str, Any]]) -> None:
    """With a delay of one round, round 0 starts to show when round 1 is dealt, and each
    of its lines as long after that as it was written after round 0's deal (here one a
    second), not all at once; once the match is over, the rest likewise."""
    now = [0.0]
    feed = MatchFeed(record[0]["match_id"])
    broadcast = Broadcast(feed, 1, clock=lambda: now[0])
    first_r1 = next(i for i, x in enumerate(record) if x.get("round") == 1)
    round0 = sum(1 for x in record if x.get("round") == 0)
    for line in record[: first_r1 + 6]:
        feed.append(line)
        broadcast.pump()  # a viewer looks after every line: each has its time
        now[0] += 1.0

    broadcast.pump()

    # Round 1 was dealt 6 s ago: the header and round 0's first 7 lines (0 to 6 s after
    # its deal), of which the public ones are events.
    def shown() -> list[dict[str, Any]]:
        return [_event(c) for c in broadcast.chunks]

    def public(lines: list[dict[str, Any]]) -> int:
        return sum(1 for x in lines if x["type"] not in ("header", "pain"))

    assert len(shown()) == 1 + public(record[1:8])
    now[0] += 5.0
    broadcast.pump()
    assert len(shown()) == 1 + public(record[1:13])
    assert all(e.get("round", 0) == 0 for e in shown())
    for line in record[first_r1 + 6 :]:
        feed.append(line)
        broadcast.pump()
        now[0] += 1.0
    feed.finish()
    broadcast.pump()
    assert not broadcast.done  # the last rounds still play out, from the end on
    assert round0 < len(record)
    now[0] += 1e6
    broadcast.pump()
    assert broadcast.done and shown()[-1]["type"] == "end"


def _row(idx: int, seat: int, bot: str, total: int, place: int) -> StoredResult:
    import array

    return StoredResult(idx, f"m-{idx}", seat, bot, total, place, False, 0, 0, array.array("I"))


def test_head_to_head_counts_better_places_and_score_differences() -> None:
    results = [
        _row(0, 0, "a", 10, 1),
        _row(0, 1, "b", 4, 2),
        _row(0, 2, "c", 4, 2),
        _row(1, 0, "b", 7, 1),
        _row(1, 1, "a", -3, 3),
        _row(1, 2, "c", 0, 2),
    ]
    h2h = data.head_to_head(results)
    assert h2h["bots"] == ["a", "b", "c"]
    ab = h2h["cells"][0][1]
    assert ab == {"matches": 2, "better_share": 0.5, "score_diff": (6 - 10) / 2}
    bc = h2h["cells"][1][2]
    assert bc == {"matches": 2, "better_share": 0.75, "score_diff": 3.5}
    snap = data.snapshot(1, results, {"a": {"timeout": 2}})
    detail = data.bot_detail("a", snap, 1000.0)
    assert detail["matches"] == 2 and detail["mean_place"] == 2.0
    assert [m["match_id"] for m in detail["recent_matches"]] == ["m-1", "m-0"]
    assert [h["place"] for h in detail["rating_history"]] == [1, 3]
    assert detail["faults"] == {"timeout": 2}


def test_a_match_with_one_bot_in_several_seats_is_shown_but_not_rated() -> None:
    """``referee match --bot a.toml --bot a.toml ...`` records such matches."""
    results = [_row(0, 0, "a", 5, 1), _row(0, 1, "a", 1, 2), _row(0, 2, "b", 0, 3)]
    snap = data.snapshot(1, results, {})
    assert all(not f.history.document() for f in snap.bots.values())
    assert [s["seating"] for s in snap.summaries] == [["a", "a", "b"]]
    detail = data.bot_detail("a", snap, 1000.0)
    assert detail["matches"] == 2 and len(detail["recent_matches"]) == 1


def _comparable(snap: data.Snapshot) -> dict[str, Any]:
    return {
        "bots": {
            b: (
                f.matches,
                f.score_sum,
                f.place_sum,
                f.think.count,
                f.think.counts.tolist(),
                f.history.document(),
                [m["match_id"] for m in f.recent],
            )
            for b, f in snap.bots.items()
        },
        "summaries": snap.summaries,
        "head_to_head": snap.head_to_head,
    }


def test_a_snapshot_adds_the_new_matches_to_the_previous_one() -> None:
    """Computed batch by batch from the previous snapshot, the documents equal those
    computed from all the matches in one go at every step, and the earlier snapshots'
    documents stay as they were."""
    import array
    import random

    rng = random.Random(5)
    bots = ["a", "b", "c", "d", "e"]
    results: list[StoredResult] = []
    for idx in range(40):
        seating = rng.sample(bots, 3) if idx % 7 else ["a", "a", "b"]  # some unrated
        places = [1, 2, 2] if idx % 5 == 0 else rng.sample([1, 2, 3], 3)
        results += [
            StoredResult(
                idx,
                f"m-{idx}",
                seat,
                bot,
                rng.randint(-50, 50),
                place,
                False,
                0,
                0,
                array.array("I", [rng.randint(0, 10**6) for _ in range(rng.randint(0, 9))]),
            )
            for seat, (bot, place) in enumerate(zip(seating, places, strict=True))
        ]
    snap = data.snapshot(0, [], {})
    kept: list[tuple[data.Snapshot, dict[str, Any]]] = []
    done = 0
    while done < 40:
        step = rng.randint(1, 4)
        batch = results[3 * done : 3 * (done + step)]
        done = min(40, done + step)
        previous, snap = snap, data.snapshot(done, batch, {}, snap)
        if previous.summaries:  # continued, not computed afresh
            assert snap.summaries[-1] is previous.summaries[-1]
        assert _comparable(snap) == _comparable(data.snapshot(done, results[: 3 * done], {}))
        kept.append((snap, copy.deepcopy(_comparable(snap))))
    for old, shown in kept:
        assert _comparable(old) == shown


def test_the_running_scores_end_at_each_rounds_recorded_scores(
    record: list[dict[str, Any]],
) -> None:
    doc = data.viewer_document(record)
    assert doc["scores_explained"] is True
    ends = [x for x in record if x["type"] == "round_end"]
    for r, end in zip(doc["rounds"], ends, strict=True):
        assert r["tricks"][-1]["scores_after"] == end["scores"]
        # Every point accounted for: the pain cards' and each taken trick's.
        won = [0] * len(end["scores"])
        for t in r["tricks"]:
            if t["winner"] >= 0:
                assert len(t["points"]) == len(t["cards"])
                won[t["winner"]] += sum(t["points"])
            else:
                assert t["points"] is None
        assert [sum(p) + w for p, w in zip(r["pain_points"], won, strict=True)] == end["scores"]
    totals = [0] * len(ends[0]["scores"])
    for r, end in zip(doc["rounds"], ends, strict=True):
        assert r["totals_before"] == totals
        totals = end["totals"]


def test_a_record_whose_scores_disagree_with_its_cards_is_flagged(
    record: list[dict[str, Any]],
) -> None:
    tampered = copy.deepcopy(record)
    end = next(x for x in tampered if x["type"] == "round_end")
    end["scores"][0] += 1
    assert data.viewer_document(tampered)["scores_explained"] is False


def test_a_fault_belongs_to_the_card_recorded_after_it(record: list[dict[str, Any]]) -> None:
    lines = copy.deepcopy(record)
    # A fault before the 3rd play of the 2nd trick of round 1, and one in the pain choice.
    plays = [i for i, x in enumerate(lines) if x["type"] == "play" and x["round"] == 0]
    n = len(lines[0]["seating"])
    at = plays[n + 2]
    seat = lines[at]["seat"]
    fault = {"type": "fault", "round": 0, "seat": seat, "reason": "timeout", "strikes": 1}
    lines.insert(at, fault)
    first_pain = next(i for i, x in enumerate(lines) if x["type"] == "pain")
    lines.insert(first_pain, {**fault, "seat": 0})
    faults = data.viewer_document(lines)["rounds"][0]["faults"]
    assert [(f["trick"], f["card"]) for f in faults] == [(0, None), (1, 2)]


def test_every_decision_carries_the_clock_it_was_against(record: list[dict[str, Any]]) -> None:
    """The time allowed (with the startup time on a seat's first decision) and the bank
    left, replayed as the runner keeps them: over-time draws on the bank, a timeout
    empties it, a forfeited seat is asked no more."""
    lines = copy.deepcopy(record)
    lines[0]["clock"] = {"decision_ms": 100, "time_bank_ms": 500, "startup_ms": 1000}
    seat0 = [x for x in lines if x["type"] in ("pain", "play") and x["seat"] == 0]
    # 1200 ms against 1100: 100 from the bank; 250 against 100: 150 more; then a timeout
    # (all it had: 100 + 250 ms) empties it.
    for x, think_ms, fallback in zip(
        seat0, (1200, 50, 250, 350, 10), (False, False, False, True, False), strict=False
    ):
        x["think_us"], x["fallback"] = think_ms * 1000, fallback
    # Seat 1 forfeits at its 3rd play: that play was asked, the later ones are not.
    plays1 = [i for i, x in enumerate(lines) if x["type"] == "play" and x["seat"] == 1]
    fault = {"type": "fault", "round": 0, "seat": 1, "reason": "timeout", "detail": "",
             "strikes": 3, "forfeited": True}  # fmt: skip
    lines.insert(plays1[2], fault)
    doc = data.viewer_document(lines)
    r0 = doc["rounds"][0]
    mine = [r0["pain_plays"][0]] + [p for t in r0["tricks"] for p in t["plays"] if p["seat"] == 0]
    assert [(p["clock_ms"], p["bank_ms"]) for p in mine[:5]] == [
        (1100, 500),
        (100, 400),
        (100, 400),
        (100, 250),
        (100, 0),
    ]
    theirs = [p for t in r0["tricks"] for p in t["plays"] if p["seat"] == 1]
    assert r0["pain_plays"][1]["clock_ms"] == 1100
    assert [p["clock_ms"] for p in theirs[:4]] == [100, 100, 100, None]
    assert all(p["clock_ms"] is None for t in doc["rounds"][1:] for p in t["pain_plays"][1:2])
    # Without a bank, no bank is named.
    plain = data.viewer_document(record)
    assert plain["rounds"][0]["tricks"][0]["plays"][0]["bank_ms"] is None
