"""What the web pages weigh, and what a page left open fetches in an hour.

Plays a tournament of 8-seat matches with the Python sample bots (``referee tournament
--web-port 0``, two at a time) and, while it runs:

1. follows its update stream (``/api/updates``) for ``--window`` seconds as a matches
   page and a standings page left open would, four ways at once: as the pages did before
   (each event: the first 100 matches, or the standings, the info and the bots, whole and
   uncompressed) and as they do now (the matches finished since the newest shown,
   ``/api/matches?after=N``; the standings and the bots asked with ``If-None-Match``,
   304 while unchanged; gzip), counting every byte received (status line, headers and
   body), and prints each per hour;
2. once the tournament has ended, serves its folder with ``referee web`` and loads each
   page in Debian's Chromium twice in one browser context: the first visit (nothing
   cached) and a second one (what the cache keeps), printing the bytes the browser
   received (headers and bodies as sent) and what they would have been uncompressed.

The last line is ``matches_page_bytes_per_hour_before=… after=… standings_…``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REFEREE = Path(sys.executable).with_name("referee")
SAMPLES = ROOT / "sample_bots" / "python"
CHROMIUM = "/usr/bin/chromium"


def tournament_file(folder: Path, matches: int) -> Path:
    lines = [
        "[tournament]",
        'name = "weight"',
        "table_size = 8",
        f"matches_per_table = {matches}",
        "parallel = 2",
        'out = "out"',
        "[clock]",
        "decision_ms = 2000",
    ]
    for k in range(8):
        script = "heuristic_bot.py" if k % 2 == 0 else "random_bot.py"
        lines += [
            "[[bots]]",
            f'name = "{script.split("_")[0]}-{k}"',
            f"command = {json.dumps([sys.executable, str(SAMPLES / script)])}",
            f"workdir = {json.dumps(str(SAMPLES))}",
            f"sandbox = {{ read = [{json.dumps(str(SAMPLES))}] }}",
        ]
    path = folder / "t.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Client:
    """One HTTP/1.1 connection that counts the bytes it receives; keeps ETags if told."""

    def __init__(self, base: str, compress: bool, conditional: bool) -> None:
        u = urllib.parse.urlsplit(base)
        self.conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=30)
        self.compress, self.conditional = compress, conditional
        self.tags: dict[str, tuple[str, bytes]] = {}
        self.received = 0
        self.requests = 0

    def get(self, path: str) -> bytes:
        headers = {"Accept-Encoding": "gzip"} if self.compress else {}
        kept = self.tags.get(path)
        if self.conditional and kept:
            headers["If-None-Match"] = kept[0]
        self.conn.request("GET", path, headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        head = f"HTTP/1.1 {r.status} {r.reason}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in r.getheaders()
        )
        self.received += len(head) + 2 + len(raw)
        self.requests += 1
        if r.status == 304 and kept:
            return kept[1]
        body = raw
        if r.getheader("Content-Encoding") == "gzip":
            import gzip

            body = gzip.decompress(raw)
        if self.conditional and r.getheader("ETag"):
            self.tags[path] = (r.getheader("ETag") or "", body)
        return body


def follow(base: str, window: float) -> dict[str, Client]:
    """The four ways of keeping a page open, driven by one update stream."""
    clients = {
        "matches_before": Client(base, False, False),
        "matches_after": Client(base, True, True),
        "standings_before": Client(base, False, False),
        "standings_after": Client(base, True, True),
    }
    newest = 0
    first = json.loads(clients["matches_after"].get("/api/matches?limit=100"))
    shown = first["finished"]
    newest = shown[0]["finish_order"] if shown else 0
    clients["matches_before"].get("/api/matches?limit=100")
    for c in ("standings_before", "standings_after"):
        for path in ("/api/standings", "/api/info", "/api/bots"):
            clients[c].get(path)
    u = urllib.parse.urlsplit(base)
    stream = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=30)
    stream.request("GET", "/api/updates")
    resp = stream.getresponse()
    end = time.monotonic() + window
    events = 0
    known: dict[str, Any] = {}
    while time.monotonic() < end:
        line = resp.fp.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        events += 1
        clients["matches_before"].get("/api/matches?limit=100")
        for path in ("/api/standings", "/api/info", "/api/bots"):
            clients["standings_before"].get(path)
        # As the pages do now: the event names what changed (the standings' and the bots'
        # versions, the newest finished match, the running matches), and only that is asked.
        versions = json.loads(line[6:]).get("versions", {})
        changed = {k for k, v in versions.items() if k in known and known[k] != v}
        first = not known
        known.update(versions)
        if versions.get("matches", newest) != newest or "running" in changed:
            doc = json.loads(clients["matches_after"].get(f"/api/matches?limit=100&after={newest}"))
            if doc["finished"]:
                newest = doc["finished"][0]["finish_order"]
        if not first and changed & {"standings", "bots"}:
            for path in ("/api/standings", "/api/bots"):  # the progress is in the event
                clients["standings_after"].get(path)
    stream.close()
    # The update stream itself: what every page left open receives.
    print(f"followed the update stream for {window:.0f} s: {events} events")
    return clients


def page_weights(folder: Path) -> None:
    from playwright.sync_api import sync_playwright

    web = subprocess.Popen(
        [str(REFEREE), "web", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert web.stdout is not None
        url = web.stdout.readline().split(" ", 2)[2].strip().rstrip("/")
        import urllib.request

        with urllib.request.urlopen(f"{url}/api/matches?limit=1") as r:
            match_id = json.loads(r.read())["finished"][0]["match_id"]
        with urllib.request.urlopen(f"{url}/api/bots") as r:
            bot = json.loads(r.read())["bots"][0]["name"]
        pages = {
            "standings": "/",
            "matches": "/matches",
            "head-to-head": "/head-to-head",
            "bot": f"/bot?name={urllib.parse.quote(bot)}",
            "viewer (8 seats)": f"/match?id={urllib.parse.quote(match_id)}",
        }
        print(f"{'page':<18} {'first visit':>12} {'uncompressed':>13} {'second visit':>13}")
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            for name, path in pages.items():
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                visits: list[list[tuple[int, int]]] = []
                for _ in range(2):
                    got: list[tuple[int, int]] = []

                    def done(r: Any, into: list[tuple[int, int]] = got) -> None:
                        if "/api/updates" in r.url or "/live" in r.url:
                            return  # a stream, not part of the page's weight
                        s = r.sizes()
                        body = s["responseBodySize"]
                        try:
                            plain = len(r.response().body()) if body else 0
                        except Exception:
                            plain = body
                        into.append(
                            (s["responseHeadersSize"] + body, s["responseHeadersSize"] + plain)
                        )

                    page.on("requestfinished", done)
                    page.goto(url + path)
                    page.wait_for_selector("#main[data-drawn]", state="attached")
                    page.wait_for_load_state("networkidle")
                    page.remove_listener("requestfinished", done)
                    visits.append(got)
                first, second = visits
                print(
                    f"{name:<18} {sum(a for a, _ in first):>10} B {sum(b for _, b in first):>11} B"
                    f" {sum(a for a, _ in second):>11} B"
                )
                context.close()
            browser.close()
    finally:
        web.terminate()
        web.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=20.0, help="seconds followed (20)")
    parser.add_argument("--matches", type=int, default=40, help="matches played (40)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cmd = [str(REFEREE), "tournament", str(tournament_file(folder, args.matches))]
        proc = subprocess.Popen(
            [*cmd, "--web-port", "0"],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stderr is not None
            line = ""
            while not line.startswith("web on "):
                line = proc.stderr.readline()
                if not line:
                    raise SystemExit("the tournament ended before printing its web address")
            base = line.split(" ", 2)[2].strip().rstrip("/")
            threading.Thread(target=lambda: proc.stderr.read() if proc.stderr else None).start()
            started = time.monotonic()
            clients = follow(base, args.window)
            took = time.monotonic() - started
            per_hour = {k: c.received / took * 3600 for k, c in clients.items()}
            print(f"{'page left open':<18} {'requests':>9} {'bytes':>10} {'per hour':>12}")
            for k, c in clients.items():
                print(f"{k:<18} {c.requests:>9} {c.received:>10} {per_hour[k] / 1e6:>9.1f} MB")
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
        page_weights(folder / "out")
    print(
        f"matches_page_bytes_per_hour_before={per_hour['matches_before']:.0f} "
        f"after={per_hour['matches_after']:.0f} "
        f"standings_page_bytes_per_hour_before={per_hour['standings_before']:.0f} "
        f"after={per_hour['standings_after']:.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
