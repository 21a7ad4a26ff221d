"""Every page in a real browser at a phone's and a desk's width, on a finished tournament's
folder (``referee web``) with a bot that breaks the rules until it forfeits.

No page scrolls sideways or writes text under 12 px; the viewer's running scores equal
the record's at every card; a position in the address opens at that card and survives a
reload; faults and fallback cards are marked at their card and a forfeit from its moment;
no console error anywhere. Every page leaves a screenshot at both sizes in
test-artifacts/web/.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from leaguekit import REFEREE, ROOT, SAMPLES, bots, wait_for
from webkit import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    folder_web,
    get_json,
    have_chromium,
    web_league,
)

from referee.match.record import read_record

pytestmark = pytest.mark.skipif(
    not have_chromium(), reason="needs Debian's chromium and playwright"
)

SIZES = ((400, 800), (1400, 1000))
PY = sys.executable
CHEAT = "cheat <i>x</i>"
# Illegal on its 3rd, 9th and 20th request: three strikes, forfeited in the second round.
BOTS = [
    ("heuristic", [PY, str(SAMPLES / "python" / "heuristic_bot.py")], {}),
    ("random", [PY, str(SAMPLES / "python" / "random_bot.py")], {}),
    (CHEAT, [PY, str(ROOT / "tests" / "bots" / "illegal_bot.py")], {"ILLEGAL_AT": "3,9,20"}),
    ("lowest", [PY, str(ROOT / "tests" / "bots" / "lowest_bot.py")], {}),
]

#: The smallest font size of any visible text (SVG text at the size it is drawn), and
#: whether the document is wider than the window.
MEASURE = """() => {
    let smallest = 99, where = '';
    for (const n of document.querySelectorAll('body *')) {
        if (!n.childNodes.length || ![...n.childNodes].some(c => c.nodeType === 3 && c.textContent.trim())) continue;
        if (n.closest('select')) continue;
        const r = n.getBoundingClientRect();
        if (!r.width || !r.height) continue;
        let size = parseFloat(getComputedStyle(n).fontSize);
        const svg = n.closest('svg');
        if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width) {
            size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        }
        if (size < smallest) { smallest = size; where = `${n.tagName} ${n.textContent.slice(0, 40)}`; }
    }
    const d = document.documentElement;
    return {smallest, where, scroll: d.scrollWidth, client: d.clientWidth};
}"""


class Folder:
    def __init__(self, url: str, out: Path) -> None:
        self.url, self.out = url, out

    def record(self, match_id: str) -> list[dict[str, Any]]:
        return list(read_record(self.out / "matches" / f"{match_id}.jsonl"))

    def with_forfeit(self) -> str:
        for path in sorted((self.out / "matches").glob("*.jsonl")):
            if any(x["type"] == "fault" and x["forfeited"] for x in read_record(path)):
                return path.stem
        raise AssertionError("no match with a forfeit")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Folder]:
    tmp = tmp_path_factory.mktemp("web-pages")
    lines = [
        "[tournament]",
        'name = "pages"',
        "table_size = 4",
        "matches_per_table = 1",
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 10000",
    ]
    for name, command, env in BOTS:
        lines += [
            "[[bots]]",
            f"name = {json.dumps(name)}",
            f"command = {json.dumps(command)}",
            f"workdir = {json.dumps(str(Path(command[-1]).parent))}",
            f"sandbox = {{ read = [{json.dumps(str(SAMPLES / 'python'))}] }}",
        ]
        if env:
            lines.append(
                "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }"
            )
    (tmp / "t.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [*REFEREE, "tournament", str(tmp / "t.toml")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
    )
    # Exit status 1: the rule-breaking bot forfeited every match it played, and is named.
    assert done.returncode == 1, done.stderr[-2000:]
    assert "forfeited every match it played" in done.stdout, done.stdout[-2000:]
    with folder_web(tmp / "out") as url:
        yield Folder(url, tmp / "out")


class Pages:
    """Chromium at one window size; it records script errors and console errors."""

    def __init__(self, playwright: Any) -> None:
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.errors: list[str] = []
        self.context: Any = None
        self.page: Any = None

    def size(self, width: int, height: int) -> Any:
        if self.context is not None:
            self.context.close()
        self.context = self.browser.new_context(viewport={"width": width, "height": height})
        self.context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if urllib.parse.urlsplit(route.request.url).hostname == "127.0.0.1"
                else route.abort()
            ),
        )
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        return self.page


@pytest.fixture(scope="module")
def pages() -> Iterator[Pages]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = Pages(p)
        try:
            yield b
        finally:
            b.browser.close()


def until(page: Any, predicate: str, what: str = "") -> None:
    """Poll a JavaScript function until it returns true (the pages' CSP forbids
    Playwright's own polling, which evaluates strings)."""
    wait_for(lambda: page.evaluate(predicate), 30, what or predicate, every=0.05)


def _expected_scores(lines: list[dict[str, Any]]) -> list[tuple[str, list[int], list[int]]]:
    """From the record alone, per position of the viewer (the deal, then every card): its
    hash, the running round score and the match total of every seat (docs/rules.md rule 8,
    written out here apart from the server's code)."""
    n = len(lines[0]["seating"])
    kept = lines[0]["rules"].get("pain_card") == "kept_in_hand"
    out: list[tuple[str, list[int], list[int]]] = []
    totals = [0] * n
    running = [0] * n
    suits: list[set[str]] = []
    r = t = c = 0

    def points(card: str, seat: int) -> int:
        return -int(card[1:]) if card[0] in suits[seat] else 1

    for x in lines:
        if x["type"] == "round_start":
            r, t = x["round"], 0
        elif x["type"] == "reveal":
            suits = [{card[0] for card in p} for p in x["pain"]]
            running = [
                0 if kept else sum(points(card, s) for card in p) for s, p in enumerate(x["pain"])
            ]
            # The deal and the choice face down: no round score yet, the match's so far.
            out += [(f"#r{r + 1}", [], list(totals)), (f"#r{r + 1}pick", [], list(totals))]
            out.append(
                (
                    f"#r{r + 1}reveal",
                    list(running),
                    [a + b for a, b in zip(totals, running, strict=True)],
                )
            )
            c = 0
        elif x["type"] == "play":
            c += 1
            if c < n:
                out.append(
                    (
                        f"#r{r + 1}t{t + 1}c{c}",
                        list(running),
                        [a + b for a, b in zip(totals, running, strict=True)],
                    )
                )
        elif x["type"] == "trick":
            if x["winner"] >= 0:
                running[x["winner"]] += sum(points(card, x["winner"]) for card in x["cards"])
            out.append(
                (
                    f"#r{r + 1}t{t + 1}c{n}",
                    list(running),
                    [a + b for a, b in zip(totals, running, strict=True)],
                )
            )
            t, c = t + 1, 0
        elif x["type"] == "round_end":
            assert running == x["scores"], "the rule written out here disagrees with the record"
            totals = list(x["totals"])
    return out


SHOWN = """() => ({
    hash: location.hash,
    round: [...document.querySelectorAll('.seat .round-score')].map(e => Number(e.dataset.score)),
    total: [...document.querySelectorAll('.seat .match-total')].map(e => Number(e.dataset.total)),
})"""


def test_the_running_scores_equal_the_record_at_every_card(pages: Pages, folder: Folder) -> None:
    match_id = folder.with_forfeit()
    expected = _expected_scores(folder.record(match_id))
    page = pages.size(1400, 1000)
    page.goto(f"{folder.url}/match?id={urllib.parse.quote(match_id)}")
    page.wait_for_selector("#trick")
    for i, (hash_, running, total) in enumerate(expected):
        if i:
            page.keyboard.press("ArrowRight")
        assert page.evaluate(SHOWN) == {"hash": hash_, "round": running, "total": total}, i
    page.keyboard.press("ArrowRight")  # the last card: nowhere further
    assert page.evaluate(SHOWN)["hash"] == expected[-1][0]
    assert pages.errors == []


def test_a_position_in_the_address_opens_there_and_survives_a_reload(
    pages: Pages, folder: Folder
) -> None:
    match_id = folder.with_forfeit()
    page = pages.size(400, 800)
    page.goto(f"{folder.url}/match?id={urllib.parse.quote(match_id)}#r2t3c2")
    page.wait_for_selector("#trick")
    where = "() => ['round', 'trick', 'card'].map(k => Number(document.querySelector('#trick').dataset[k]))"
    assert page.evaluate(where) == [1, 2, 2]
    page.keyboard.press("ArrowRight")
    assert page.evaluate("location.hash") == "#r2t3c3"
    page.reload()
    page.wait_for_selector("#trick")
    assert page.evaluate(where) == [1, 2, 3]
    page.keyboard.press("PageDown")
    assert page.evaluate("location.hash") == "#r3"
    page.keyboard.press("ArrowDown")  # the next trick, complete
    assert page.evaluate("location.hash") == "#r3t1c4"
    # A link typed by hand moves the open viewer too.
    page.evaluate("location.hash = '#r1t5'")
    until(page, "() => document.querySelector('#trick').dataset.trick === '4'")
    assert page.evaluate(where) == [0, 4, 4]
    assert pages.errors == []


def test_faults_and_fallbacks_are_marked_at_their_card_and_a_forfeit_from_its_moment(
    pages: Pages, folder: Folder
) -> None:
    match_id = folder.with_forfeit()
    lines = folder.record(match_id)
    n = len(lines[0]["seating"])
    seat = next(x["seat"] for x in lines if x["type"] == "fault")
    page = pages.size(1400, 1000)
    page.goto(f"{folder.url}/match?id={urllib.parse.quote(match_id)}")
    page.wait_for_selector("#trick")
    # The position of every play, and the faults recorded just before it.
    r = t = c = 0
    pending: list[dict[str, Any]] = []
    checked = forfeit_checked = 0
    for x in lines:
        if x["type"] == "round_start":
            r, t, c = x["round"], 0, 0
        elif x["type"] == "fault":
            pending.append(x)
        elif x["type"] == "trick":
            t, c = t + 1, 0
        elif x["type"] == "play":
            c += 1
            if not pending and not x["fallback"]:
                continue
            page.evaluate(f"location.hash = '#r{r + 1}t{t + 1}c{c}'")
            until(
                page,
                f"() => document.querySelector('#trick').dataset.card === '{c}' && "
                f"document.querySelector('#trick').dataset.trick === '{t}'",
            )
            card = page.locator(f"#trick .played:nth-child({c})")
            assert card.get_attribute("data-seat") == str(x["seat"])
            classes = card.get_attribute("class") or ""
            assert ("fallback" in classes) == x["fallback"]
            if pending:
                assert "faulted" in classes
                forfeited = any(f["forfeited"] for f in pending)
                tag = page.locator(f'.seat[data-seat="{seat}"] .tag.forfeit')
                assert tag.count() == (1 if forfeited or forfeit_checked else 0)
                if forfeited:
                    # One card earlier the seat had not forfeited yet.
                    page.keyboard.press("ArrowLeft")
                    assert tag.count() == 0
                    forfeit_checked += 1
                checked += 1
                pending = []
    assert checked >= 3 and forfeit_checked == 1
    assert c <= n
    page.evaluate("location.hash = '#r1'")
    until(page, "() => document.querySelector('#trick').dataset.trick === '-1'")
    assert page.locator(f'.seat[data-seat="{seat}"] .tag.forfeit').count() == 0
    assert pages.errors == []


def test_every_page_fits_a_phone_and_a_desk_with_legible_text(pages: Pages, folder: Folder) -> None:
    match_id = folder.with_forfeit()
    info = get_json(f"{folder.url}/api/standings")
    assert info["standings"], "the folder has standings"
    paths = {
        "standings": ("/", "#standings"),
        "matches": ("/matches", "#finished"),
        # A phone shows a list per bot, a desk the matrix.
        "head-to-head": ("/head-to-head", "h1"),
        "bot": (
            f"/bot?name={urllib.parse.quote(CHEAT)}",
            "svg[aria-label='live Elo over matches']",
        ),
        "viewer": (f"/match?id={urllib.parse.quote(match_id)}#r2t3c2", "#trick"),
        "rules": ("/rules", "#rule-6-3"),
    }
    for width, height in SIZES:
        page = pages.size(width, height)
        for name, (path, ready) in paths.items():
            page.goto(folder.url + path)
            page.wait_for_selector(ready if name == "rules" else f"#main[data-drawn] {ready}")
            m = page.evaluate(MEASURE)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"page-{name}-{width}.png"), full_page=True)
            assert m["scroll"] <= m["client"], f"{name} at {width} px scrolls sideways: {m}"
            assert m["smallest"] >= 12, (
                f"{name} at {width} px: text of {m['smallest']:.1f} px ({m['where']})"
            )
            assert CHEAT in page.inner_text("#main") or name == "rules", name
    assert pages.errors == []


