"""A comparison's pages: ``referee web`` on a ``referee compare --out`` folder, or the
pages of a comparison that runs (``referee compare --web-port``).

A comparison is a folder of match records like a tournament's, plus its verdict
(``compare.json``) and its deal pairs (``pairs.csv``), docs/compare.md. The comparison's
page document (``/api/compare``) is those two read together: the summary, and every
finished pair with its two matches and the test's wealths after it.

The duplicate embargo does not apply: each deal is played exactly twice, by the candidate
and by the baseline, and both of its matches are the pair that is shown side by side
(fresh deals are drawn from the comparison's own key, which no later match needs
hidden). A running comparison's unfinished matches are still refused (409), as a
tournament's are: their records hold every hand.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.league.feed import MatchFeed, replay_feed
from referee.results import documents as data
from referee.results.store import StoredResult
from referee.web.sources import FolderSource, NotFound, Source, StillRunning

if TYPE_CHECKING:
    from referee.compare.config import CompareConfig

#: pairs.csv's columns that are numbers (the rest are text, and ``counted`` a flag).
_INTS = ("deal", "seat", "candidate_total", "baseline_total", "score_diff")
_INTS_PLACE = ("candidate_place", "baseline_place")
_FLOATS = ("share_diff", "log_h1", "log_h0")


def _pair_row(raw: dict[str, str]) -> dict[str, Any]:
    """One line of pairs.csv as the page document writes it."""
    row: dict[str, Any] = {
        "candidate_match": raw["candidate_match"],
        "baseline_match": raw["baseline_match"],
    }
    for key in (*_INTS, *_INTS_PLACE):
        row[key] = int(raw[key])
    for key in _FLOATS:
        text = raw.get(key, "")
        row[key] = float(text) if text not in ("", None) else None
    row["counted"] = raw.get("counted") == "true"
    return row


def read_pairs(path: Path) -> list[dict[str, Any]]:
    """pairs.csv's lines in deal order (a missing file: none)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return [_pair_row(r) for r in csv.DictReader(f)]
    except FileNotFoundError:
        return []


def is_compare_folder(folder: Path) -> bool:
    """The folder is a comparison's output (its store or its summary is there)."""
    return (folder / "compare.json").is_file() or (folder / "compare.db").is_file()


def compare_document(
    name: str, summary: dict[str, Any], pairs: list[dict[str, Any]], running: bool
) -> Any:
    """The page document: the comparison's name, the summary (compare.json's), the pairs
    in deal order, and whether it runs."""
    return data.finite({"name": name, "running": running, "summary": summary, "pairs": pairs})


