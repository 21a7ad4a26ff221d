"""A league's published standings, fitted in a short-lived process of their own.

``python -m referee.league.standings DATABASE LEAGUE BOOTSTRAP MIN_MATCHES`` reads every finished
match of the league from its database (a SQLite file or a database URL; ``-`` reads it
from the first line of stdin, which keeps a URL's password out of the process list),
fits the standings and writes them to stdout as one serialized ``StandingsResponse``. The fit needs every match played so far (the
bootstrap resamples them), so its memory grows with the league's history; a league runs
for weeks, and what a long-lived process allocates once mostly stays with it. Done here,
that memory goes back to the system when the process exits, and the league's own
process stays the same size however many matches it has played. Starting the process
costs about 0.3 s of CPU, at most once per ``publish_interval_s``.

The intervals come from the bootstrap while the league is small enough for its refits
(:data:`BOOTSTRAP_BOTS`, :data:`BOOTSTRAP_MATCHES`) and from the fit's information above
(``intervals="information"`` in :func:`referee.results.ratings.fit`): 200 refits of a
league of 500 bots and 50,000 matches took 22 s, more than the publication interval,
and a core the matches need; the information takes about one fit. The process runs
numpy's BLAS on one thread: on a machine busy with matches more threads only wait for
cores and spin, and the fit then took three times the CPU.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

# First, so that structlog is imported without rich in the fitting process
# (``python -m referee.league.standings``), as in the ``referee`` command.
from referee.runtime import lean  # noqa: F401

# isort: split
from referee.league.submissions import SeatCodes, Submissions
from referee.results.ratings import MIN_MATCHES, IntervalMethod, LiveElo, fit
from referee.results.stats import bot_stats, outcomes_from
from referee.results.store import StoredResult, open_store
from referee.runtime import logs
from sticheln.v1 import league_pb2

#: The longest a fit may take before the publication is given up (and tried again later).
FIT_TIMEOUT_S = 600.0
#: A league with at most this many bots and :data:`BOOTSTRAP_MATCHES` matches gets
#: bootstrap intervals (as a tournament does); a larger one the fit's information's.
BOOTSTRAP_BOTS = 100
BOOTSTRAP_MATCHES = 10_000
#: The fitting process's environment on top of the league's: BLAS on one thread.
_ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def interval_method(bots: int, matches: int) -> IntervalMethod:
    """How a league of ``bots`` bots and ``matches`` finished matches measures its
    intervals: the bootstrap while its refits are cheap, the fit's information above."""
    if bots <= BOOTSTRAP_BOTS and matches <= BOOTSTRAP_MATCHES:
        return "bootstrap"
    return "information"


#: Joins an entry's name and a submission's number into one rated player; entry names
#: never hold it (referee.league.registry.NAME).
SUBMISSION_MARK = "#"


def by_submission(
    results: list[StoredResult], codes: dict[tuple[int, int], int]
) -> list[StoredResult]:
    """``results`` with every hosted seat's bot named ``bot#N`` (N its submission, from
    ``codes`` by (match index, seat)): each submission is then rated on its own."""
    return [
        dataclasses.replace(r, bot=f"{r.bot}{SUBMISSION_MARK}{codes[(r.idx, r.seat)]}")
        if (r.idx, r.seat) in codes
        else r
        for r in results
    ]


