"""Test helpers for the web pages: a real ``referee serve`` with its web port, plain HTTP
requests over 127.0.0.1, and Debian's Chromium driven by Playwright.

Not a test module: the web tests import it. Every wait has a deadline.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaguekit import REFEREE, ROOT, Serve, serving, write_config

CHROMIUM = "/usr/bin/chromium"
#: Chromium started so that it reaches no host but the one the test names: no background
#: networking, updates, sync or first-run requests.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "web"


def have_chromium() -> bool:
    """Debian's Chromium and the Playwright package are both installed."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return shutil.which(CHROMIUM) is not None


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(url: str, method: str = "GET", timeout: float = 10) -> Reply:
    """One HTTP request; any status comes back as a :class:`Reply`."""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Reply(r.status, dict(r.headers.items()), r.read())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, dict(exc.headers.items()), exc.read())


def get_json(url: str) -> Any:
    reply = request(url)
    assert reply.status == 200, f"GET {url}: {reply.status} {reply.body[:300]!r}"
    return reply.json()


def sse_events(
    url: str, count: int, timeout: float = 30, times: list[float] | None = None
) -> list[dict[str, Any]]:
    """The first ``count`` data events of a Server-Sent Events stream (fewer if it ends);
    with ``times``, the monotonic time each one arrived is appended to it."""
    out: list[dict[str, Any]] = []
    with urllib.request.urlopen(url, timeout=timeout) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: close"):
                break
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
                if times is not None:
                    times.append(time.monotonic())
                if len(out) >= count:
                    break
    return out


@contextmanager
def web_league(
    tmp: Path,
    league: dict[str, Any],
    rules: dict[str, Any] | None = None,
    clock: dict[str, int] | None = None,
) -> Iterator[tuple[Serve, str]]:
    """A ``referee serve`` with its web pages on a free port: the process and the base URL."""
    config = write_config(tmp / "league.toml", {**league, "web_port": 0}, rules, clock)
    with serving(config, tmp / "serve.log") as serve:
        try:
            line = serve.lines.get(timeout=30)
        except queue.Empty:
            raise AssertionError(f"no web address printed; log: {serve.tail()}") from None
        assert line.startswith("web on http://127.0.0.1:"), line
        yield serve, line.split(" ", 2)[2].strip().rstrip("/")


@contextmanager
def folder_web(out: Path) -> Iterator[str]:
    """``referee web OUT`` on a free port: its base URL (no trailing slash), stopped after."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [*REFEREE, "web", str(out), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=ROOT,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("web on http://127.0.0.1:"):
                err.seek(0)
                raise AssertionError(f"referee web printed {line!r}; stderr: {err.read()[-2000:]}")
            yield line.split(" ", 2)[2].strip().rstrip("/")
        finally:
            proc.terminate()
            proc.wait(30)


#: What a finger taps on the page as it is now, under ``min`` px wide or tall: links,
#: buttons, form controls and the summaries of folded parts that are shown (a box in its
#: label counts as the label, which takes the tap too).
SMALL_TARGETS = """([selector, min]) => [...document.querySelectorAll(selector)]
    .filter((e) => {
        const r = e.getBoundingClientRect(), s = getComputedStyle(e);
        return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && !e.closest('.sr-only');
    })
    .map((e) => {
        const label = e.tagName === 'INPUT' ? e.closest('label') : null;
        const r = (label || e).getBoundingClientRect();
        const name = (e.textContent || e.getAttribute('aria-label') || '').trim().slice(0, 30);
        return {what: `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''} ${name}`,
                width: Math.round(r.width * 10) / 10, height: Math.round(r.height * 10) / 10};
    })
    .filter((t) => t.width < min || t.height < min)"""
TARGETS = "a[href], button, input, select, summary, label[for]"


def small_targets(page: Any, selector: str = TARGETS, least: float = 24) -> list[dict[str, Any]]:
    """The targets of ``selector`` on the page under ``least`` px in either direction."""
    found: list[dict[str, Any]] = page.evaluate(SMALL_TARGETS, [selector, least])
    return found


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's findings on the page as it is now (the copy axe-playwright-python
    ships), with the rule that a control's name holds its visible text turned on (axe
    calls it experimental)."""
    from importlib import resources

    source = (resources.files("axe_playwright_python") / "axe.min.js").read_text()
    page.evaluate(source)  # run by the browser's debugger: the page's CSP allows it
    result = page.evaluate(
        "axe.run(document, {resultTypes: ['violations'],"
        " rules: {'label-content-name-mismatch': {enabled: true}}})"
    )
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
    ]
