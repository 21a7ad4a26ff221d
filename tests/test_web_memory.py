"""The web pages' memory is bounded: think times go into a fixed log-scale histogram whose
percentiles stay within its stated error of the exact ones, a bot's rating history is
thinned to a bounded number of evenly spaced points, the snapshot keeps only the latest
matches (its entries stop growing past the bounds however many matches are added), and
the API's match list pages through older matches, read from the store."""

from __future__ import annotations

import array
import asyncio
import itertools
import json
import random
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from referee.results import documents as data
from referee.results.documents import ThinkHistogram
from referee.results.store import FinishedMatch, Store, StoredResult, open_store
from referee.tournament.config import load_config
from referee.web import sources
from referee.web.server import WebOptions, WebServer
from referee.web.sources import TournamentSource

MICROSECONDS = st.integers(min_value=0, max_value=2**32 - 1)
#: Think times as they come: mostly short, a long tail, some at the ends of the range.
THINK_TIMES = st.lists(
    st.one_of(
        MICROSECONDS,
        st.integers(min_value=0, max_value=200),
        st.integers(min_value=50_000, max_value=2_000_000),
    ),
    min_size=1,
    max_size=400,
)


def _close(got: float | None, exact: float) -> bool:
    assert got is not None
    return abs(got - exact) <= ThinkHistogram.RELATIVE_ERROR * exact + 1e-9 * max(1.0, exact)


@settings(max_examples=300, deadline=None)
@given(values=THINK_TIMES, q=st.floats(min_value=0.0, max_value=1.0), cut=st.integers(0, 400))
def test_histogram_percentiles_are_within_the_stated_error(
    values: list[int], q: float, cut: int
) -> None:
    """Against numpy's exact percentiles (linear interpolation), added in two parts."""
    h = ThinkHistogram().added(values[:cut]).added(values[cut:])
    exact = np.array(values, dtype=np.float64)
    for p in (q, *data.THINK_PERCENTILES, 0.0):
        assert _close(h.quantile(p), float(np.quantile(exact, p))), p
    assert h.quantile(1.0) == max(values)  # the max is exact
    assert h.quantile(0.0) == min(values)
    assert h.count == len(values)


def test_the_stated_error_is_not_loose() -> None:
    """The error bound is tight: a value at the low end of a wide bucket is read back
    nearly 1/64 off (a bound that a wrong bucket layout would break shows here)."""
    # 2**20 + 1 and 2**20 + 2**15 - 1 share the bucket [2**20, 2**20 + 2**15).
    low, high = 2**20, 2**20 + 2**15 - 1
    h = ThinkHistogram().added([0, low, high, 2**31])
    middle = ThinkHistogram.middle(int(ThinkHistogram.bucket(np.array([low]))[0]))
    assert middle == (low + high) / 2
    assert abs(h.quantile(1 / 3) - low) / low == pytest.approx(
        ThinkHistogram.RELATIVE_ERROR, rel=0.01
    )


def test_the_histogram_has_a_fixed_size() -> None:
    h = ThinkHistogram()
    rng = np.random.default_rng(3)
    for _ in range(50):
        h = h.added(rng.integers(0, 2**32, 10_000))
        assert h.counts.shape == (ThinkHistogram.BUCKETS,)
    assert h.count == 500_000 and int(h.counts.sum()) == 500_000
    assert ThinkHistogram.BUCKETS < 1000
    # Every bucket boundary: each value lands in a bucket whose range holds it.
    edges = np.array([0, 1, 63, 64, 65, 127, 128, 1000, 2**31, 2**32 - 1])
    for v, b in zip(edges, ThinkHistogram.bucket(edges), strict=True):
        assert 0 <= b < ThinkHistogram.BUCKETS
        assert abs(ThinkHistogram.middle(int(b)) - v) <= ThinkHistogram.RELATIVE_ERROR * v


def _matches(n: int, bots: list[str], seed: int, think: int = 8) -> list[StoredResult]:
    """``n`` matches of 4 of ``bots``, random places, scores and think times."""
    rng = random.Random(seed)
    out: list[StoredResult] = []
    for idx in range(n):
        seating = rng.sample(bots, 4)
        places = rng.sample([1, 2, 3, 4], 4)
        for seat, (bot, place) in enumerate(zip(seating, places, strict=True)):
            times = array.array("I", [int(rng.lognormvariate(9, 1.5)) for _ in range(think)])
            out.append(
                StoredResult(
                    idx, f"m-{idx:05d}", seat, bot, rng.randint(-40, 40), place, False, 0, 0, times
                )
            )
    return out


def _entries(snap: data.Snapshot) -> dict[str, int]:
    """How many entries each of the snapshot's structures holds."""
    return {
        "summaries": len(snap.summaries),
        "recent": sum(len(f.recent) for f in snap.bots.values()),
        "history": sum(len(f.history.points) for f in snap.bots.values()),
        "buckets": sum(f.think.counts.size for f in snap.bots.values()),
        "pairs": len(snap.totals.pairs),
        "bots": len(snap.bots),
    }