def test_the_charts_have_even_ticks_open_ends_and_visible_bars(
    pages: Pages, folder: Folder
) -> None:
    page = pages.size(400, 800)
    page.goto(f"{folder.url}/")
    page.wait_for_selector("#ratings-chart")
    ticks = page.eval_on_selector_all(
        "#ratings-chart text[text-anchor=middle]", "ts => ts.map(t => Number(t.textContent))"
    )
    steps = {b - a for a, b in itertools.pairwise(ticks)}
    assert len(ticks) >= 3 and len(steps) == 1, ticks
    standings = get_json(f"{folder.url}/api/standings")["standings"]
    open_rows = sum(bool(r["ci_low_open"]) + bool(r["ci_high_open"]) for r in standings)
    # An open end is an arrow, not a closed bar's cap.
    assert page.locator("#ratings-chart .open-end").count() == open_rows
    page.goto(f"{folder.url}/bot?name=random")
    page.wait_for_selector("svg[aria-label='think times against the clock']")
    widths = page.eval_on_selector_all(
        "svg[aria-label='think times against the clock'] rect.hbar",
        "rs => rs.map(r => r.getBoundingClientRect().width)",
    )
    assert len(widths) == 4 and min(widths) >= 3
    # The Elo chart of a bot with one match: whole match numbers, evenly spaced Elo labels.
    page.goto(f"{folder.url}/bot?name={urllib.parse.quote(CHEAT)}")
    chart = "svg[aria-label='live Elo over matches']"
    page.wait_for_selector(chart)
    xs = page.eval_on_selector_all(
        f"{chart} text[text-anchor=middle]", "ts => ts.map(t => t.textContent)"
    )
    assert [x for x in xs if x != "matches played"] == ["1", "2"]
    ys = page.eval_on_selector_all(
        f"{chart} text[text-anchor=end]", "ts => ts.map(t => Number(t.textContent))"
    )
    assert len(ys) >= 3 and len({b - a for a, b in itertools.pairwise(ys)}) == 1, ys
    assert pages.errors == []


