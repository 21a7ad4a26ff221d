"""A comparison's page: ``referee web`` on a real ``referee compare`` folder (sample bots,
a handful of deal pairs) and the live page of ``referee compare --web-port``.

Without a browser: the verdict, the bounds, the mean and the pairs are in the HTML the
server sends, bot names escaped; a running comparison refuses its unfinished records (409).
In Chromium at 400×800 and 1400×1000: no sideways scroll, the pair view shows both matches
side by side and marks the first card where they differ (computed here from the two
records), a URL position opens at that card, no console error. Screenshots go to
test-artifacts/web/.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from leaguekit import wait_for
from webkit import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    axe_violations,
    get_json,
    have_chromium,
    request,
    small_targets,
)

from referee.match.record import read_record
from referee.web.compare import render_compare, verdict_text

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
XSS = '<img src=x onerror=alert(1)>"&'
PAIRS = 4
#: Where each table of the pair view stands: [round, trick, card] (trick -1: the deal).
TRICK_AT = "xs => xs.map(x => [x.dataset.round, x.dataset.trick, x.dataset.card])"
#: Per seat of both tables: its pain row's cards, those of them in its hand, and how many
#: cards of its hand are outlined as pain cards.
SET_ASIDE = """xs => xs.map(s => {
    const pain = [...s.querySelectorAll('.painrow .card')].map(c => c.dataset.card);
    const hand = [...s.querySelectorAll('[data-hand] .card')].map(c => c.dataset.card);
    return {pain, inHand: hand.filter(c => pain.includes(c)),
            outlined: s.querySelectorAll('[data-hand] .card.pain').length};
})"""


def _bot_file(bots: Path, name: str, script: str) -> Path:
    """A sample bot's file under another name, beside a copy of the sample bots' code (a
    bot's folder is the one its file is in)."""
    if not (bots / "python").is_dir():
        shutil.copytree(SAMPLES / "python", bots / "python")
    path = bots / f"{script}-{abs(hash(name))}.toml"
    path.write_text(
        f'name = {json.dumps(name)}\ncommand = ["python3", "python/{script}.py"]\nseats = 8\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def bots() -> Iterator[Path]:
    """A folder the bots' uids may read (pytest's own are private to the user)."""
    folder = Path(tempfile.mkdtemp(prefix="sticheln-web-compare-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _compare_cmd(bots: Path, out: Path, pairs: int, *extra: str) -> list[str]:
    # The baseline is named as markup: every page must show it as text.
    heuristic = _bot_file(bots, "heuristic", "heuristic_bot")
    baseline = _bot_file(bots, XSS, "random_bot")
    opponent = _bot_file(bots, "rand-opp", "random_bot")
    return [
        sys.executable, "-m", "referee.cli", "compare",
        "--candidate", str(heuristic), "--baseline", str(baseline),
        "--opponent", str(opponent), "--opponent", str(SAMPLES / "minimal-python.toml"),
        "--sprt", "lower=0", "upper=5", f"min_pairs={pairs}", "--matches", str(2 * pairs),
        "--parallel", "2", "--decision-ms", "2000", "--out", str(out),
        "--sandbox", "bubblewrap", *extra,
    ]  # fmt: skip


class Web:
    """A ``referee web`` process on a free port."""

    def __init__(self, folder: Path, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "referee.cli", "web", str(folder), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=open(log, "w"),  # noqa: SIM115 - closed with the process
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("web on http://127.0.0.1:"), (line, log.read_text())
        self.url = line.split(" ", 2)[2].strip().rstrip("/")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=20) == 0


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory, bots: Path) -> Iterator[tuple[Path, str]]:
    """A finished comparison of the heuristic bot against a random one, served."""
    tmp = tmp_path_factory.mktemp("web-compare")
    out = tmp / "out"
    done = subprocess.run(
        _compare_cmd(bots, out, PAIRS), capture_output=True, text=True, timeout=300, cwd=tmp
    )
    assert done.returncode in (0, 1, 2), done.stderr[-2000:]
    web = Web(out, tmp / "web.log")
    try:
        yield out, web.url
    finally:
        web.stop()


def _pairs(out: Path) -> list[dict[str, str]]:
    with open(out / "pairs.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _plays(path: Path) -> list[tuple[Any, ...]]:
    """A record's decisions in order: each round's pain cards by seat, then every card
    played as (round, seat, card)."""
    out: list[tuple[Any, ...]] = []
    for line in read_record(path):
        if line["type"] == "reveal":
            out.extend(
                ("pain", line["round"], s, tuple(sorted(p))) for s, p in enumerate(line["pain"])
            )
        elif line["type"] == "play":
            out.append(("play", line["round"], line["seat"], line["card"]))
    return out


def first_difference(a: Path, b: Path) -> tuple[Any, ...] | None:
    """Where two records of one deal first part, with the position's address: ``("play",
    round, trick, card, seat, card_a, card_b)`` or ``("pain", round, seat)``."""
    pa, pb = _plays(a), _plays(b)
    card_in_round: dict[int, int] = {}
    for x, y in zip(pa, pb, strict=False):
        if x[0] == "play":
            n = card_in_round.get(x[1], 0)
            card_in_round[x[1]] = n + 1
        if x != y:
            if x[0] == "pain":
                return ("pain", x[1], x[2])
            seats = len(next(iter(read_record(a)))["seating"])
            trick, card = divmod(n, seats)
            return ("play", x[1], trick, card + 1, x[2], x[3], y[3])
    return None


# -- without a browser -------------------------------------------------------------------------


def test_the_server_writes_the_verdict_bounds_mean_and_pairs(comparison: tuple[Path, str]) -> None:
    out, url = comparison
    summary = json.loads((out / "compare.json").read_text())
    # The first page of a comparison is its verdict.
    root = request(f"{url}/")
    assert root.status == 200 and b'id="verdict"' in root.body
    html = request(f"{url}/compare").body.decode()
    verdict = re.search(r'id="verdict"[^>]*data-verdict="([^"]+)"', html)
    assert verdict and verdict.group(1) == summary["verdict"]
    assert 'id="bounds"' in html
    test = summary["test"]
    assert test["statistic"] == "sprt"
    assert f"accepted when ln Λ₁ ≥ {test['accept_h1_at']:.2f}" in html
    assert f"mean difference ≥ +{test['upper']:.1f}" in html
    mean = re.search(r'id="mean" data-mean="([^"]+)"', html)
    assert mean and float(mean.group(1)) == pytest.approx(summary["score_diff"]["mean"])
    # Every pair, sorted by difference, linking to its view and its two matches.
    rows = re.findall(r'<tr data-deal="(\d+)" data-diff="(-?\d+)"', html)
    pairs = _pairs(out)
    assert len(rows) == len(pairs) == PAIRS
    diffs = [int(d) for _, d in rows]
    assert diffs == sorted(int(p["score_diff"]) for p in pairs)
    for p in pairs:
        assert f'href="/compare?pair={p["deal"]}#diff"' in html
        assert f"/match?id={p['baseline_match']}" in html
    # The baseline's markup name is text, never markup.
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;&quot;&amp;" in html
    headers = request(f"{url}/compare").headers
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    # Both matches of a pair are served: the duplicate embargo does not hold a comparison.
    for p in pairs:
        for m in (p["candidate_match"], p["baseline_match"]):
            assert request(f"{url}/api/matches/{m}").status == 200


def test_render_escapes_every_name() -> None:
    doc = {
        "running": False,
        "summary": {"comparison": XSS, "candidate": XSS, "baseline": "b", "opponents": [XSS],
                    "verdict": "H1", "pairs": 1, "metric": "score", "test": None,
                    "score_diff": {"mean": 3.0, "ci95": 1.0}},
        "pairs": [{"deal": 0, "seat": 0, "candidate_match": XSS, "baseline_match": "m-b",
                   "candidate_total": 1, "baseline_total": -2, "score_diff": 3,
                   "candidate_place": 1, "baseline_place": 2, "counted": True}],
    }  # fmt: skip
    html = render_compare(doc, 0)
    assert "<img" not in html and "&lt;img" in html
    assert "H1 accepted" in html


def test_a_running_comparison_is_served_live_and_refuses_unfinished_records(
    tmp_path: Path, bots: Path
) -> None:
    out = tmp_path / "out"
    cmd = _compare_cmd(bots, out, 3, "--web-port", "0")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        url = ""
        while time.monotonic() < deadline and not url:
            line = proc.stderr.readline()
            if line.startswith("web on "):
                url = line.split(" ", 2)[2].strip().rstrip("/")
        assert url, "no web address printed"
        page = request(f"{url}/compare")
        assert page.status == 200 and b'id="verdict"' in page.body
        assert b'id="live-badge"' in page.body

        # A match that runs: its record (every hand) is refused, as a tournament's is.
        def refused() -> str | None:
            for m in get_json(f"{url}/api/matches?limit=10")["running"]:
                mid = m["match_id"]
                if request(f"{url}/api/matches/{mid}/record.jsonl").status == 409:
                    return str(mid)
            return None

        mid = wait_for(refused, 60, "a running match's record refused with 409")
        assert request(f"{url}/api/matches/{mid}").status in (409, 200)  # 200: finished since
        # Pairs appear on the page as they finish.
        doc = wait_for(
            lambda: (d := get_json(f"{url}/api/compare"))["pairs"] and d, 120, "a finished pair"
        )
        assert doc["running"] is True
        assert doc["summary"]["candidate"] == "heuristic"
        pair = doc["pairs"][0]
        assert request(f"{url}/api/matches/{pair['candidate_match']}").status == 200
        assert proc.wait(timeout=240) in (0, 1, 2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    assert os.path.isfile(out / "compare.json")


# -- in a browser ------------------------------------------------------------------------------

browser_only = pytest.mark.skipif(
    not have_chromium(), reason="needs Debian's chromium and playwright"
)


@browser_only
@pytest.mark.parametrize("size", [(390, 844), (1280, 800)], ids=["phone", "desk"])
def test_the_pair_view_shows_both_matches_and_marks_their_first_difference(
    comparison: tuple[Path, str], size: tuple[int, int]
) -> None:
    from playwright.sync_api import sync_playwright

    out, url = comparison
    pairs = _pairs(out)
    found = None
    for p in pairs:
        a, b = (out / "matches" / f"{p[k]}.jsonl" for k in ("candidate_match", "baseline_match"))
        diff = first_difference(a, b)
        if diff is not None:
            found = (p, diff)
            break
    assert found is not None, "no pair whose matches part"
    pair, diff = found
    if diff[0] == "play":
        _, rnd, trick, card, seat, card_c, card_b = diff
        address = f"r{rnd + 1}t{trick + 1}c{card}"
        marker = ".played.differs"
        script = "xs => xs.map(x => [x.dataset.seat, x.querySelector('.card').dataset.card])"
        expected: list[Any] = [[str(seat), card_c], [str(seat), card_b]]
        position = [str(rnd), str(trick), str(card)]
    else:  # the pain cards of a round: their reveal, that seat's pain row
        _, rnd, seat = diff
        trick, card = -1, 2
        address = f"r{rnd + 1}reveal"
        marker = ".painrow.differs"
        script = "xs => xs.map(x => x.closest('.seat').dataset.seat)"
        expected = [str(seat), str(seat)]
        position = [str(rnd), "-1", "2"]
    width, height = size
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(
                viewport={"width": width, "height": height},
                has_touch=width < 600,
                is_mobile=width < 600,
            )
            page.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if urllib.parse.urlsplit(route.request.url).hostname == "127.0.0.1"
                    else route.abort()
                ),
            )
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.set_default_timeout(30_000)
            # The comparison: verdict, chart with both bounds, pairs.
            page.goto(f"{url}/compare")
            page.wait_for_selector("#test-chart .bound-h1", state="attached")
            assert page.locator("#test-chart .bound").count() == 2
            assert page.locator("#test-chart .path-h1").count() == 1
            # The two evidences are drawn apart, each against its own line: not on top of
            # each other (they are near mirror images).
            h1, h0 = (page.locator(f"#test-chart .panel-{k}").bounding_box() for k in ("h1", "h0"))
            assert h1 and h0 and h1["y"] + h1["height"] <= h0["y"]
            assert page.locator("#test-chart .panel-h0 .path-h0").count() == 1
            assert page.locator("#test-chart .panel-h1 .bound-h1").count() == 1
            _no_sideways_scroll(page)
            _min_font(page)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"compare-{width}.png"), full_page=True)
            assert axe_violations(page) == []
            # A pair from the table opens at its first difference, in place (no reload)
            # and in sight: its title at the top of the window.
            page.evaluate("window.kept = 1")
            page.click(f'tr[data-deal="{pair["deal"]}"] a.pair-link')
            page.wait_for_selector("#main[data-drawn] .pair-side .trick")
            assert page.evaluate("window.kept") == 1, "the page reloaded"
            assert page.evaluate("new URLSearchParams(location.search).get('pair')") == pair["deal"]
            top = page.evaluate("document.getElementById('pair-title').getBoundingClientRect().top")
            assert -1 <= top <= 5, f"the pair's title is {top} px from the window's top"
            assert page.get_attribute(f'tr[data-deal="{pair["deal"]}"]', "class") == "current"
            # The first difference's button is named by its visible text (and axe agrees).
            if page.locator("#diff").count():
                assert page.get_by_role("button", name="≠ first difference").count() == 1
            assert axe_violations(page) == []
            assert page.locator(".pair-side").count() == 2
            roles = page.eval_on_selector_all(".pair-side", "xs => xs.map(x => x.dataset.role)")
            assert roles == ["candidate", "baseline"]
            assert page.get_attribute("#first-diff", "data-hash") == address
            assert page.evaluate("location.hash") == f"#{address}"
            assert page.eval_on_selector_all(marker, script) == expected
            _no_sideways_scroll(page)
            page.screenshot(path=str(ARTIFACTS / f"compare-pair-{width}.png"), full_page=True)
            # Both step together: a card on (and back), and the two tables stay at one position.
            page.click("#next")
            steps = page.eval_on_selector_all(".pair-side .trick", TRICK_AT)
            assert steps[0] == steps[1] != position
            # A URL with a position opens at that card (a reload keeps it), the pair in sight.
            page.goto(f"{url}/compare?pair={pair['deal']}#{address}")
            page.wait_for_selector(marker)
            top = page.evaluate("document.getElementById('pair-title').getBoundingClientRect().top")
            assert -1 <= top <= 5, f"the pair's title is {top} px from the window's top"
            page.reload()
            page.wait_for_selector(marker)
            assert page.eval_on_selector_all(".pair-side .trick", TRICK_AT) == [position] * 2
            # Revealed, the pain cards set aside lie in the pain row, no longer in the hand
            # (outlined there, they would read as kept).
            page.goto(f"{url}/compare?pair={pair['deal']}#r1reveal")
            page.wait_for_selector(".pair-grid .seat [data-hand] .card")
            seats = page.eval_on_selector_all(".pair-grid .seat", SET_ASIDE)
            assert len(seats) == 6 and all(s["pain"] for s in seats), seats
            assert all(s["inHand"] == [] and s["outlined"] == 0 for s in seats), seats
        finally:
            browser.close()
    assert errors == [], errors


#: Per seat of both tables: its pain row (the cards' faces, null for one face down, or
#: the words when none is chosen yet) and its hand.
MOMENT = """xs => xs.map(s => ({
    pain: [...s.querySelectorAll('.painrow .card')].map(c => c.dataset.card || null),
    note: (s.querySelector('.painrow .pain-note') || {}).textContent || null,
    hand: [...s.querySelectorAll('[data-hand] .card')].map(c => c.dataset.card),
}))"""


@browser_only
def test_on_a_phone_the_pair_view_steps_through_the_deal_the_choice_and_the_reveal(
    comparison: tuple[Path, str],
) -> None:
    """At 390 px: the deal (no pain card chosen yet), the choices face down (set aside:
    out of both hands, unseen) and their reveal are three steps, as in the match viewer,
    each the same moment in both matches; the step buttons are worded and 44 px; the two
    matches stand one above the other; no target is under 24 px."""
    from playwright.sync_api import sync_playwright

    out, url = comparison
    pair = _pairs(out)[0]
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(
                viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
            )
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.set_default_timeout(30_000)
            page.goto(f"{url}/compare?pair={pair['deal']}#r1")
            page.wait_for_selector(".pair-side .trick")
            dealt = page.eval_on_selector_all(".pair-grid .seat", MOMENT)
            assert dealt and all(s["pain"] == [] and s["note"] == "not chosen yet" for s in dealt)
            page.tap("#next")
            assert page.evaluate("location.hash") == "#r1pick"
            chosen = page.eval_on_selector_all(".pair-grid .seat", MOMENT)
            # Face down in both matches, and gone from each hand: one card fewer.
            assert all(s["pain"] == [None] for s in chosen), chosen
            assert [len(s["hand"]) for s in chosen] == [len(s["hand"]) - 1 for s in dealt]
            assert (
                page.eval_on_selector_all(".pair-side .trick", TRICK_AT) == [["0", "-1", "1"]] * 2
            )
            shot = ARTIFACTS / "compare-pair-pick-390.png"
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot))
            page.tap("#next")
            assert page.evaluate("location.hash") == "#r1reveal"
            revealed = page.eval_on_selector_all(".pair-grid .seat", MOMENT)
            for before, now, after in zip(dealt, chosen, revealed, strict=True):
                (card,) = after["pain"]
                assert card in before["hand"] and card not in now["hand"], (before, after)
            page.tap("#next")
            assert page.evaluate("location.hash") == "#r1t1c1"
            # Worded step buttons of 44 px; the two matches one above the other.
            words = page.eval_on_selector_all(
                "#pair-controls button .word", "xs => xs.map(x => x.textContent)"
            )
            assert words == ["deal", "trick", "step", "step", "trick", "end"], words
            assert small_targets(page, "#pair-controls button", 44) == []
            cand, base = (
                page.locator(f".pair-match.side-{k}").bounding_box()
                for k in ("candidate", "baseline")
            )
            assert cand and base and cand["y"] + cand["height"] <= base["y"], (cand, base)
            assert cand["width"] > 300 and base["width"] > 300
            assert small_targets(page) == []
            _no_sideways_scroll(page)
            assert axe_violations(page) == []
        finally:
            browser.close()
    assert errors == [], errors


