"""What a league tab left open costs: requests and bytes an hour, per page.

Starts a busy league (``referee serve`` with its web pages, ``--bots`` benchmark bots
of ``benchmarks/bots/fast_bot.py`` that answer at once, or after ``--sleep-ms``
milliseconds for a league whose matches take a few seconds, tables of ``--table`` seats,
``--parallel`` matches at once, standings published every ``--publish`` seconds, the
league's default), waits until matches finish, then opens its standings, matches, a
bot's and the head-to-head page in Debian's Chromium (each in a browser context of its
own, with its own cache, at 1280 px) and keeps them open for ``--window`` seconds.
Chromium's own network log (the DevTools protocol's ``Network`` events) counts what each
tab asks and receives after its first load: every request, and every byte as sent
(headers and compressed bodies, and what the update stream, opened before the window,
brings within it), per page and per path asked. The figures are extrapolated to an
hour, the update stream's reconnections (one every ``stream_s``, too seldom to fall in
the window) added. The league's own pace (matches a minute) and the CPU stolen
from the machine in the window are printed beside them.

The last line is ``<page>_requests_per_hour=… <page>_bytes_per_hour=…`` for each page.
Target (docs/web.md): a tab left open for an hour pulls under 1 MB in a few hundred
requests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import Steal

from referee.web.server import WebOptions
from sticheln.v1 import league_pb2, league_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
REFEREE = Path(sys.executable).with_name("referee")
FAST_BOT = ROOT / "benchmarks" / "bots" / "fast_bot.py"
CHROMIUM = "/usr/bin/chromium"
ADMIN_TOKEN = "league-tab-admin-token-0123456789"
TARGET_BYTES = 1_000_000
TARGET_REQUESTS = 500
#: The update stream's reconnections an hour (the server closes it every ``stream_s``).
RECONNECTS = 3600 / WebOptions().stream_s


def _league_file(tmp: Path, args: argparse.Namespace) -> Path:
    path = tmp / "league.toml"
    path.write_text(
        "\n".join(
            [
                "[league]",
                'name = "tab"',
                "seed = 1",
                f"table_size = {args.table}",
                f"parallel = {args.parallel}",
                f'out = "{tmp / "out"}"',
                f'database = "{tmp / "league.db"}"',
                'host = "127.0.0.1"',
                "port = 0",
                "web_port = 0",
                f"publish_interval_s = {args.publish}",
                "shutdown_grace_s = 0",
                "",
            ]
        ),
        encoding="utf-8",
    )
    return path


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


class Tab:
    """One page in a browser context of its own, its network log read through DevTools."""

    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.page = self.context.new_page()
        self.cdp = self.context.new_cdp_session(self.page)
        self.cdp.send("Network.enable")
        self.counting = False
        self.requests: list[str] = []
        #: Each request's path (without its query), by request id.
        self.paths: dict[str, str] = {}
        #: The requests sent while counting.
        self.asked: set[str] = set()
        #: Bytes received per request: its headers and every chunk as sent.
        self.bytes: dict[str, int] = {}
        self.finished: dict[str, int] = {}
        self.cdp.on("Network.requestWillBeSent", self._sent)
        self.cdp.on("Network.dataReceived", self._data)
        self.cdp.on("Network.loadingFinished", self._done)
        self.cdp.on("Network.responseReceivedExtraInfo", self._headers)
        self.page.goto(url)
        self.page.wait_for_selector("#main[data-drawn]", state="attached")
        self.page.wait_for_load_state("networkidle")

    def _sent(self, e: dict[str, Any]) -> None:
        self.paths[e["requestId"]] = urllib.parse.urlsplit(e["request"]["url"]).path
        if self.counting:
            self.requests.append(e["request"]["url"])
            self.asked.add(e["requestId"])
            self.bytes.setdefault(e["requestId"], 0)

    def _headers(self, e: dict[str, Any]) -> None:
        if e["requestId"] in self.asked:
            self.bytes[e["requestId"]] += len(e.get("headersText") or "") or sum(
                len(k) + len(v) + 4 for k, v in e.get("headers", {}).items()
            )

    def _data(self, e: dict[str, Any]) -> None:
        # A stream opened before counting began (the update stream) counts what it
        # brings while counting.
        if self.counting:
            rid = e["requestId"]
            self.bytes[rid] = self.bytes.get(rid, 0) + int(e.get("encodedDataLength") or 0)

    def _done(self, e: dict[str, Any]) -> None:
        if e["requestId"] in self.asked:
            self.finished[e["requestId"]] = int(e.get("encodedDataLength") or 0)

    def received(self) -> int:
        """Every byte since counting began: a finished request's total as Chromium counts
        it (headers and body as sent), a stream still open by its chunks and headers."""
        return sum(self.by_path().values())

    def by_path(self) -> dict[str, int]:
        """The bytes received, per path asked (``/api/updates``, ``/api/matches``, …)."""
        out: dict[str, int] = {}
        for k, v in self.bytes.items():
            path = self.paths.get(k, "?")
            out[path] = out.get(path, 0) + (self.finished.get(k, v) or v)
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=120.0, help="seconds open (120)")
    parser.add_argument("--bots", type=int, default=8, help="bots (8)")
    parser.add_argument("--table", type=int, default=4, help="seats a table (4)")
    parser.add_argument("--parallel", type=int, default=2, help="matches at once (2)")
    parser.add_argument("--publish", type=float, default=10.0, help="standings every s (10)")
    parser.add_argument(
        "--sleep-ms", type=float, default=0.0, help="each decision waits this long (0: at once)"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        try:
            log = (tmp / "serve.log").open("wb")
            serve = subprocess.Popen(
                [str(REFEREE), "serve", "--config", str(_league_file(tmp, args))],
                stdout=subprocess.PIPE,
                stderr=log,
                env={**os.environ, "STICHELN_ADMIN_TOKEN": ADMIN_TOKEN},
            )
            procs.append(serve)
            assert serve.stdout is not None
            address = web = ""
            deadline = time.monotonic() + 60
            while not (address and web) and time.monotonic() < deadline:
                line = serve.stdout.readline().decode()
                if not line:
                    break
                if line.startswith("web on "):
                    web = line.split(" ", 2)[2].strip().rstrip("/")
                elif "127.0.0.1:" in line and not address:
                    address = line.rsplit(" ", 1)[-1].strip()
            if not (address and web):
                raise SystemExit(f"the league did not start: {(tmp / 'serve.log').read_text()}")
            names = [f"fast{i:02d}" for i in range(args.bots)]
            tokens = {}
            with grpc.insecure_channel(address) as channel:
                stub = league_pb2_grpc.LeagueStub(channel)
                for name in names:
                    tokens[name] = stub.RegisterBot(
                        league_pb2.RegisterBotRequest(name=name, owner=f"{name}-owner"),
                        metadata=(("authorization", f"Bearer {ADMIN_TOKEN}"),),
                        timeout=30,
                    ).token
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(FAST_BOT)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env={
                        **os.environ,
                        "STICHELN_REFEREE": address,
                        "STICHELN_BOTS": ",".join(f"{n}:{tokens[n]}" for n in names),
                        "BENCH_SLEEP_MS": str(args.sleep_ms),
                    },
                )
            )
            deadline = time.monotonic() + 120
            while _get(f"{web}/api/standings")["matches"] < 10:
                if time.monotonic() > deadline:
                    raise SystemExit("no standings published within 120 s")
                time.sleep(0.5)
            pages = {
                "standings": "/",
                "matches": "/matches",
                "bot": f"/bot?name={urllib.parse.quote(names[0])}",
                "head_to_head": "/head-to-head",
            }
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
                )
                tabs = {k: Tab(browser, web + path) for k, path in pages.items()}
                finished0 = _get(f"{web}/api/info")["progress"]["finished"]
                steal = Steal()
                for tab in tabs.values():
                    tab.counting = True
                started = time.monotonic()
                while time.monotonic() - started < args.window:
                    tabs["standings"].page.wait_for_timeout(500)
                took = time.monotonic() - started
                for tab in tabs.values():
                    tab.counting = False
                stolen = steal.percent()
                finished1 = _get(f"{web}/api/info")["progress"]["finished"]
                for tab in tabs.values():
                    tab.context.close()
                browser.close()
        finally:
            for proc in reversed(procs):
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    per_min = (finished1 - finished0) / took * 60
    print(
        f"league: {args.bots} bots, {args.table} seats a table, {args.parallel} at once: "
        f"{per_min:.0f} matches a minute; standings published every {args.publish:g} s"
    )
    print(f"tabs open {took:.0f} s; CPU stolen by the host {stolen:.1f}%")
    print(f"(requests/h include the update stream's {RECONNECTS:g} reconnections an hour)")
    print(f"{'page left open':<14} {'requests':>9} {'bytes':>9} {'requests/h':>11} {'bytes/h':>10}")
    figures = []
    ok = True
    for name, tab in tabs.items():
        n, b = len(tab.requests), tab.received()
        # Each page's update stream is closed by the server every ``stream_s`` seconds and
        # opened again by the browser: too seldom to fall in the window, counted here.
        rh, bh = n / took * 3600 + RECONNECTS, b / took * 3600
        ok = ok and bh < TARGET_BYTES and rh < TARGET_REQUESTS
        print(f"{name:<14} {n:>9} {b:>9} {rh:>11.0f} {bh / 1e6:>7.2f} MB")
        asks: dict[str, int] = {}
        for rid in tab.asked:
            asks[tab.paths[rid]] = asks.get(tab.paths[rid], 0) + 1
        for path, got in sorted(tab.by_path().items(), key=lambda kv: -kv[1]):
            print(f"  {path:<24} {asks.get(path, 0):>5} asks {got / took * 3600 / 1e6:>7.3f} MB/h")
        figures.append(f"{name}_requests_per_hour={rh:.0f} {name}_bytes_per_hour={bh:.0f}")
    print(
        f"target: under {TARGET_BYTES / 1e6:g} MB and {TARGET_REQUESTS} requests an hour: "
        f"{'met' if ok else 'missed'}"
    )
    print(" ".join(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