def compute_standings(
    results: list[StoredResult],
    bootstrap: int,
    seed: int = 0,
    min_matches: int = MIN_MATCHES,
    intervals: IntervalMethod | None = None,
    codes: dict[tuple[int, int], int] | None = None,
    playing: dict[str, int] | None = None,
) -> league_pb2.StandingsResponse:
    """The published standings of ``results`` (every seat row of the finished matches
    counted, in finishing order): Bradley–Terry with intervals (``intervals``, or by the
    league's size: :func:`interval_method`), live Elo and statistics; bots with fewer
    than ``min_matches`` matches provisional, and the fit's warnings.

    With ``codes`` (the submission of each hosted seat, by (match index, seat)) every
    submission is a player of its own, rated on its matches alone; an entry's line is its
    playing submission's (``playing``: entry to submission number), every submission's
    rating is in ``submissions``, and the matches an entry with a playing submission played
    before it was hosted (dialing in) are its submission 0 there."""
    playing = playing or {}
    if codes:
        results = by_submission(results, codes)
    outcomes = outcomes_from(results)
    elo = LiveElo()
    for outcome in outcomes:
        elo.update(outcome)
    live = elo.ratings()
    stats = bot_stats(results)
    if intervals is None:
        intervals = interval_method(len(stats), len(outcomes))
    result = fit(
        outcomes, bootstrap=bootstrap, seed=seed, min_matches=min_matches, intervals=intervals
    )
    response = league_pb2.StandingsResponse(
        matches=len(outcomes), published_at=time.time(), warnings=result.warnings
    )
    for s in result.standings:
        st = stats[s.bot]
        bot, mark, number = s.bot.partition(SUBMISSION_MARK)
        if mark or bot in playing:
            response.submissions.add(
                bot=bot,
                submission=int(number or 0),
                rating=s.rating,
                ci_low=s.ci_low,
                ci_high=s.ci_high,
                matches=st.matches,
                provisional=s.provisional,
            )
            if not mark or playing.get(bot) != int(number):
                continue  # not the entry's line: a submission that no longer plays
        response.standings.add(
            bot=bot,
            rating=s.rating,
            ci_low=s.ci_low,
            ci_high=s.ci_high,
            games=s.games,
            live_elo=live.get(s.bot, math.nan),
            matches=st.matches,
            mean_place=st.mean_place,
            mean_score=st.mean_score,
            faults=st.faults,
            provisional=s.provisional,
            group=s.group,
            ci_low_open=s.low_open,
            ci_high_open=s.high_open,
            anchor=s.anchor,
            unidentified=s.unidentified,
            cut_share=s.cut_share,
        )
    return response


async def fit_in_child(
    database: Path | str, league: str, bootstrap: int, min_matches: int = MIN_MATCHES
) -> league_pb2.StandingsResponse:
    """The standings of ``league`` in ``database`` (a path or a URL), fitted by a child
    process; raises RuntimeError saying why not."""
    # The database's name (a URL may hold a password) goes in on a plain pipe, written in
    # full before the child starts: asyncio's stdin writer and its protocol hold each
    # other, a reference cycle left for the collector at every fit.
    target = f"{database}\n".encode()
    read_end, write_end = os.pipe()
    try:
        with open(write_end, "wb", closefd=True) as pipe:
            pipe.write(target)  # far below the pipe's buffer
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "referee.league.standings",
            "-",
            league,
            str(bootstrap),
            str(min_matches),
            stdin=read_end,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **_ONE_THREAD},
        )
    finally:
        os.close(read_end)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), FIT_TIMEOUT_S)
    except BaseException:  # timed out or cancelled (the league stops): no orphan
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"the standings process exited with status {proc.returncode}: {last[0]}")
    return league_pb2.StandingsResponse.FromString(out)


def main(argv: list[str] | None = None) -> int:
    """Fit and write the standings (see the module's docstring)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4 or not (args[2].isdigit() and args[3].isdigit()):
        print(
            "usage: python -m referee.league.standings DATABASE LEAGUE BOOTSTRAP MIN_MATCHES",
            file=sys.stderr,
        )
        return 2
    database = sys.stdin.readline().strip() if args[0] == "-" else args[0]
    league, bootstrap, min_matches = args[1], int(args[2]), int(args[3])
    # Log lines (a store reconnecting) go to stderr: stdout is the standings' bytes.
    logs.configure("warning")
    store = open_store(database)
    try:
        results = store.results(league, think=False)
        codes = {k: c.submission for k, c in SeatCodes(store, league).all().items()}
        playing = {b: s.number for b, s in Submissions(store).playing_by_bot().items()}
    finally:
        store.close()
    standings = compute_standings(
        results, bootstrap, min_matches=min_matches, codes=codes, playing=playing
    )
    sys.stdout.buffer.write(standings.SerializeToString())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
