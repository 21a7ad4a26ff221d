"""Prometheus metrics, all named ``sticheln_*`` and documented in docs/metrics.md.

Every metric is created on an injected :class:`CollectorRegistry` (tests build a fresh
one). Labels stay low-cardinality: bot name, phase, fault reason; never a match id.
:class:`MetricsObserver` is the match runner's hook; it caches the labelled children so
that a decision costs a dictionary lookup and two increments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from referee.match.faults import FaultReason

if TYPE_CHECKING:
    from referee.match.pool import BotPool

# Think times from 100 µs to the default 1 s clock and beyond.
THINK_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
)
MATCH_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


class RefereeMetrics:
    """The referee's metrics on one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.matches = Counter("sticheln_matches", "Matches finished.", registry=r)
        self.rounds = Counter("sticheln_rounds", "Rounds played.", registry=r)
        self.tricks = Counter("sticheln_tricks", "Tricks played.", registry=r)
        self.decisions = Counter(
            "sticheln_decisions",
            "Decisions answered by bots, by bot and phase.",
            ["bot", "phase"],
            registry=r,
        )
        self.faults = Counter(
            "sticheln_faults", "Faults by bot and reason.", ["bot", "reason"], registry=r
        )
        self.think = Histogram(
            "sticheln_think_time_seconds",
            "Time from a decision request to its answer, by bot and phase.",
            ["bot", "phase"],
            buckets=THINK_BUCKETS,
            registry=r,
        )
        self.match_duration = Histogram(
            "sticheln_match_duration_seconds",
            "Wall time of a match, bot start-up included.",
            buckets=MATCH_BUCKETS,
            registry=r,
        )
        self.elo = Gauge("sticheln_elo", "Live Elo rating by bot.", ["bot"], registry=r)
        self.planned = Gauge("sticheln_matches_planned", "Matches in the schedule.", registry=r)
        self.finished = Gauge(
            "sticheln_matches_finished", "Matches of the schedule finished.", registry=r
        )
        self.running = Gauge("sticheln_matches_running", "Matches being played now.", registry=r)
        self.connected = Gauge(
            "sticheln_connected_bots", "Bot streams attached to the referee now.", registry=r
        )
        self.decision_limit = Gauge(
            "sticheln_decision_limit_seconds",
            "The clock's per-decision time limit (what think times are measured against).",
            registry=r,
        )
        # A league's fair-play test (docs/fairplay.md): 1 while a bot is flagged.
        self.fairplay_flagged = Gauge(
            "sticheln_fairplay_flagged",
            "1 when the fair-play test flags the bot (a question for the organiser), else 0.",
            ["bot"],
            registry=r,
        )
        # A league's hosted bots (docs/hosting.md).
        self.queue_depth = Gauge(
            "sticheln_hosted_queue_depth",
            "Matches of hosted bots waiting for a worker.",
            registry=r,
        )
        self.voids = Counter(
            "sticheln_hosted_voids",
            "Matches of hosted bots void because their worker's lease ran out.",
            registry=r,
        )
        self.submissions = Counter(
            "sticheln_hosted_submissions",
            "Hosted submissions decided, by outcome (playing, refused).",
            ["status"],
            registry=r,
        )
        self.validation = Histogram(
            "sticheln_hosted_validation_seconds",
            "Wall time of a submission's validation, its build included.",
            buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200),
            registry=r,
        )
        self.build = Histogram(
            "sticheln_hosted_build_seconds",
            "Wall time of a submission's build in the jail (failed builds included).",
            buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200),
            registry=r,
        )
        self.store_bytes = Gauge(
            "sticheln_hosted_store_bytes",
            "Bytes of hosted code a league keeps: archives in its database, unpacked in its "
            "code folder.",
            ["part"],
            registry=r,
        )
        self._decision_children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self._fault_children: dict[tuple[str, str], Counter] = {}

    def watch_worker(self, name: str, played: Callable[[], int]) -> None:
        """Export a league worker's matches played and stored,
        ``sticheln_worker_matches_played_total{worker=name}``, read from ``played`` at
        each scrape (the league counts every match in ``sticheln_matches_total``; a
        worker's own endpoint says which of them it played)."""
        self.registry.register(_Played(name, played))

    def watch_pool(self, pool: Callable[[], BotPool | None]) -> None:
        """Export a warm pool's processes (``sticheln_warm_bot_*``, docs/metrics.md), read
        from ``pool()`` at each scrape (nothing while it gives None: a pool not made yet)."""
        self.registry.register(_WarmPool(pool))

    def serve(self, port: int, addr: str = "127.0.0.1") -> int:
        """Serve the exposition over HTTP on ``addr:port`` (0 = any free port); returns the port."""
        server, _thread = start_http_server(port, addr=addr, registry=self.registry)
        bound: int = server.server_port
        return bound

    # -- the runner's observer hooks ---------------------------------------------------------

    def decision(self, bot: str, phase: str, think_s: float) -> None:
        """A bot answered a request."""
        children = self._decision_children.get((bot, phase))
        if children is None:
            children = (self.decisions.labels(bot, phase), self.think.labels(bot, phase))
            self._decision_children[(bot, phase)] = children
        children[0].inc()
        children[1].observe(think_s)

    def fault(self, bot: str, reason: FaultReason) -> None:
        """A seat faulted."""
        child = self._fault_children.get((bot, reason.value))
        if child is None:
            child = self._fault_children[(bot, reason.value)] = self.faults.labels(
                bot, reason.value
            )
        child.inc()

    def trick(self) -> None:
        """A trick was completed."""
        self.tricks.inc()

    def round(self) -> None:
        """A round was scored."""
        self.rounds.inc()

    def stream_attached(self) -> None:
        """A bot stream completed its handshake."""
        self.connected.inc()

    def stream_closed(self) -> None:
        """An attached bot stream ended."""
        self.connected.dec()