def test_an_empty_folder_shows_no_null(pages: Pages, tmp_path: Path) -> None:
    (tmp_path / "matches").mkdir()
    with folder_web(tmp_path) as url:
        page = pages.size(400, 800)
        for path in ("/", "/matches", "/head-to-head"):
            page.goto(url + path)
            # The script has drawn the page (the server's copy has no "published"), and
            # every request it made has been answered.
            until(
                page,
                "() => document.querySelector('header .where').textContent.startsWith('folder')",
            )
            page.wait_for_load_state("networkidle")
            text = page.inner_text("#main")
            assert "null" not in text and "undefined" not in text, (path, text)
        assert "No finished match yet." in page.inner_text("#main")
        assert pages.errors == []


def test_a_live_tournament_table_advances_card_by_card(pages: Pages, tmp_path: Path) -> None:
    """``referee tournament --web-port``: a running match's page follows it card by card,
    not a round at a time, and turns into the replay once it has ended and been caught
    up with."""
    slow = [PY, str(ROOT / "tests" / "bots" / "slow_random_bot.py")]
    lines = [
        "[tournament]",
        'name = "livetour"',
        "table_size = 3",
        # More matches after the watched one: the server stays up for its replay.
        "matches_per_table = 4",
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 10000",
    ]
    for name in ("a", "b", "c"):
        lines += [
            "[[bots]]",
            f"name = {json.dumps(name)}",
            f"command = {json.dumps(slow)}",
            f"workdir = {json.dumps(str(Path(slow[-1]).parent))}",
            'env = { THINK_MS = "40" }',
            f"sandbox = {{ read = [{json.dumps(str(SAMPLES / 'python'))}] }}",
        ]
    (tmp_path / "t.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.Popen(
        [*REFEREE, "tournament", str(tmp_path / "t.toml"), "--web-port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stderr is not None
        url = ""
        for line in proc.stderr:
            if "web on http://127.0.0.1:" in line:
                url = line.split("web on ", 1)[1].strip().rstrip("/")
                break
        assert url
        page = pages.size(400, 800)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        seen: list[tuple[int, int]] = []  # (round, events) each time it changed
        scored = False
        # A match opened just before its end turns into the replay at once: then the next.
        for _attempt in range(3):
            running = wait_for(
                lambda: get_json(f"{url}/api/matches")["running"], 60, "a running match"
            )[0]["match_id"]
            page.goto(f"{url}/match?id={running}")
            page.wait_for_selector("#live-status, #step-label")
            seen = []
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                s = page.evaluate(
                    "() => { if (document.querySelector('#step-label')) return 'replay';"
                    " const t = document.querySelector('#live-status');"
                    " const k = document.querySelector('#trick');"
                    " return t && k ? [Number(k.dataset.round), Number(t.dataset.events),"
                    " k.querySelectorAll('.played').length] : null; }"
                )
                if s == "replay" or (len(seen) >= 12 and scored):
                    break  # the replay has taken over, or enough was seen
                if s is None:  # still connecting: no table drawn yet
                    page.wait_for_timeout(30)
                    continue
                if not seen or tuple(s[:2]) != seen[-1]:
                    seen.append((s[0], s[1]))
                    if len(seen) >= 8 and not scored and s[2]:
                        # Mid-trick: every seat's running round score, from what is public.
                        assert page.locator(".seat .round-score").count() == 3
                        page.screenshot(path=str(ARTIFACTS / "page-live-400.png"), full_page=True)
                        scored = True
                page.wait_for_timeout(30)
            if len(seen) >= 12 and scored:
                break
        by_round: dict[int, int] = {}
        for rnd, _ in seen:
            by_round[rnd] = by_round.get(rnd, 0) + 1
        # 14 tricks of 3 cards a round, at 40 ms a card: many small steps in a round.
        assert by_round, "no running match was seen live in three tries"
        assert max(by_round.values()) >= 5, seen
        assert scored, "the running scores were not looked at"
        # The table plays at a pace one can follow, behind the match: caught up (End) once
        # the match is over, it turns into the replay.
        wait_for(
            lambda: (
                page.evaluate("() => Boolean(document.querySelector('#step-label'))")
                or page.keyboard.press("End")
            ),
            60,
            "the replay",
            every=0.3,
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "page-live-replay-400.png"), full_page=True)
        assert pages.errors == []
    finally:
        try:
            proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def test_a_delayed_league_table_waits_with_a_word_then_keeps_the_pace(
    pages: Pages, tmp_path: Path
) -> None:
    """``web_delay_rounds = 1``: before round 2 is dealt the page says what it waits for
    (not "round 0"), then round 1 plays card by card, not in one burst."""
    table = {"name": "delayed", "table_size": 3, "parallel": 1, "web_delay_rounds": 1}
    with web_league(tmp_path, table) as (serve, url), bots(serve.address, tmp_path) as b:
        for name in ("s1", "s2", "s3"):
            b.start("slow", name, serve.register(name), think_ms=40)
        page = pages.size(400, 800)
        # The events the page has drawn, and the page's own clock when asked.
        shown = (
            "() => [performance.now(), document.querySelector('#live-status') ?"
            " Number(document.querySelector('#live-status').dataset.events) : -1]"
        )
        waiting = "() => Number(document.querySelector('#trick')?.dataset.round ?? -1) < 0"
        seen: list[int] = []
        asked: list[tuple[float, int]] = []  # (the page's ms, events), every look
        # A match opened late in its last rounds turns into the replay within a few steps
        # (a loaded machine slows the page's start): then the next match, up to three.
        tried: set[str] = set()
        for _attempt in range(3):
            running = wait_for(
                lambda: [
                    m["match_id"]
                    for m in get_json(f"{url}/api/matches")["running"]
                    if m["match_id"] not in tried
                ],
                60,
                "a running match not yet watched",
            )[0]
            tried.add(running)
            page.goto(f"{url}/match?id={running}")
            page.wait_for_selector("#live-status, #step-label")
            until(
                page,
                "() => !document.querySelector('#live-status')"
                " || !document.querySelector('#live-status').textContent"
                ".startsWith('Connecting')",
            )
            status = page.text_content("#live-status") or ""
            assert "round 0" not in status, status
            if page.evaluate(waiting):  # opened before round 2 was dealt (nearly always)
                assert "Waiting" in status, status
            seen = []
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and len(seen) < 12:
                if page.locator("#live-status").count() == 0:
                    break  # over: the replay has taken over
                at, events = page.evaluate(shown)
                asked.append((at, events))
                if events >= 0 and (not seen or events != seen[-1]):
                    seen.append(events)
                page.wait_for_timeout(30)
            if len(seen) >= 12:
                break
            asked.append((0.0, -1))  # a new page: no step across it
        # Many small steps (a quarter-second batch each), not a round in one step. A
        # larger step only after the page itself was held up for a second or more (a
        # loaded machine starving the browser): it then catches up with the live edge.
        assert len(seen) >= 12, seen
        bursts = [
            (round(b_at - a_at), b - a)
            for (a_at, a), (b_at, b) in itertools.pairwise(asked)
            if a >= 0 and b - a >= 40
        ]
        assert all(gap >= 1000 for gap, _ in bursts), (bursts, seen)
        assert pages.errors == []