def _no_sideways_scroll(page: Any) -> None:
    wide = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert wide <= 0, f"the page scrolls sideways by {wide} px"


def _min_font(page: Any) -> None:
    small = page.evaluate(
        """() => [...document.querySelectorAll('main *')].filter(e => e.childNodes.length &&
        [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) &&
        parseFloat(getComputedStyle(e).fontSize) < 12).map(e => e.tagName + ':' + e.textContent.slice(0, 20))"""
    )
    assert small == [], f"text under 12 px: {small}"


def test_before_min_pairs_the_page_says_what_the_test_waits_for() -> None:
    test = {
        "statistic": "sprt",
        "lower": 0,
        "upper": 5,
        "alpha": 0.05,
        "beta": 0.05,
        "min_pairs": 20,
        "log_h1": 5.49,
        "log_h0": -5.2,
        "accept_h1_at": 3.14,
        "accept_h0_at": 3.14,
        "bound_reached": None,
        "elo0": None,
        "elo1": None,
    }
    summary = {"comparison": "c", "candidate": "new", "baseline": "old", "opponents": [],
               "verdict": "undecided", "pairs": 5, "max_pairs": 100, "metric": "score",
               "test": test, "score_diff": {"mean": 30.0, "ci95": 10.0}}  # fmt: skip
    html = render_compare({"running": True, "summary": summary, "pairs": []}, None)
    assert "running: 5 of the first 20 pairs in; the test decides nothing before 20 pairs" in html
    # A line already crossed is not read as a decision.
    assert "now 5.49, past the line: no decision before 20 pairs" in html
    assert "no decision before 20 pairs; 5 counted, 15 to go" in html
    assert "no bound reached" not in html
    later = {**summary, "pairs": 25}
    assert verdict_text(later, True) == "running: no bound reached yet after 25 pairs"
    # A fixed-size comparison is worded as what it is: no bound to reach.
    fixed = {**summary, "test": None, "pairs": 2, "max_pairs": 4}
    assert verdict_text(fixed, True) == (
        "running: 2 of 4 pairs played; this fixed-size comparison decides once all are in"
    )
    html = render_compare({"running": True, "summary": fixed, "pairs": []}, None)
    assert "exactly 4 pairs (2 played), no sequential test and no bounds" in html