class _Played(Collector):
    """A worker's count of matches played, read when scraped."""

    def __init__(self, name: str, played: Callable[[], int]) -> None:
        self.name = name
        self.played = played

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "sticheln_worker_matches_played",
            "Matches of hosted bots this worker played and stored, by worker.",
            labels=["worker"],
        )
        family.add_metric([self.name], float(self.played()))
        yield family


#: The states of a warm pool's process (:class:`~referee.match.pool.HeldProcess`).
POOL_STATES = ("starting", "serving", "idle")
#: Why a pool stopped a process (:attr:`~referee.match.pool.BotPool.stopped`).
POOL_STOPS = ("idle", "room", "retired")


class _WarmPool(Collector):
    """A warm pool's processes, read when scraped (from the metrics server's thread: the
    pool's lists and counts are copied, never changed here)."""

    def __init__(self, pool: Callable[[], BotPool | None]) -> None:
        self.pool = pool

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        pool = self.pool()
        if pool is None:
            return
        held = pool.held_now()
        processes = GaugeMetricFamily(
            "sticheln_warm_bot_processes",
            "Bot processes a warm pool holds now, by state (starting, serving, idle).",
            labels=["state"],
        )
        for state in POOL_STATES:
            processes.add_metric([state], sum(h.state == state for h in held))
        yield processes
        memory = GaugeMetricFamily(
            "sticheln_warm_bot_memory_bytes",
            "Memory of a warm pool's processes of each bot together (their cgroups': in the "
            "gVisor tier the Sentry and gofer too), by bot; processes still starting are "
            "not counted.",
            labels=["bot"],
        )
        by_bot: dict[str, int] = {}
        for h in held:
            if h.state != "starting":
                by_bot[h.bot] = by_bot.get(h.bot, 0) + h.memory_bytes
        for bot, used in sorted(by_bot.items()):
            memory.add_metric([bot], used)
        yield memory
        started = CounterMetricFamily(
            "sticheln_warm_bot_starts", "Bot processes a warm pool has started."
        )
        started.add_metric([], pool.started)
        yield started
        seatings = CounterMetricFamily(
            "sticheln_warm_bot_seatings",
            "Seats a warm pool lent to matches, from a process that had served none before "
            "(fresh) or from one that had (warm: reuse).",
            labels=["process"],
        )
        for kind, count in sorted(dict(pool.seatings).items()):
            seatings.add_metric([kind], count)
        yield seatings
        restarts = CounterMetricFamily(
            "sticheln_warm_bot_restarts",
            "A warm pool's processes that died or whose stream a match cut (the bot's "
            "fault), by bot; each is replaced by a fresh process for the bot's next match.",
            labels=["bot"],
        )
        for bot, count in sorted(dict(pool.lost).items()):
            restarts.add_metric([bot], count)
        yield restarts
        stops = CounterMetricFamily(
            "sticheln_warm_bot_stops",
            "A warm pool's processes it stopped, by why (idle: past its idle time; room: "
            "for the pool's bounds; retired: the submission no longer plays).",
            labels=["why"],
        )
        stopped = dict(pool.stopped)
        for why in POOL_STOPS:
            stops.add_metric([why], stopped.get(why, 0))
        yield stops
