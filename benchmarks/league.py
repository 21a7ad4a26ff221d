"""League load: 50 registered bots, two streams each, playing a real ``referee serve`` for 60 s.

Everything runs on 127.0.0.1. Each run starts the league as a real subprocess,
``referee serve --config FILE`` on a free port, with a fresh league file, database and
record folder in a temporary directory. The league's defaults hold except: ``parallel``
is the number of streams over ``table_size`` (every stream can be in a match at once),
``shutdown_grace_s`` is 0 (the benchmark ends by stopping the league) and the metrics
endpoint is on (the counters the figures are read from). The clock is the league's
default (``decision_ms`` 1000), so a referee that lets a request wait a second shows up
as a timeout fault. The benchmark registers the bots through the admin API
(``League.RegisterBot``), then starts the bot processes: ``benchmarks/bots/fast_bot.py``,
which answers every request at once with a legal card.

Why 10 processes of 5 bots (``--bots-per-process``), not 50 processes: the machine this
was written for has 2 cores, and the referee, a single asyncio process, needs one of them
to itself. 50 bot processes would cost some 50 x 30 MB of memory and, worse, a wake-up
and a context switch of a different process for nearly every decision; 10 processes
serving 10 streams each keep the bots' share of the other core small while every stream
is still its own gRPC channel and every bot its own registered entry with its own token,
``Hello.bot_name`` and ``Hello.max_concurrent_matches`` (``--streams``, default 2). To the
referee the load is the same: 50 bots, 100 streams.

Each run waits until every stream is connected, lets the league play ``--warmup`` seconds,
then measures for ``--seconds``:

- matches/s and decisions/s: the referee's own counters (``sticheln_matches_total``,
  ``sticheln_decisions_total`` from its metrics endpoint) at the start and the end of the
  window;
- the referee's peak memory: ``VmHWM`` (peak resident set) of the referee process from
  ``/proc/PID/status`` at the end of the window, start-up and warm-up included; and how
  fast the resident set grew in the window (``VmRSS`` at its start, the warm-up over,
  and at its end, in MB per minute, and once a minute in between), since a league runs
  for weeks;
- p99 think-time-to-next-request: in the bot processes, the time from sending an answer
  to receiving the next decision request on the same stream (the requests to the table's
  other seats in between included), p99 over all samples of all streams taken in the
  window, in microseconds (the bots take samples between a SIGUSR1 and a SIGUSR2). In a
  card-play phase the other seats of the table play in between, so this is roughly
  ``table_size`` turnarounds of a match on a referee serving every other match too: it
  grows with the number of matches at once, and is no measure of one round trip;
- faults: every fault the league's database records (``faults`` table) over the whole run,
  and the referee's fault counter (``sticheln_faults_total``, which also counts the
  matches still running at the end). The bots answer at once and legally, so any fault
  (e.g. the timeout of a bot that answered instantly) is caused by the referee;
- the CPU the referee process and the bot processes used in the window, in cores, and
  the share of the machine's CPU time stolen by the host in the window (``machine.py``).

Targets (printed as met or missed, on the median figures): no fault caused by the referee
(none at all), peak RSS under 300 MB, and decisions/s at least 70% of the protocol
benchmark's single-match rate (``benchmarks/protocol.py``'s ``decisions_per_s``;
``--protocol-rate``, default 2000: a reference figure from a quiet machine, not measured
here). Other load on the machine lowers decisions/s and raises the latency.

With ``--web`` the league serves its web pages (``web_port``) with no live viewer, and one
thread calls the pages' API routes in turn all along (``--api-rate`` calls a second, as
with ``--watchers``): what a league with its web face on keeps in memory shows in the
resident set, printed once a minute as without the web. It prints the RSS growth from the
end of the warm-up to the end of the window in MB and the target: at most
``TARGET_WEB_GROWTH_MB`` (the web pages' documents are bounded, docs/web.md).

With ``--watchers N`` the league also serves its web pages (``web_port``), and the window
is measured in four equal parts, without, with, with and without N live viewers (an
A-B-B-A order, so that a drift of the machine's load falls on both sides). A viewer is a
Server-Sent Events stream of a running match (``/api/matches/{id}/live``; viewer i takes
the i-th newest running match, so that most watch a match from near its start, and when it
ends takes another), reading every event. All the viewers' streams are read by one thread
of this process (a selector loop), not a thread each: this process shares the machine's
cores with the league, and 20 threads woken for every batch the server writes cost the
league more CPU (and context switches) than the viewers of a real audience, each in a
browser on its own machine, would. All along (with and without viewers, so that the parts differ by the viewers alone) one
more thread calls the pages' API routes in turn, ``--api-rate`` calls a second (the
standings, the matches, the bots, a bot, head to head, a finished match's viewer
document), timing each call from request to the last byte. It prints decisions/s without
and with viewers and the cost in percent, the referee's CPU per decision without and with
viewers (a figure that other processes on the machine disturb less than decisions/s: they
take CPU from the referee, not add to what a decision costs), the API calls' p50, p99 and
max, the referee's CPU in each part, the CPU of the viewers themselves (this process: on a
small machine they take CPU from the league too) and the CPU stolen by the host in each
part (``machine.py``). Targets: the viewers cost at most 10% of the decisions/s, and an
API call answers in under 50 ms at p99. The last line is then ``watchers=<n>
decisions_per_s_without=<a> decisions_per_s_with=<b> cost_percent=<c> api_p99_ms=<d>
steal_percent=<e> cpu_per_decision_percent=<f>``.

The figures of every run are printed, then their medians (``--runs``, default 1); the last
line is exactly ``bots=<n> matches_per_s=<a> decisions_per_s=<b> peak_rss_mb=<c> p99_us=<d>``
(medians). ``--profile FILE`` runs the referee under cProfile and writes its pstats to
FILE (of the last run; slower, so the figures of a profiled run are not comparable). Every
subprocess is stopped at the end of a run, on an error or on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import array
import math
import os
import selectors
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import grpc
from machine import Steal, loaded_warning

from sticheln.v1 import league_pb2, league_pb2_grpc

HERE = Path(__file__).resolve().parent
FAST_BOT = HERE / "bots" / "fast_bot.py"
REFEREE = Path(sys.executable).with_name("referee")
LEAGUE = "bench"
TABLE_SIZE = 4
#: Every wait of the benchmark is bounded: start-up, connecting and stopping.
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
RPC_TIMEOUT_S = 10.0
#: A fixed admin token: the league lives only on loopback for the run.
ADMIN_TOKEN = "league-bench-admin-token-0123456789"
TARGET_RSS_MB = 300.0
TARGET_SHARE = 0.70
#: With --watchers: the viewers may cost at most this share of decisions/s, and an API
#: call must answer within this at p99.
TARGET_WATCH_COST = 0.10
TARGET_API_P99_MS = 50.0
#: With --web: the resident set may grow at most this much (MB) after the warm-up.
TARGET_WEB_GROWTH_MB = 10.0
#: The API routes the poller calls in turn ({bot} and {match} are filled in).
API_ROUTES = (
    "/api/standings",
    "/api/matches?limit=50",
    "/api/bots",
    "/api/info",
    "/api/bot?name={bot}",
    "/api/head-to-head",
    "/api/matches/{match}",
)


class BenchError(Exception):
    """The run could not be completed (one line, printed as is)."""


@dataclass
class Figures:
    matches_per_s: float
    decisions_per_s: float
    peak_rss_mb: float
    #: ``VmRSS`` at the start of the window (the warm-up over) and at its end.
    rss_start_mb: float
    rss_end_mb: float
    rss_growth_mb_per_min: float
    p99_us: float
    p50_us: float
    max_us: float
    samples: int
    faults_db: dict[str, int]
    faults_counter: float
    matches_db: int
    referee_cores: float
    bot_cores: float
    #: The share of CPU time stolen by the host in the window, in percent.
    steal_percent: float = math.nan
    watch: Watch | None = None


@dataclass
class Watch:
    """The figures of a run with live viewers (``--watchers``)."""

    watchers: int
    without: list[float]
    with_viewers: list[float]
    events: int
    clients: list[float]
    api_ms: list[float]
    api_errors: int
    steal_without: list[float]
    steal_with: list[float]
    referee_without: list[float]
    referee_with: list[float]
    audience_cores: list[float]
    follows: int = 0
    #: (decisions, referee CPU seconds) summed over the parts without and with viewers.
    cpu_without: tuple[float, float] = (0.0, 0.0)
    cpu_with: tuple[float, float] = (0.0, 0.0)

    @property
    def us_per_decision(self) -> tuple[float, float]:
        """The referee's CPU per decision without and with viewers, in µs: unlike
        decisions/s, it does not depend on how much CPU other processes left it."""
        a, b = self.cpu_without, self.cpu_with
        return (1e6 * a[1] / a[0] if a[0] else math.nan, 1e6 * b[1] / b[0] if b[0] else math.nan)

    @property
    def rate_without(self) -> float:
        return statistics.fmean(self.without)

    @property
    def rate_with(self) -> float:
        return statistics.fmean(self.with_viewers)

    @property
    def cost(self) -> float:
        """The share of decisions/s the viewers cost (negative: none measurable)."""
        return 1.0 - self.rate_with / self.rate_without if self.rate_without else math.nan

    def api(self, q: float) -> float:
        ms = sorted(self.api_ms)
        return ms[min(len(ms) - 1, int(q * len(ms)))] if ms else math.nan


class RssSampler:
    """``VmRSS`` of a process once a minute (from the start), in a thread of its own."""

    def __init__(self, pid: int, every_s: float = 60.0) -> None:
        self.pid = pid
        self.every_s = every_s
        self.mb = [_vm_mb(pid, "VmRSS")]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.mb.append(_vm_mb(self.pid, "VmRSS"))
            except OSError:
                return

    def end(self) -> list[float]:
        """Stop sampling; the samples."""
        self._stop.set()
        self._thread.join(STOP_TIMEOUT_S)
        return self.mb


class Audience:
    """Live viewers of running matches (one thread reads every stream) and an API caller
    (a thread of its own), in this process."""

    def __init__(self, web: str, watchers: int, api_rate: float) -> None:
        self.web = web
        self.host, port = web.removeprefix("http://").rstrip("/").rsplit(":", 1)
        self.port = int(port)
        self.watchers = watchers
        self.api_rate = api_rate
        self.events = [0] * watchers
        self.follows = [0] * watchers
        self.api_ms: list[float] = []
        self.api_errors = 0
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.api_stop = threading.Event()
        self.api_thread = threading.Thread(target=self._call_api, daemon=True)

    def start_api(self) -> None:
        """Call the API, ``api_rate`` calls a second, until :meth:`end_api`."""
        self.api_thread.start()

    def end_api(self) -> None:
        self.api_stop.set()
        if self.api_thread.is_alive():
            self.api_thread.join(STOP_TIMEOUT_S)

    def start(self) -> None:
        """The viewers join."""
        self.stop.clear()
        self.threads = [threading.Thread(target=self._watch, daemon=True)]
        for t in self.threads:
            t.start()

    def end(self) -> None:
        """The viewers leave."""
        self.stop.set()
        for t in self.threads:
            t.join(STOP_TIMEOUT_S)
        self.threads = []

    def _get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.web + path, timeout=RPC_TIMEOUT_S) as r:
            body: bytes = r.read()
            return body

    def _running(self) -> list[str]:
        """The running matches' ids, oldest first (none when the API does not answer)."""
        import json

        try:
            return [m["match_id"] for m in json.loads(self._get("/api/matches?limit=1"))["running"]]
        except OSError:
            return []

    def _open(self, index: int, match_id: str) -> socket.socket:
        """Viewer ``index`` asks for the live stream of ``match_id``."""
        self.follows[index] += 1
        # 30 viewers an address: the web server takes at most 32 of one client.
        source = (f"127.0.{1 + index // 7500}.{2 + index // 30 % 250}", 0)
        s = socket.create_connection((self.host, self.port), RPC_TIMEOUT_S, source)
        s.sendall(
            f"GET /api/matches/{match_id}/live HTTP/1.1\r\nHost: {self.host}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        s.setblocking(False)
        return s

    def _watch(self) -> None:
        """Every viewer's stream in one thread, read as data arrives: each follows running
        matches one after the other, counting their events."""
        sel = selectors.DefaultSelector()
        tails: dict[int, bytes] = {}
        try:
            while not self.stop.is_set():
                idle = [i for i in range(self.watchers) if i not in tails]
                running = self._running() if idle else []
                for i in idle if running else []:
                    # The newest matches first: a viewer comes to watch a match from its start.
                    try:
                        s = self._open(i, running[-1 - i % len(running)])
                    except OSError:
                        continue
                    sel.register(s, selectors.EVENT_READ, i)
                    tails[i] = b""
                for key, _ in sel.select(0.05 if idle else 0.5):
                    i, stream = key.data, key.fileobj
                    assert isinstance(stream, socket.socket)
                    try:
                        chunk = stream.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    buf = tails[i] + chunk
                    self.events[i] += buf.count(b"\ndata: ") - tails[i].count(b"\ndata: ")
                    if not chunk or b"event: close" in buf:
                        sel.unregister(stream)
                        stream.close()
                        del tails[i]
                    else:
                        tails[i] = buf[-32:]
        finally:
            for key in list(sel.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            sel.close()

    def _call_api(self) -> None:
        import json

        n = 0
        interval = 1.0 / self.api_rate
        match = bot = ""
        next_at = time.perf_counter()
        while not self.api_stop.is_set():
            route = API_ROUTES[n % len(API_ROUTES)]
            n += 1
            if ("{match}" in route and not match) or ("{bot}" in route and not bot):
                continue
            t0 = time.perf_counter()
            try:
                body = self._get(route.format(bot=bot, match=match))
                self.api_ms.append((time.perf_counter() - t0) * 1000)
            except OSError:
                self.api_errors += 1
                body = b""
            if route.startswith("/api/matches?") and body:
                finished = json.loads(body)["finished"]
                match = finished[0]["match_id"] if finished else match
                bot = finished[0]["seating"][0] if finished else bot
            next_at += interval
            self.api_stop.wait(max(0.0, next_at - time.perf_counter()))


def _watch_windows(
    args: argparse.Namespace, metrics_url: str, web: str, referee: int
) -> tuple[Watch, float]:
    """Four parts of the window: without, with, with, without viewers; (figures, seconds)."""
    audience = Audience(web, args.watchers, args.api_rate)
    part = args.seconds / 4
    watch = Watch(args.watchers, [], [], 0, [], [], 0, [], [], [], [], [])
    measured = 0.0
    # The API is called all along: the parts differ by the viewers alone.
    audience.start_api()
    time.sleep(1.0)
    try:
        for watched in (False, True, True, False):
            if watched and not audience.threads:
                audience.start()
                # Joining viewers get each match's events so far at once; let that pass.
                time.sleep(1.0)
            elif not watched and audience.threads:
                audience.end()
                time.sleep(1.0)
            before, steal, t0 = _metrics(metrics_url), Steal(), time.perf_counter()
            cpu0, own0 = _cpu_s(referee), time.process_time()
            time.sleep(part)
            after, elapsed = _metrics(metrics_url), time.perf_counter() - t0
            cores = (_cpu_s(referee) - cpu0) / elapsed
            (watch.referee_with if watched else watch.referee_without).append(cores)
            if watched:
                watch.audience_cores.append((time.process_time() - own0) / elapsed)
            measured += elapsed
            decisions = after["sticheln_decisions_total"] - before["sticheln_decisions_total"]
            rate = decisions / elapsed
            spent = (decisions, cores * elapsed)
            if watched:
                watch.cpu_with = (watch.cpu_with[0] + spent[0], watch.cpu_with[1] + spent[1])
            else:
                watch.cpu_without = (
                    watch.cpu_without[0] + spent[0],
                    watch.cpu_without[1] + spent[1],
                )
            (watch.with_viewers if watched else watch.without).append(rate)
            (watch.steal_with if watched else watch.steal_without).append(steal.percent())
            if watched:
                watch.clients.append(after.get("sticheln_web_clients", 0.0))
    finally:
        audience.end()
        audience.end_api()
    watch.events = sum(audience.events)
    watch.follows = sum(audience.follows)
    watch.api_ms = audience.api_ms
    watch.api_errors = audience.api_errors
    return watch, measured


def _league_file(
    tmp: Path, streams_total: int, metrics_port: int, web_port: int | None = None
) -> Path:
    path = tmp / "league.toml"
    path.write_text(
        "\n".join(
            [
                "[league]",
                f'name = "{LEAGUE}"',
                "seed = 1",
                f"table_size = {TABLE_SIZE}",
                f"parallel = {max(1, streams_total // TABLE_SIZE)}",
                f'out = "{tmp / "out"}"',
                f'database = "{tmp / "league.db"}"',
                'host = "127.0.0.1"',
                "port = 0",
                f"metrics_port = {metrics_port}",
                'metrics_host = "127.0.0.1"',
                "shutdown_grace_s = 0",
                *([f"web_port = {web_port}"] if web_port is not None else []),
                "",
            ]
        ),
        encoding="utf-8",
    )
    return path


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _read_line(proc: subprocess.Popen[bytes], timeout: float, what: str, log: Path) -> str:
    """The first line of ``proc``'s stdout, waiting at most ``timeout`` seconds."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    line = b""
    try:
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise BenchError(f"{what} did not print its address within {timeout:.0f} s")
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                tail = log.read_text(errors="replace").strip().splitlines()[-1:]
                raise BenchError(f"{what} exited with {proc.wait()}: {' '.join(tail)}")
            line += chunk
    finally:
        sel.close()
    return line.decode().strip()


def _metrics(url: str) -> dict[str, float]:
    """Every sample of the referee's metrics endpoint summed by metric name."""
    with urllib.request.urlopen(url, timeout=RPC_TIMEOUT_S) as response:
        text = response.read().decode()
    sums: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        sums[name] = sums.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return sums


def _vm_mb(pid: int, field: str) -> float:
    """``VmHWM`` (peak resident set) or ``VmRSS`` of a live process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise BenchError(f"no {field} in /proc/{pid}/status")


def _cpu_s(pid: int) -> float:
    """User+system CPU seconds of a live process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stop(proc: subprocess.Popen[bytes], sig: int, timeout: float) -> None:
    """Send ``sig``; kill the process when it has not exited after ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _faults(database: Path) -> tuple[dict[str, int], int]:
    """(faults by reason, finished matches) recorded in the league's database."""
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=RPC_TIMEOUT_S)
    try:
        faults = dict(
            db.execute(
                "SELECT reason, COUNT(*) FROM faults WHERE tournament = ? GROUP BY reason",
                (LEAGUE,),
            ).fetchall()
        )
        (matches,) = db.execute(
            "SELECT COUNT(*) FROM matches WHERE tournament = ? AND status = 'finished'",
            (LEAGUE,),
        ).fetchone()
    finally:
        db.close()
    return faults, matches


def _latencies(prefix: Path) -> array.array[int]:
    out: array.array[int] = array.array("I")
    for path in prefix.parent.glob(prefix.name + ".*"):
        with path.open("rb") as f:
            out.frombytes(f.read())
    return out


def _register(address: str, names: list[str]) -> dict[str, str]:
    """Register every bot through the admin API, each with an owner of its own (a league
    keeps two bots of one owner apart); their tokens by name."""
    metadata = (("authorization", f"Bearer {ADMIN_TOKEN}"),)
    tokens = {}
    with grpc.insecure_channel(address) as channel:
        stub = league_pb2_grpc.LeagueStub(channel)
        for name in names:
            response = stub.RegisterBot(
                league_pb2.RegisterBotRequest(name=name, owner=f"{name}-owner"),
                metadata=metadata,
                timeout=RPC_TIMEOUT_S,
            )
            tokens[name] = response.token
    return tokens


def _wait_connected(
    address: str, streams: int, procs: list[subprocess.Popen[bytes]], timeout: float
) -> float:
    """Wait until the league counts ``streams`` connected streams; the seconds it took."""
    start = time.monotonic()
    with grpc.insecure_channel(address) as channel:
        stub = league_pb2_grpc.LeagueStub(channel)
        while True:
            bots = stub.ListBots(league_pb2.ListBotsRequest(), timeout=RPC_TIMEOUT_S).bots
            connected = sum(b.connected_streams for b in bots)
            if connected >= streams:
                return time.monotonic() - start
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                raise BenchError(f"{len(dead)} process(es) exited while the bots were connecting")
            if time.monotonic() - start > timeout:
                raise BenchError(
                    f"only {connected} of {streams} streams connected within {timeout:.0f} s"
                )
            time.sleep(0.1)


def one_run(args: argparse.Namespace, profile: str | None) -> Figures:
    """Start the league and the bots, measure, stop everything."""
    tmp = Path(tempfile.mkdtemp(prefix="sticheln-league-bench-"))
    procs: list[subprocess.Popen[bytes]] = []
    bots: list[subprocess.Popen[bytes]] = []
    try:
        streams_total = args.bots * args.streams
        metrics_port = _free_port()
        web_port = _free_port() if args.watchers or args.web else None
        config = _league_file(tmp, streams_total, metrics_port, web_port)
        command = [str(REFEREE), "serve", "--config", str(config), "--log-level", args.log_level]
        if profile:
            command = [sys.executable, "-m", "cProfile", "-o", profile, *command]
        referee_log = tmp / "referee.log"
        with referee_log.open("wb") as err:
            referee = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                env={**os.environ, "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN},
            )
        procs.append(referee)
        line = _read_line(referee, START_TIMEOUT_S, "referee serve", referee_log)
        address = line.rsplit(" ", 1)[-1]
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"

        names = [f"fast{i:02d}" for i in range(args.bots)]
        tokens = _register(address, names)
        latency = tmp / "latency"
        per = max(1, args.bots_per_process)
        for i in range(0, args.bots, per):
            group = names[i : i + per]
            with (tmp / f"bots{i:02d}.log").open("wb") as log:
                bot = subprocess.Popen(
                    [sys.executable, str(FAST_BOT)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env={
                        **os.environ,
                        "STICHELN_REFEREE": address,
                        "STICHELN_BOTS": ",".join(f"{n}:{tokens[n]}" for n in group),
                        "STICHELN_SEATS": str(args.streams),
                        "STICHELN_BENCH_LATENCY": str(latency),
                        "STICHELN_BENCH_WINDOW": "1",
                    },
                )
            procs.append(bot)
            bots.append(bot)
        connect_s = _wait_connected(address, streams_total, procs, START_TIMEOUT_S)
        time.sleep(args.warmup)

        before = _metrics(metrics_url)
        cpu_ref, cpu_bots = _cpu_s(referee.pid), sum(_cpu_s(b.pid) for b in bots)
        rss0 = _vm_mb(referee.pid, "VmRSS")
        steal = Steal()
        t0 = time.perf_counter()
        for b in bots:
            b.send_signal(signal.SIGUSR1)
        watch = None
        # The resident set once a minute: a league runs for weeks, so it must stay flat.
        sampler = RssSampler(referee.pid)
        try:
            if web_port is not None and args.watchers:
                watch, _ = _watch_windows(
                    args, metrics_url, f"http://127.0.0.1:{web_port}", referee.pid
                )
            elif web_port is not None:
                audience = Audience(f"http://127.0.0.1:{web_port}", 0, args.api_rate)
                audience.start_api()
                try:
                    time.sleep(args.seconds)
                finally:
                    audience.end_api()
                api = sorted(audience.api_ms)
                if api:
                    print(
                        f"  web API: {len(api)} calls, p50 {api[len(api) // 2]:.1f} ms, "
                        f"p99 {api[min(len(api) - 1, int(0.99 * len(api)))]:.1f} ms, "
                        f"max {api[-1]:.1f} ms, {audience.api_errors} errors",
                        flush=True,
                    )
            else:
                time.sleep(args.seconds)
        finally:
            rss_by_minute = sampler.end()
        for b in bots:
            b.send_signal(signal.SIGUSR2)
        elapsed = time.perf_counter() - t0
        stolen = steal.percent()
        after = _metrics(metrics_url)
        cpu_ref = _cpu_s(referee.pid) - cpu_ref
        cpu_bots = sum(_cpu_s(b.pid) for b in bots) - cpu_bots
        peak_mb = _vm_mb(referee.pid, "VmHWM")
        rss1 = _vm_mb(referee.pid, "VmRSS")
        growth = (rss1 - rss0) / elapsed * 60
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise BenchError(f"{len(dead)} process(es) exited during the measurement")

        _stop(referee, signal.SIGTERM, STOP_TIMEOUT_S)
        for b in bots:  # their streams have ended: they write their samples and exit
            try:
                b.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                b.kill()
                b.wait()
        samples = sorted(_latencies(latency))
        faults_db, matches_db = _faults(tmp / "league.db")

        def key(name: str) -> float:
            return after.get(name, 0.0) - before.get(name, 0.0)

        def pct(q: float) -> float:
            return (
                float(samples[min(len(samples) - 1, int(q * len(samples)))])
                if samples
                else math.nan
            )

        print(
            f"  connected {streams_total} streams in {connect_s:.1f} s; "
            f"window {elapsed:.1f} s: {key('sticheln_matches_total'):.0f} matches, "
            f"{key('sticheln_decisions_total'):.0f} decisions; {len(samples)} latency samples; "
            f"RSS {rss0:.1f} MB at the start of the window, {rss1:.1f} MB at its end (by minute: "
            f"{' '.join(f'{x:.0f}' for x in rss_by_minute)})",
            flush=True,
        )
        return Figures(
            matches_per_s=key("sticheln_matches_total") / elapsed,
            decisions_per_s=key("sticheln_decisions_total") / elapsed,
            peak_rss_mb=peak_mb,
            rss_start_mb=rss0,
            rss_end_mb=rss1,
            rss_growth_mb_per_min=growth,
            p99_us=pct(0.99),
            p50_us=pct(0.50),
            max_us=float(samples[-1]) if samples else math.nan,
            samples=len(samples),
            faults_db=faults_db,
            faults_counter=after.get("sticheln_faults_total", 0.0),
            matches_db=matches_db,
            referee_cores=cpu_ref / elapsed,
            bot_cores=cpu_bots / elapsed,
            steal_percent=stolen,
            watch=watch,
        )
    finally:
        for p in reversed(procs):  # the bots first: they must not keep a stopping league busy
            _stop(p, signal.SIGKILL if p is not procs[0] else signal.SIGTERM, STOP_TIMEOUT_S)
        shutil.rmtree(tmp, ignore_errors=True)


def _line(f: Figures) -> str:
    faults = sum(f.faults_db.values())
    by_reason = ", ".join(f"{r} {n}" for r, n in sorted(f.faults_db.items()))
    return (
        f"{f.matches_per_s:.2f} matches/s, {f.decisions_per_s:,.0f} decisions/s, "
        f"peak RSS {f.peak_rss_mb:.0f} MB (RSS {f.rss_start_mb:.0f} MB after the warm-up, "
        f"{f.rss_end_mb:.0f} MB at the end: {f.rss_growth_mb_per_min:+.2f} MB/min), "
        f"think-to-next-request p50 {f.p50_us:,.0f} µs "
        f"p99 {f.p99_us:,.0f} µs max {f.max_us:,.0f} µs ({f.samples} samples); "
        f"faults {faults}{f' ({by_reason})' if by_reason else ''} in {f.matches_db} stored "
        f"matches, fault counter {f.faults_counter:.0f}; CPU referee {f.referee_cores:.2f} "
        f"cores, bots {f.bot_cores:.2f} cores; CPU stolen by the host {f.steal_percent:.1f}%"
    )


def _watch_report(watches: list[Watch]) -> dict[str, bool]:
    """Print the live viewers' figures of every run; their targets (met or not)."""
    for n, w in enumerate(watches, 1):
        parts = ", ".join(f"{r:,.0f}" for r in w.without)
        parts_with = ", ".join(f"{r:,.0f}" for r in w.with_viewers)
        print(
            f"run {n} viewers: {w.rate_without:,.0f} decisions/s without ({parts}), "
            f"{w.rate_with:,.0f} with {w.watchers} viewers ({parts_with}): cost {100 * w.cost:.1f}%; "
            f"{w.events:,} events streamed in {w.follows:,} streams; web clients at the parts' ends "
            f"{', '.join(f'{c:.0f}' for c in w.clients)}; referee CPU "
            f"{statistics.fmean(w.referee_without):.2f} cores without, "
            f"{statistics.fmean(w.referee_with):.2f} with; the viewers and the API caller "
            f"(this process) {statistics.fmean(w.audience_cores):.2f} cores"
        )
        cpu_a, cpu_b = w.us_per_decision
        print(
            f"run {n} referee CPU per decision: {cpu_a:.0f} µs without viewers, {cpu_b:.0f} µs "
            f"with ({100 * (cpu_b / cpu_a - 1):+.1f}%)"
        )
        print(
            f"run {n} API: {len(w.api_ms)} calls, p50 {w.api(0.5):.1f} ms, p99 "
            f"{w.api(0.99):.1f} ms, max {w.api(1.0):.1f} ms, errors {w.api_errors}; CPU stolen "
            f"by the host: {statistics.fmean(w.steal_without):.1f}% without viewers, "
            f"{statistics.fmean(w.steal_with):.1f}% with"
        )
    warning = loaded_warning([p for w in watches for p in (*w.steal_with, *w.steal_without)])
    if warning:
        print(warning)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the end")
    cost = statistics.median(w.cost for w in watches)
    p99 = statistics.median(w.api(0.99) for w in watches)
    return {
        f"{watches[0].watchers} live viewers cost at most {TARGET_WATCH_COST:.0%} of "
        f"decisions/s ({100 * cost:.1f}%)": cost <= TARGET_WATCH_COST,
        f"an API call answers in under {TARGET_API_P99_MS:.0f} ms at p99 ({p99:.1f} ms)": (
            p99 < TARGET_API_P99_MS and all(w.api_errors == 0 for w in watches)
        ),
    }


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM/SIGHUP stop the benchmark as Ctrl-C does


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=50, help="registered bots (default 50)")
    parser.add_argument("--streams", type=int, default=2, help="streams per bot (default 2)")
    parser.add_argument(
        "--bots-per-process", type=int, default=5, help="bots served by one process (default 5)"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds (default 60)")
    parser.add_argument(
        "--warmup", type=float, default=5.0, help="seconds played before measuring (default 5)"
    )
    parser.add_argument("--runs", type=int, default=1, help="runs to take the median of")
    parser.add_argument(
        "--protocol-rate",
        type=float,
        default=2000.0,
        help="benchmarks/protocol.py's decisions_per_s to compare with (default 2000, a "
        "reference figure from a quiet machine)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    parser.add_argument("--profile", metavar="FILE", help="cProfile the referee to FILE")
    parser.add_argument(
        "--watchers",
        type=int,
        default=0,
        help="live web viewers of running matches in half of the window (default 0: none)",
    )
    parser.add_argument(
        "--web",
        action="store_true",
        help="serve the web pages (web_port) with no viewer, the API called all along",
    )
    parser.add_argument(
        "--api-rate",
        type=float,
        default=10.0,
        help="with --watchers: web API calls per second while they watch (default 10)",
    )
    args = parser.parse_args()
    if args.watchers < 0 or not args.api_rate > 0:
        parser.error("--watchers must be 0 or more and --api-rate above 0")
    for name in ("bots", "streams", "runs", "bots_per_process"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be 1 or more")
    if args.bots < TABLE_SIZE:
        parser.error(f"--bots must be at least the table size, {TABLE_SIZE}")
    if args.seconds <= 0 or args.warmup < 0:
        parser.error("--seconds must be above 0 and --warmup at least 0")
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    print(
        f"{args.bots} bots x {args.streams} streams in "
        f"{math.ceil(args.bots / args.bots_per_process)} processes, table size {TABLE_SIZE}, "
        f"{args.seconds:g} s after {args.warmup:g} s warm-up"
        f"{'; web pages on' if args.web or args.watchers else ''}; load average "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
        flush=True,
    )
    figures: list[Figures] = []
    try:
        for run in range(args.runs):
            profile = args.profile if run == args.runs - 1 else None
            f = one_run(args, profile)
            figures.append(f)
            print(f"run {run + 1}: {_line(f)}", flush=True)
    except BenchError as exc:
        raise SystemExit(f"league benchmark failed: {exc}") from None
    except grpc.RpcError as exc:
        raise SystemExit(f"league benchmark failed: {exc.code().name}: {exc.details()}") from None
    except KeyboardInterrupt:
        raise SystemExit(
            "league benchmark interrupted; every process it started is stopped"
        ) from None
    med = statistics.median
    m = Figures(
        matches_per_s=med(f.matches_per_s for f in figures),
        decisions_per_s=med(f.decisions_per_s for f in figures),
        peak_rss_mb=med(f.peak_rss_mb for f in figures),
        rss_start_mb=med(f.rss_start_mb for f in figures),
        rss_end_mb=med(f.rss_end_mb for f in figures),
        rss_growth_mb_per_min=med(f.rss_growth_mb_per_min for f in figures),
        p99_us=med(f.p99_us for f in figures),
        p50_us=med(f.p50_us for f in figures),
        max_us=med(f.max_us for f in figures),
        samples=round(med(f.samples for f in figures)),
        faults_db={},
        faults_counter=max(f.faults_counter for f in figures),
        matches_db=round(med(f.matches_db for f in figures)),
        referee_cores=med(f.referee_cores for f in figures),
        bot_cores=med(f.bot_cores for f in figures),
        steal_percent=med(f.steal_percent for f in figures),
    )
    for f in figures:
        for reason, n in f.faults_db.items():
            m.faults_db[reason] = m.faults_db.get(reason, 0) + n
    warning = loaded_warning([f.steal_percent for f in figures])
    if warning:
        print(warning)
    print(f"median of {len(figures)}: {_line(m)} (faults: all runs)")
    if args.profile:
        print(f"profile of the referee (last run) written to {args.profile}")
    faults = sum(m.faults_db.values()) + m.faults_counter
    share = m.decisions_per_s / args.protocol_rate
    rss_target = f"peak RSS under {TARGET_RSS_MB:.0f} MB ({m.peak_rss_mb:.0f} MB)"
    rate_target = (
        f"decisions/s at least {TARGET_SHARE:.0%} of {args.protocol_rate:,.0f} ({share:.0%})"
    )
    verdict = {
        "no fault caused by the referee": faults == 0,
        rss_target: m.peak_rss_mb < TARGET_RSS_MB,
        rate_target: share >= TARGET_SHARE,
    }
    if args.web and not args.watchers:
        growth = m.rss_end_mb - m.rss_start_mb
        verdict[
            f"with the web pages on, RSS grows at most {TARGET_WEB_GROWTH_MB:.0f} MB after the "
            f"warm-up ({growth:+.1f} MB)"
        ] = growth <= TARGET_WEB_GROWTH_MB
    watches = [f.watch for f in figures if f.watch is not None]
    if watches:
        verdict.update(_watch_report(watches))
    for target, met in verdict.items():
        print(f"target {'met' if met else 'MISSED'}: {target}")
    if watches:
        w = watches[len(watches) // 2]
        steal = statistics.fmean([*w.steal_with, *w.steal_without])
        print(
            f"watchers={w.watchers} decisions_per_s_without={med(x.rate_without for x in watches):.0f} "
            f"decisions_per_s_with={med(x.rate_with for x in watches):.0f} "
            f"cost_percent={100 * med(x.cost for x in watches):.1f} "
            f"api_p99_ms={med(x.api(0.99) for x in watches):.1f} steal_percent={steal:.1f} "
            f"cpu_per_decision_percent="
            f"{med(100 * (x.us_per_decision[1] / x.us_per_decision[0] - 1) for x in watches):.1f}"
        )
        return
    print(
        f"bots={args.bots} matches_per_s={m.matches_per_s:.2f} "
        f"decisions_per_s={m.decisions_per_s:.0f} peak_rss_mb={m.peak_rss_mb:.0f} "
        f"p99_us={m.p99_us:.0f}"
        + (
            f" web=1 rss_growth_mb={m.rss_end_mb - m.rss_start_mb:.1f}"
            if args.web and not args.watchers
            else ""
        )
    )


if __name__ == "__main__":
    main()