@pytest.fixture(scope="module")
def fixed_size(tmp_path_factory: pytest.TempPathFactory, bots: Path) -> Iterator[str]:
    """A finished fixed-size comparison (no sequential test), served."""
    tmp = tmp_path_factory.mktemp("web-compare-fixed")
    cmd = _compare_cmd(bots, tmp / "out", 3)
    at = cmd.index("--sprt")
    cmd[at + 1 : at + 4] = ["off"]  # exactly --matches 6: three pairs
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp)
    assert done.returncode in (0, 1, 2), done.stderr[-2000:]
    assert json.loads((tmp / "out" / "compare.json").read_text())["test"] is None
    web = Web(tmp / "out", tmp / "web.log")
    try:
        yield web.url
    finally:
        web.stop()


def _browser_page(pw: Any, size: tuple[int, int], errors: list[str]) -> Any:
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    width, height = size
    page = browser.new_page(
        viewport={"width": width, "height": height}, has_touch=width < 600, is_mobile=width < 600
    )
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_default_timeout(30_000)
    return page


@browser_only
@pytest.mark.parametrize("size", [(390, 844), (1280, 800)], ids=["phone", "desk"])
def test_a_fixed_size_comparison_is_worded_as_one_and_charts_its_mean(
    fixed_size: str, size: tuple[int, int]
) -> None:
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as pw:
        page = _browser_page(pw, size, errors)
        try:
            page.goto(f"{fixed_size}/compare")
            page.wait_for_selector("#mean-chart .path-mean", state="attached")
            verdict = page.inner_text("#verdict")
            assert "bound" not in verdict and verdict.split(":")[0] in (
                "better", "worse", "no significant difference between heuristic and "
                '<img src=x onerror=alert(1)>"&',
            )  # fmt: skip
            assert "no sequential test and no bounds" in page.inner_text("#bounds")
            # The chart: the mean after each pair, its interval as a band, the line of 0.
            assert page.locator("#mean-chart .ci-band").count() == 1
            assert page.locator("#mean-chart .zero").count() == 1
            assert page.locator("#test-chart").count() == 0
            _no_sideways_scroll(page)
            assert axe_violations(page) == []
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"compare-fixed-{size[0]}.png"), full_page=True)
        finally:
            page.context.browser.close()
    assert errors == [], errors


