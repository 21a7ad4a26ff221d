"""Shared test helpers: card text, a seeded random player and an independent rules oracle.

The oracle functions restate docs/rules.md rules 6 and 8 as plainly as possible, without
looking at the engine's code, so tests can compare the engine against them.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import costs
import pytest
from machine import busy_by_others, load_factor

from referee.rules import Action, Card, Phase, Round, parse_card

Step = tuple[int, Action]

#: The file mode mask the test session started with.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def pytest_configure(config: pytest.Config) -> None:
    costs.register(config)


def _timeout(item: pytest.Item) -> tuple[float | None, tuple[object, ...], dict[str, object]]:
    """A test's timeout (pytest-timeout's, from its mark or pyproject.toml) and the mark's
    other arguments."""
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        base = marker.kwargs.get("timeout", marker.args[0] if marker.args else None)
        rest = {k: v for k, v in marker.kwargs.items() if k != "timeout"}
        return (float(base) if base else None), tuple(marker.args[1:]), rest
    base = item.config.getoption("timeout", None) or item.config.getini("timeout")
    return (float(base) if base else None), (), {}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (those whose timeout says they take minutes: a league that
    builds, a kit in the jail), so that the parallel phase does not end with two workers
    idle while a third plays one of them; then the modules kept on one worker (below),
    each a few minutes of tests; otherwise in the order collected.

    A module whose tests share a module-scoped fixture (a tournament played for its pages,
    a browser, a league) runs on one worker (``--dist loadgroup``): spread over four, each
    worker would make the fixture again, and its tournaments are most of the module's CPU."""
    grouped = set()
    for item in items:
        if _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
            grouped.add(item)
    items.sort(key=lambda item: (-(_timeout(item)[0] or 0), item not in grouped))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture made once per module."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """A test's timeout catches a hang; it is not what the test checks. It is stretched by
    :func:`load_factor` when the test starts, so a machine held at a load average of 20 by
    other work does not fail a test that merely runs slower there."""
    base, extra, rest = _timeout(item)
    factor = load_factor()
    if base and base > 0 and factor > 1:
        scaled = base * factor
        item.add_marker(pytest.mark.timeout(scaled, *extra, **rest), append=False)
    yield


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``quiet`` judges timing and needs a machine no other work holds busy:
    on a busy one it is skipped, with the reason in pytest's summary."""
    if item.get_closest_marker("quiet") is not None:
        why = busy_by_others()
        if why:
            pytest.skip(why)


@pytest.fixture(autouse=True)
def _session_umask() -> Iterator[None]:
    """Every test starts with the session's umask. ``referee.cli.main`` sets 077 for the
    process it runs in (its outputs are private); a test that ran it in-process would
    otherwise make the files later tests write for jailed bots unreadable to them."""
    os.umask(_UMASK)
    yield
    os.umask(_UMASK)


def cards(text: str) -> list[Card]:
    """Cards from their text form, e.g. ``cards("H12 C0")``."""
    return [parse_card(t) for t in text.split()]


def reference_trick_winner(played: Iterable[Card], trump_rule: str) -> int:
    """docs/rules.md rule 6 and the ``trump_rule`` option: the winning position, or -1."""
    trick = list(played)
    lead_suit = trick[0] // 16  # 6.1: the first card's suit, even a zero
    counted = [(i, c) for i, c in enumerate(trick) if c % 16 != 0]  # 6.2: zeros are absent
    if not counted:
        return -1  # 6.6
    off_suit = [(i, c) for i, c in counted if c // 16 != lead_suit]
    if off_suit and trump_rule == "last_suit":
        latest_suit = off_suit[-1][1] // 16
        candidates = [(i, c) for i, c in off_suit if c // 16 == latest_suit]
    elif off_suit:
        candidates = off_suit  # 6.3
    else:
        candidates = counted  # 6.4: only lead-suit cards are left
    top = max(c % 16 for _, c in candidates)
    return min(i for i, c in candidates if c % 16 == top)  # 6.5: the earlier card wins


def reference_score(pile: Iterable[Card], pain_suits: Iterable[int]) -> int:
    """docs/rules.md rule 8: a pain-suit card costs its rank, any other card is worth +1."""
    suits = set(pain_suits)
    return sum(-(c % 16) if c // 16 in suits else 1 for c in pile)


def random_action(rnd: Round, seat: int, rng: random.Random) -> Action:
    """A random legal action, biased towards zeros so that all-zero tricks happen."""
    legal = rnd.legal_actions(seat)
    if rnd.phase is Phase.PLAY and rng.random() < 0.6 and all(c % 16 == 0 for c in rnd.trick):
        zeros = [c for c in legal if isinstance(c, int) and c % 16 == 0]
        if zeros:
            return rng.choice(zeros)
    return rng.choice(legal)


def play_round(
    rnd: Round,
    rng: random.Random,
    on_step: Callable[[Round], None] | None = None,
    max_steps: int = 10_000,
) -> list[Step]:
    """Play ``rnd`` to its end with random legal actions; returns the actions applied.

    Pain picks are made in a random seat order (the choice is simultaneous). ``on_step``
    is called before the first action and after every action.
    """
    steps: list[Step] = []
    if on_step:
        on_step(rnd)
    while not rnd.is_over:
        assert len(steps) < max_steps, "the round does not end"
        waiting = rnd.to_act()
        seat = rng.choice(waiting)
        action = random_action(rnd, seat, rng)
        rnd.apply(seat, action)
        steps.append((seat, action))
        if on_step:
            on_step(rnd)
    return steps


@pytest.fixture
def rng() -> random.Random:
    """A fixed-seed random generator, so every run plays the same games."""
    return random.Random(20260101)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh folder right under /tmp, for a referee's TMPDIR whose socket folders a test
    looks into: pytest's own folders (deeper still under several test processes) are too
    deep for a Unix socket's path, so the referee would make its sockets in /tmp instead."""
    folder = Path(tempfile.mkdtemp(prefix="tmp-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():  # type: ignore[no-untyped-def]
    """One real PostgreSQL server on loopback for the whole session."""
    from postgres_server import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server, request) -> str:  # type: ignore[no-untyped-def]
    """The URL of a new, empty database for this test."""
    import re
    import uuid

    # Unique: parametrized tests share the truncated name (PostgreSQL names are <= 63 bytes).
    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]
    return str(postgres_server.create_database(f"t_{name}_{uuid.uuid4().hex[:12]}"))


@pytest.fixture(params=["sqlite", "postgresql"])
def league_db(request, tmp_path):  # type: ignore[no-untyped-def]
    """The database of a league test, which runs once on each: the default SQLite file
    (out/league.db next to a league file in tmp_path), then a new database on the
    throwaway PostgreSQL server."""
    from leaguekit import postgres_db, sqlite_db

    if request.param == "sqlite":
        return sqlite_db(tmp_path)
    return postgres_db(request.getfixturevalue("postgres_url"))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_league_db(request, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Like ``league_db``, for a module's one league: its folder and its database."""
    import uuid

    from leaguekit import postgres_db, sqlite_db

    folder = tmp_path_factory.mktemp(f"league-{request.param}")
    if request.param == "sqlite":
        return folder, sqlite_db(folder)
    server = request.getfixturevalue("postgres_server")
    return folder, postgres_db(server.create_database(f"league_{uuid.uuid4().hex[:12]}"))