def test_the_snapshot_stops_growing_past_its_bounds() -> None:
    """Thousands of matches added batch by batch: every structure stays within its bound
    (and reaches it: the bounds are what holds the size, not a short history)."""
    bots = [f"bot{i}" for i in range(8)]
    n = 4 * data.HISTORY_POINTS + data.KEPT_MATCHES
    results = _matches(n, bots, seed=7)
    bounds = {
        "summaries": data.KEPT_MATCHES,
        "recent": data.RECENT_PER_BOT * len(bots),
        "history": data.HISTORY_POINTS * len(bots),
        "buckets": ThinkHistogram.BUCKETS * len(bots),
        "pairs": len(bots) * (len(bots) - 1),
        "bots": len(bots),
    }
    snap = data.Snapshot()
    done = 0
    rng = random.Random(1)
    seen: list[dict[str, int]] = []
    while done < n:
        step = min(n - done, rng.randint(1, 60))
        snap = data.snapshot(done + step, results[4 * done : 4 * (done + step)], {}, snap)
        done += step
        entries = _entries(snap)
        assert all(entries[k] <= bounds[k] for k in bounds), entries
        seen.append(entries)
    assert snap.totals.matches == n
    last = seen[-1]
    assert last["summaries"] == data.KEPT_MATCHES
    assert last["recent"] == bounds["recent"]
    assert last["history"] > bounds["history"] // 2
    assert last["buckets"] == bounds["buckets"] and last["pairs"] == bounds["pairs"]
    # The second half of the run added as many matches as the first, and no entries.
    half = seen[len(seen) // 2 :]
    assert max(e["summaries"] for e in half) == data.KEPT_MATCHES
    assert max(e["history"] for e in half) <= bounds["history"]


def test_a_bots_page_stays_honest_about_all_its_matches() -> None:
    """The page of a bot with a long history: its counts and means exact, its think
    percentiles within the stated error of those of every think time, its rating history
    the exact Elo of every k-th match and of the latest, at most the bound of points."""
    bots = ["a", "b", "c", "d", "e"]
    n = 3 * data.HISTORY_POINTS
    results = _matches(n, bots, seed=11)
    snap = data.Snapshot()
    for start in range(0, n, 37):
        batch = [r for r in results if start <= r.idx < start + 37]
        snap = data.snapshot(start, batch, {"a": {"timeout": 2}}, snap)
    full = data.rating_history(results)["a"]
    mine = [r for r in results if r.bot == "a"]
    detail = data.bot_detail("a", snap, 1000.0)
    assert detail["matches"] == len(mine)
    assert detail["mean_score"] == pytest.approx(sum(r.total for r in mine) / len(mine))
    assert detail["mean_place"] == pytest.approx(sum(r.place for r in mine) / len(mine))
    assert detail["faults"] == {"timeout": 2}
    times = np.concatenate([np.asarray(r.think_us, dtype=np.float64) for r in mine])
    think = detail["think"]
    assert think["decisions"] == times.size
    assert think["relative_error"] == ThinkHistogram.RELATIVE_ERROR
    for p in think["percentiles"]:
        assert _close(p["ms"] * 1000, float(np.quantile(times, p["q"]))), p
    history = detail["rating_history"]
    assert len(full) > data.HISTORY_POINTS + 1 >= len(history) > data.HISTORY_POINTS // 2
    strides = {b["nth"] - a["nth"] for a, b in itertools.pairwise(history[:-1])}
    assert len(strides) == 1  # evenly spaced
    for point in history:
        exact = full[point["nth"] - 1]
        assert (point["match_id"], point["elo"], point["place"], point["match"]) == (
            exact["match_id"],
            exact["elo"],
            exact["place"],
            exact["match"],
        )
    assert history[-1]["nth"] == len(full)  # the latest is always shown
    recent = [m["match_id"] for m in detail["recent_matches"]]
    assert recent == [r.match_id for r in reversed(mine[-20:])]


# -- the API's pages, the older ones read from the store ----------------------------------------


def _fill(store: Store, name: str, total: int, folder: Path) -> list[dict[str, Any]]:
    """``total`` finished matches of 3 of 4 bots, finished in a shuffled order; their
    summaries as the API shows them, in finishing order."""
    rng = random.Random(2)
    order = list(range(total))
    rng.shuffle(order)  # finishing order is not the schedule's
    expected: list[dict[str, Any]] = []
    for position, idx in enumerate(order, 1):
        seating = rng.sample(["a", "b", "c", "d"], 3)
        totals = [rng.randint(-20, 20) for _ in seating]
        places = rng.sample([1, 2, 3], 3)
        match_id = f"{name}-{idx:05d}"
        store.import_finished(
            name,
            FinishedMatch(
                {
                    "idx": idx,
                    "match_id": match_id,
                    "seating": json.dumps(seating),
                    "seed": "1",
                    "deal": idx,
                    "finished_at": float(position),
                    "duration_s": 0.1,
                    "decisions": 10,
                    "record_path": str(folder / f"{match_id}.jsonl"),
                },
                [
                    (name, idx, s, b, totals[s], places[s], 0, 0, s % 2, b"\x01\0\0\0")
                    for s, b in enumerate(seating)
                ],
                [],
            ),
        )
        expected.append(
            {
                "match_id": match_id,
                "index": idx,
                "finish_order": position,
                "seating": seating,
                "totals": totals,
                "places": places,
                "forfeited_seats": [],
                "faults": [s % 2 for s in range(3)],
            }
        )
    return expected


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_store_reads_matches_in_batches_and_pages(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``results_since`` with a limit reads the next matches a batch at a time, and
    ``results_before`` a page of the latest before a finishing position, on both
    databases."""
    target = (
        str(tmp_path / "t.db") if database == "sqlite" else request.getfixturevalue("postgres_url")
    )
    store = open_store(target)
    try:
        expected = _fill(store, "pg", 57, tmp_path)
        read: list[StoredResult] = []
        upto = 0
        while True:
            batch, upto = store.results_since("pg", upto, limit=10)
            assert len({r.idx for r in batch}) == min(10, 57 - len(read) // 3)
            read += batch
            if not batch:
                break
        assert upto == 57
        assert [r.finish_order for r in read] == [p for p in range(1, 58) for _ in range(3)]
        assert [r.match_id for r in read[::3]] == [m["match_id"] for m in expected]
        assert all(len(r.think_us) == 1 for r in read)
        for before, limit in ((58, 10), (30, 7), (5, 10), (1, 3), (100, 57)):
            page = store.results_before("pg", before, limit)
            wanted = [m for m in expected if m["finish_order"] < before][-limit:]
            assert [(r.finish_order, r.match_id) for r in page[::3]] == [
                (m["finish_order"], m["match_id"]) for m in wanted
            ]
            assert all(len(r.think_us) == 0 for r in page)
    finally:
        store.close()


def _tournament(tmp: Path) -> Path:
    lines = ["[tournament]", 'name = "paged"', "table_size = 3", "matches_per_table = 1"]
    lines += ['out = "out"', "[sandbox]", 'mode = "none"']
    for name in ("a", "b", "c", "d"):
        lines += ["[[bots]]", f'name = "{name}"', 'command = ["true"]']
    path = tmp / "t.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_matches_list_pages_through_older_matches_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More finished matches than the snapshot keeps, finished in another order than
    scheduled and read in batches: the first page comes from memory, the older ones from
    the database, and every page holds the right matches, newest first, down to the first
    one."""
    monkeypatch.setattr(sources, "READ_BATCH", 97)
    config = load_config(_tournament(tmp_path))
    total = data.KEPT_MATCHES + 730
    store = open_store(config.database)
    expected = _fill(store, config.name, total, tmp_path)
    store.close()
    newest_first = expected[::-1]

    async def go() -> None:
        source = TournamentSource(config)
        server = WebServer(source, CollectorRegistry(), WebOptions(port=0))
        url = await server.start()
        try:
            # Every match taken in, in batches, each once.
            assert source.snap.totals.matches == total
            assert source.snap.version == total
            assert sum(f.think.count for f in source.snap.bots.values()) == 3 * total
            assert len(source.snap.summaries) == data.KEPT_MATCHES  # not all of them
            async with aiohttp.ClientSession() as http:

                async def page(query: str) -> dict[str, Any]:
                    async with http.get(f"{url}api/matches?{query}") as r:
                        assert r.status == 200, await r.text()
                        doc: dict[str, Any] = await r.json()
                        return doc

                first = await page("limit=500")
                assert first["finished"] == newest_first[:500]
                assert first["next_before"] == newest_first[499]["finish_order"]
                # Walk every page of 200, as the matches page's "older" link does.
                shown: list[dict[str, Any]] = []
                query = "limit=200"
                while True:
                    doc = await page(query)
                    shown += doc["finished"]
                    if doc["next_before"] is None:
                        break
                    query = f"limit=200&before={doc['next_before']}"
                assert shown == newest_first
                # A page partly in memory and partly not, and one past the newest.
                straddle = await page(f"limit=100&before={total - data.KEPT_MATCHES + 30}")
                at = data.KEPT_MATCHES - 29
                assert straddle["finished"] == newest_first[at : at + 100]
                assert (await page(f"limit=3&before={total + 5}"))["finished"] == newest_first[:3]
                assert (await page("limit=3&before=1"))["finished"] == []
                async with http.get(f"{url}api/matches?before=0") as r:
                    assert r.status == 400
                    assert "before='0' is not allowed" in (await r.json())["error"]
        finally:
            await server.stop()
            source.close()

    asyncio.run(go())