@browser_only
def test_a_running_comparison_updates_in_place_and_says_what_it_waits_for(
    tmp_path: Path, bots: Path
) -> None:
    from playwright.sync_api import sync_playwright

    out = tmp_path / "out"
    # The test ends the comparison once it has seen what it looks for: 40 pairs before the
    # test may decide leave it running far longer than the page needs (a first pair, then
    # two more updates, one every 5 s at most), however fast the machine. (It played 12
    # once, and a fast machine had finished them all before the page had its second.)
    cmd = _compare_cmd(bots, out, 40, "--web-port", "0")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    errors: list[str] = []
    try:
        assert proc.stderr is not None
        url = ""
        while not url:
            line = proc.stderr.readline()
            assert line, "the comparison ended without printing its web address"
            if line.startswith("web on "):
                url = line.split(" ", 2)[2].strip().rstrip("/")
        with sync_playwright() as pw:
            page = _browser_page(pw, (390, 844), errors)
            loads: list[str] = []
            page.on("load", lambda p: loads.append(p.url))
            try:
                page.goto(f"{url}/compare")

                def pairs_on_page() -> int:
                    return int(page.locator("#pairs tr[data-deal]").count())

                wait_for(lambda: pairs_on_page() >= 1, 120, "a finished pair on the page")
                # Before min_pairs the page says what the test waits for.
                verdict = page.inner_text("#verdict")
                assert re.search(r"running: \d+ of the first 40 pairs in; the test decides "
                                 r"nothing before 40 pairs", verdict), verdict  # fmt: skip
                assert "no decision before 40 pairs" in page.inner_text(
                    '#bounds tr[data-row="min pairs"]'
                )
                assert page.locator("#test-chart .before-min").count() == 2
                # The reader scrolls down to the pairs; new pairs come in place, and what
                # the reader looks at stays where it is.
                page.evaluate("document.querySelector('#pair-list h2').scrollIntoView()")
                top = page.evaluate(
                    "document.querySelector('#pair-list h2').getBoundingClientRect().top"
                )
                seen = pairs_on_page()
                tops = []
                for _ in range(2):
                    wait_for(lambda n=seen: pairs_on_page() > n, 120, "another pair on the page")
                    seen = pairs_on_page()
                    tops.append(
                        page.evaluate(
                            "document.querySelector('#pair-list h2').getBoundingClientRect().top"
                        )
                    )
                assert all(abs(t - top) <= 1 for t in tops), (top, tops)
                assert len(loads) == 1, f"the page reloaded: {loads}"
                assert page.evaluate("document.querySelectorAll('#summary').length") == 1
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "compare-running-390.png"), full_page=True)
            finally:
                page.context.browser.close()
        assert proc.poll() is None, "the comparison ended before the test had seen it run"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130  # interrupted: its finished matches are kept
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    # The update stream, cut when the comparison's server stopped.
    assert [e for e in errors if "ERR_CONNECTION_REFUSED" not in e] == [], errors