class CompareSource(FolderSource):
    """A finished comparison's output folder: its match records (as a tournament folder's,
    without the duplicate embargo) and its verdict and pairs."""

    kind = "comparison"
    embargo = False

    def __init__(self, folder: Path) -> None:
        folder = Path(folder)
        summary_path = folder / "compare.json"
        try:
            self.summary = json.loads(summary_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NotFound(
                f"{folder}: no compare.json here; the comparison has not finished "
                "(serve it while it runs with `referee compare --web-port`)"
            ) from None
        except (OSError, ValueError) as exc:
            raise NotFound(f"{summary_path}: cannot be read: {exc}") from None
        super().__init__(folder)
        self.name = str(self.summary.get("comparison") or self.name)
        self.pairs = read_pairs(folder / "pairs.csv")
        self._doc = compare_document(self.name, self.summary, self.pairs, False)

    def compare(self) -> dict[str, Any]:
        """The comparison page's document (see :func:`compare_document`)."""
        return self._doc  # type: ignore[no-any-return]


class LiveCompareSource(Source):
    """A comparison being played by this process: its verdict and pairs recomputed from its
    store as matches finish, and its match records once they have finished (a running
    match's record is refused, 409).

    The verdict, the pairs and where each finished match's record is are read from the
    store every :data:`REBUILD_S` seconds (in a thread). The matches list and the
    standings come from a folder view of the finished records, built again when more
    have finished, at most every :data:`REBUILD_S` seconds or four times as long as the
    last build took, whichever is longer: a long comparison spends at most a fifth of
    its time on it.
    """

    kind = "comparison"
    #: The folder view and the document are built again at most this often (seconds).
    REBUILD_S = 1.0

    def __init__(self, config: CompareConfig) -> None:
        super().__init__(config.name, float(config.clock.decision_ms))
        self.config = config
        self._folder: FolderSource | None = None
        self._doc: dict[str, Any] = compare_document(config.name, {}, [], True)
        self._finished_ids: set[str] = set()
        #: Finished matches' record files, by match id, from the store.
        self._paths: dict[str, Path] = {}
        self._folder_ids: set[str] = set()
        self._folder_at = -math.inf
        self._folder_s = 0.0
        self._running: list[dict[str, Any]] = []
        self._built_at = -math.inf
        self._building: asyncio.Task[None] | None = None

    # -- the store, read on the web's own connection ----------------------------------------

    def _read_store(self) -> tuple[dict[str, Any], dict[str, Path], list[dict[str, Any]]]:
        """The page document, the finished matches' record files and the running matches,
        from the comparison's store (a connection of its own: the run writes on another)."""
        import sqlite3

        from referee.compare.run import CompareStore, judge, pair_statistics, pairs_from, summary

        if not self.config.database.is_file():
            return compare_document(self.config.name, {}, [], True), {}, []
        store = CompareStore(self.config.database)
        try:
            finished = store.finished(self.config.name)
            info = store.matches(self.config.name)
            pairs = pairs_from(self.config, finished)
            verdict = judge(self.config, pairs)
            s = summary(self.config, verdict, pairs, len(finished), store.voided(self.config.name))
            rows = []
            for p, (w1, w0) in zip(pairs, pair_statistics(self.config, pairs), strict=True):
                rows.append(
                    {
                        "deal": p.deal,
                        "seat": p.deal % self.config.table_size,
                        "candidate_match": info[2 * p.deal]["match_id"],
                        "baseline_match": info[2 * p.deal + 1]["match_id"],
                        "candidate_total": p.candidate_total,
                        "baseline_total": p.baseline_total,
                        "score_diff": p.score_diff,
                        "candidate_place": p.candidate_place,
                        "baseline_place": p.baseline_place,
                        "share_diff": p.share_diff,
                        "log_h1": None if math.isnan(w1) else w1,
                        "log_h0": None if math.isnan(w0) else w0,
                        "counted": p.deal < verdict.pairs,
                    }
                )
            try:
                running = [
                    {"match_id": mid, "seating": json.loads(seating)}
                    for mid, seating in store.db.execute(
                        "SELECT match_id, seating FROM compare_matches "
                        "WHERE name = ? AND status = 'running' ORDER BY idx",
                        (self.config.name,),
                    )
                ]
            except sqlite3.Error:
                running = []
            paths = {m["match_id"]: Path(m["record_path"]) for m in info.values()}
        finally:
            store.close()
        return compare_document(self.config.name, s, rows, True), paths, running

    async def _rebuild(self) -> None:
        try:
            doc, paths, running = await asyncio.to_thread(self._read_store)
            self._doc, self._running, self._paths = doc, running, paths
            self._finished_ids = set(paths)
            now = time.monotonic()
            wait = max(self.REBUILD_S, 4 * self._folder_s)
            if (
                self._finished_ids != self._folder_ids
                and now - self._folder_at >= wait
                and (self.config.out / "matches").is_dir()
            ):
                ids = set(self._finished_ids)
                self._folder = await asyncio.to_thread(_FinishedFolder, self.config.out, ids)
                self._folder_at, self._folder_s = now, time.monotonic() - now
                self._folder_ids = ids
                # The documents of the finished matches are computed again from the new view.
                self.snap = data.Snapshot()
                self._read_upto = 0
        except Exception as exc:  # a busy store: the next look tries again
            from referee.web.sources import log

            log.warning("web_compare_read_failed", error=repr(exc))
        finally:
            self._building = None

    async def refresh(self) -> None:
        now = time.monotonic()
        if self._building is None and now - self._built_at >= self.REBUILD_S:
            self._built_at = now
            self._building = asyncio.ensure_future(self._rebuild())
            await self._building
        await super().refresh()

    def compare(self) -> dict[str, Any]:
        """The comparison page's document, as of the last look at the store."""
        return self._doc

    # -- the Source questions ------------------------------------------------------------------

    def version(self) -> Any:
        return (len(self._finished_ids), len(self._doc.get("pairs", [])), len(self._running))

    def standings(self) -> dict[str, Any]:
        if self._folder is None:
            return {"matches": 0, "published_at": None, "standings": []}
        return self._folder.standings()

    def load(self, limit: int) -> tuple[list[StoredResult], dict[str, dict[str, int]]]:
        if self._folder is None:
            return [], {}
        return self._folder.load(limit)

    def older_matches(self, before: int, limit: int) -> list[dict[str, Any]]:
        return [] if self._folder is None else self._folder.older_matches(before, limit)

    def running(self) -> list[dict[str, Any]]:
        return list(self._running)

    def finished(self) -> int:
        return 0 if self._folder is None else self._folder.finished()

    def planned(self) -> int | None:
        return 2 * self.config.max_pairs

    def record_path(self, match_id: str) -> Path:
        if any(m["match_id"] == match_id for m in self._running):
            raise StillRunning(f"match {match_id!r} is still running; its record is not shown")
        path = self._paths.get(match_id)
        if path is None:
            raise NotFound(f"no finished match {match_id!r} in comparison {self.name!r}")
        return path

    def feed(self, match_id: str) -> MatchFeed:
        if any(m["match_id"] == match_id for m in self._running):
            # A comparison's records are written at the match's end: nothing to follow.
            raise StillRunning(f"match {match_id!r} is still running; it is shown once finished")
        return replay_feed(match_id, self.record_lines(match_id))


class _FinishedFolder(FolderSource):
    """A running comparison's folder, with only the matches its store calls finished: a
    record still being written is not read at all."""

    embargo = False

    def __init__(self, folder: Path, finished: set[str]) -> None:
        self.only = finished
        super().__init__(folder)

    def _include(self, match_id: str) -> bool:
        return match_id in self.only


# -- the page as the server writes it ------------------------------------------------------------

VERDICTS = {
    "H1": "H1 accepted: {c} is better than {b}",
    "H0": "H0 accepted: {c} is not better than {b}",
    "undecided": "undecided: neither bound was reached",
    "better": "better: {c} beats {b} (the 95% interval lies above 0)",
    "worse": "worse: {c} loses to {b} (the 95% interval lies below 0)",
    "no difference": "no significant difference between {c} and {b}",
}


def verdict_text(s: dict[str, Any], running: bool) -> str:
    """The verdict in words (plain text; the caller escapes it): while running, what the
    test is waiting for."""
    c, b = str(s.get("candidate", "the candidate")), str(s.get("baseline", "the baseline"))
    if not s:
        return "no pair has finished yet"
    verdict = str(s.get("verdict") or "undecided")
    test, pairs = s.get("test"), s.get("pairs", 0)
    if running and verdict == "undecided":
        if not test:
            return (
                f"running: {pairs} of {s.get('max_pairs', '?')} pairs played; this fixed-size "
                "comparison decides once all are in"
            )
        min_pairs = test.get("min_pairs") or 0
        if pairs < min_pairs:
            return (
                f"running: {pairs} of the first {min_pairs} pairs in; the test decides "
                f"nothing before {min_pairs} pairs"
            )
        return f"running: no bound reached yet after {pairs} pairs"
    text = VERDICTS.get(verdict, verdict).format(c=c, b=b)
    if verdict == "undecided" and test:
        text += f" within the cap of {s.get('max_pairs', '?')} pairs"
    if test and test.get("bound_reached"):
        text += f" (the {test['bound_reached']} bound was reached after {s.get('pairs', 0)} pairs)"
    return text


def _num(x: Any, digits: int = 2) -> str:
    from referee.web.render import fmt

    return fmt(x, digits)


def render_compare(doc: dict[str, Any], pair: int | None) -> str:
    """The comparison page's main content: the verdict, the test's bounds, the mean
    difference with its interval, the pairs sorted by difference (the chart and the
    side-by-side pair are drawn by script on top)."""
    from referee.web.render import _table, bot_link, e, match_link, signed

    s, pairs, running = doc.get("summary") or {}, doc.get("pairs") or [], bool(doc.get("running"))
    name = s.get("comparison") or doc.get("name", "")
    live = ' <span class="pill live" id="live-badge">running</span>' if running else ""
    # The parts a running comparison changes, each in a box of its own: the page puts the
    # server's new ones in place (the pair being stepped through and the scroll stay).
    out = ['<section id="summary">', f"<h1>Comparison {e(name)}{live}</h1>"]
    if s:
        opponents = ", ".join(bot_link(str(o)) for o in s.get("opponents") or [])
        out.append(
            f'<p class="seating">candidate {bot_link(str(s["candidate"]))} · baseline '
            f"{bot_link(str(s['baseline']))} · {e(s.get('table_size', '?'))} seats · "
            f"opponents {opponents or '–'} · rules {e(s.get('rules', '?'))}</p>"
        )
    verdict = str(s.get("verdict") or "undecided")
    out.append(
        f'<p id="verdict" class="verdict verdict-{e(verdict.replace(" ", "-"))}" '
        f'data-verdict="{e(verdict)}"><b>{e(verdict_text(s, running))}</b></p>'
    )
    metric = s.get("metric", "score")
    unit = "points per match" if metric == "score" else "of the opponents beaten"
    diff = s.get("score_diff" if metric == "score" else "share_diff") or {}
    digits = 1 if metric == "score" else 3
    if diff.get("mean") is not None:
        ci = diff.get("ci95")
        half = "" if ci is None else f" ± {_num(ci, digits)}"
        note = " (all pairs equal: the interval says nothing)" if diff.get("degenerate") else ""
        low = None if ci is None else diff["mean"] - ci
        high = None if ci is None else diff["mean"] + ci
        span = (
            "" if ci is None else f", 95% interval {signed(low, digits)} to {signed(high, digits)}"
        )
        out.append(
            f'<p id="mean" data-mean="{e(diff["mean"])}" data-ci="{e(ci)}">Mean difference '
            f"(candidate − baseline): <b>{signed(diff['mean'], digits)}{half}</b> {unit}{span}{note}</p>"
        )
    test = s.get("test")
    rows: list[tuple[str, str, str]] = []
    if test:
        reached = test.get("bound_reached")
        betting = test.get("statistic") == "betting"
        w1, w0 = ("ln W₁", "ln W₀") if betting else ("ln Λ₁", "ln Λ₀")
        counted, min_pairs = int(s.get("pairs") or 0), int(test.get("min_pairs") or 0)
        early = counted < min_pairs

        def now(value: Any, at: Any, hit: bool) -> str:
            text = f"now {_num(value)}"
            if hit:
                return text + "; reached"
            if early and value is not None and at is not None and value >= at:
                text += f", past the line: no decision before {min_pairs} pairs"
            return text

        rows = [
            ("H0", f"mean difference ≤ {signed(test['lower'], digits)}"
             + ("" if test.get("elo0") is None else f" (Elo {signed(test['elo0'])})"),
             f"accepted when {w0} ≥ {_num(test['accept_h0_at'])}; "
             + now(test.get("log_h0"), test["accept_h0_at"], reached == "lower")),
            ("H1", f"mean difference ≥ {signed(test['upper'], digits)}"
             + ("" if test.get("elo1") is None else f" (Elo {signed(test['elo1'])})"),
             f"accepted when {w1} ≥ {_num(test['accept_h1_at'])}; "
             + now(test.get("log_h1"), test["accept_h1_at"], reached == "upper")),
            ("min pairs", str(min_pairs),
             f"no decision before {min_pairs} pairs; {counted} counted"
             + (f", {min_pairs - counted} to go" if early else "")),
            ("α", _num(test["alpha"], 3), "the chance of accepting H1 when H0 is true"),
            ("β", _num(test["beta"], 3), "the chance of accepting H0 when H1 is true"),
        ]  # fmt: skip
        body = "".join(
            f'<tr data-row="{e(k)}"><th class="text">{e(k)}</th><td class="text">{e(v)}</td>'
            f'<td class="text">{e(w)}</td></tr>'
            for k, v, w in rows
        )
        out.append(
            f'<h2>The test</h2><div class="table-wrap"><table id="bounds" data-reached="{e(reached or "")}">'
            f"<tbody>{body}</tbody></table></div>"
            + (
                '<p class="muted">A sequential betting test on the pairs in deal order '
                "(docs/compare.md): each wealth bets against one hypothesis; reaching its line "
                "accepts the other. "
                if betting
                else '<p class="muted">A sequential probability ratio test on the pairs in deal '
                "order (docs/compare.md): ln Λ₁ is the evidence for H1 over H0, ln Λ₀ for H0 "
                "over H1; reaching its line accepts that hypothesis. "
            )
            + f"{e(s.get('pairs', 0))} of at most {e(s.get('max_pairs', '?'))} pairs counted.</p>"
        )
    else:
        out.append(
            f'<h2>The test</h2><p id="bounds" class="muted">A fixed-size comparison: exactly '
            f"{e(s.get('max_pairs', '?'))} pairs ({e(s.get('pairs', 0))} played), no "
            "sequential test and no bounds. Once all are in, the verdict is where the 95% "
            "interval of the mean difference lies: above 0 better, below 0 worse, around 0 "
            "no difference.</p>"
        )
    if s:
        out.append(
            f'<p class="muted" id="counts">deals won / drawn / lost by the candidate: '
            f"{e(s.get('deals_won'))} / {e(s.get('deals_drawn'))} / {e(s.get('deals_lost'))}; "
            f"matches played {e(s.get('matches'))}, void {e(s.get('matches_void'))}</p>"
        )
    out.append("</section>")
    out.append('<div id="chart" class="chart-box"></div>')
    out.append('<section id="pair-view"></section>')
    out.append('<section id="pair-list"><h2>Pairs, by difference</h2>')
    if pairs:
        ordered = sorted(pairs, key=lambda p: (p["score_diff"], p["deal"]))
        body_rows = []
        for p in ordered:
            mark = (
                ""
                if p.get("counted")
                else ' <span class="pill" title="after the verdict">not counted</span>'
            )
            current = ' class="current"' if pair == p["deal"] else ""
            body_rows.append(
                f'<tr data-deal="{e(p["deal"])}" data-diff="{e(p["score_diff"])}"{current}>'
                f'<td><a class="pair-link" href="/compare?pair={e(p["deal"])}#diff">deal {e(p["deal"])}</a>{mark}</td>'
                f"<td><b>{signed(p['score_diff'])}</b></td>"
                f'<td class="text">{match_link(str(p["candidate_match"]))} <span class="result">{signed(p["candidate_total"])} ({e(p["candidate_place"])}.)</span></td>'
                f'<td class="text">{match_link(str(p["baseline_match"]))} <span class="result">{signed(p["baseline_total"])} ({e(p["baseline_place"])}.)</span></td>'
                f"<td>{e(p['seat'])}</td></tr>"
            )
        heads = ["Pair", "Difference", "Candidate (score, place)", "Baseline (score, place)",
                 "Seat"]  # fmt: skip
        out.append(_table("pairs", heads, body_rows, {2, 3}))
    else:
        out.append('<p class="muted" id="no-pairs">No pair has finished yet.</p>')
    out.append("</section>")
    return "".join(out)
