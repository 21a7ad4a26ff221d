"""The match viewer in a real browser, as a spectator or a bot author steps through it: Debian's
Chromium driven by Playwright at a phone's size with touch (390×844) and a desk's (1280×800),
on finished tournaments' folders served by ``referee web``: an 8-seat match with a bot that
breaks a rule twice, and a 4-seat match of the secret-pain preset.

Every test leaves a screenshot in test-artifacts/web/ (viewer-*.png).
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from leaguekit import REFEREE, ROOT, SAMPLES, wait_for
from webkit import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    axe_violations,
    folder_web,
    get_json,
    have_chromium,
    small_targets,
)

from referee.match.record import read_record

pytestmark = pytest.mark.skipif(
    not have_chromium(), reason="needs Debian's chromium and playwright"
)

PY = sys.executable
PHONE = {"width": 390, "height": 844}
DESK = {"width": 1280, "height": 800}
RANDOM = [PY, str(SAMPLES / "python" / "random_bot.py")]
HEURISTIC = [PY, str(SAMPLES / "python" / "heuristic_bot.py")]
ILLEGAL = [PY, str(ROOT / "tests" / "bots" / "illegal_bot.py")]


def _tournament(
    tmp: Path, name: str, size: int, bots: list[tuple[str, list[str], str]], preset: str
) -> Path:
    """Play one match of ``size`` seats and return its output folder."""
    lines = [
        "[tournament]",
        f'name = "{name}"',
        f"table_size = {size}",
        "matches_per_table = 1",
        "parallel = 1",
        'out = "out"',
        "[rules]",
        f'preset = "{preset}"',
        "[clock]",
        "decision_ms = 10000",
        "time_bank_ms = 500",
    ]
    for bot, command, env in bots:
        lines += [
            "[[bots]]",
            f"name = {json.dumps(bot)}",
            f"command = {json.dumps(command)}",
            f"workdir = {json.dumps(str(Path(command[-1]).parent))}",
            f"sandbox = {{ read = [{json.dumps(str(SAMPLES / 'python'))}] }}",
        ]
        if env:
            lines.append(f'env = {{ ILLEGAL_AT = "{env}" }}')
    folder = tmp / name
    folder.mkdir()
    (folder / "t.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [*REFEREE, "tournament", str(folder / "t.toml")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return folder / "out"


class Served:
    def __init__(self, url: str, out: Path) -> None:
        self.url, self.out = url, out
        self.match_id = next((out / "matches").glob("*.jsonl")).stem

    def record(self) -> list[dict[str, Any]]:
        return list(read_record(self.out / "matches" / f"{self.match_id}.jsonl"))

    def match(self, hash_: str = "") -> str:
        return f"{self.url}/match?id={urllib.parse.quote(self.match_id)}{hash_}"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Served]]:
    tmp = tmp_path_factory.mktemp("web-viewer")
    # Eight seats; "breaker" answers illegally on its 5th and 40th request (two strikes).
    eight = [(f"random-{i}", RANDOM, "") for i in range(4)] + [
        (f"heuristic-{i}", HEURISTIC, "") for i in range(3)
    ]
    eight.append(("breaker", ILLEGAL, "5,40"))
    big = _tournament(tmp, "eight", 8, eight, "sticheln")
    # The secret preset; "picker" breaks the rule at its first request, the pain choice.
    secret_bots = [("heur", HEURISTIC, ""), ("rand", RANDOM, ""), ("rand2", RANDOM, "")]
    secret_bots.append(("picker", ILLEGAL, "1"))
    secret = _tournament(tmp, "secret", 4, secret_bots, "stick-em-secret")
    with folder_web(big) as url8, folder_web(secret) as urls:
        yield {"eight": Served(url8, big), "secret": Served(urls, secret)}


class Chromium:
    """Chromium that may reach 127.0.0.1 only; it records script and console errors."""

    def __init__(self, playwright: Any) -> None:
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.errors: list[str] = []
        self.context: Any = None

    def open(self, phone: bool) -> Any:
        if self.context is not None:
            self.context.close()
        self.context = self.browser.new_context(
            viewport=PHONE if phone else DESK, has_touch=phone, is_mobile=phone
        )
        self.context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if urllib.parse.urlsplit(route.request.url).hostname == "127.0.0.1"
                else route.abort()
            ),
        )
        page = self.context.new_page()
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        return page


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        c = Chromium(p)
        try:
            yield c
        finally:
            c.browser.close()


def shot(page: Any, name: str, full: bool = False) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"viewer-{name}.png"), full_page=full)


def until(page: Any, predicate: str, what: str = "") -> None:
    """Poll a JavaScript function until it returns true (the CSP forbids Playwright's own
    polling, which evaluates strings)."""
    wait_for(lambda: page.evaluate(predicate), 30, what or predicate, every=0.05)


def open_viewer(chromium: Chromium, served: Served, phone: bool, hash_: str = "") -> Any:
    page = chromium.open(phone)
    page.goto(served.match(hash_))
    page.wait_for_selector("#main[data-drawn] #trick")
    return page


HASH = "() => location.hash"


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_next_trick_from_inside_a_trick_shows_that_trick_complete(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["eight"]
    page = open_viewer(chromium, served, phone, "#r1t1c1")
    outcome = "() => document.querySelector('#trick-outcome').textContent"
    for start, end in (("#r1t1c1", "#r1t1c8"), ("#r1t2c2", "#r1t2c8"), ("#r1t3c7", "#r1t3c8")):
        page.evaluate(f"location.hash = '{start}'")
        until(page, f"() => location.hash === '{start}'")
        page.keyboard.press("ArrowDown")
        assert page.evaluate(HASH) == end
        assert " wins" in page.evaluate(outcome) or "Nobody" in page.evaluate(outcome)
        # ↓ again: the next trick, complete; ↑ from inside a trick: the one before it.
    page.keyboard.press("ArrowDown")
    assert page.evaluate(HASH) == "#r1t4c8"
    page.evaluate("location.hash = '#r1t4c3'")
    until(page, "() => location.hash === '#r1t4c3'")
    page.keyboard.press("ArrowUp")
    assert page.evaluate(HASH) == "#r1t3c8"
    # The button does as the key does.
    page.evaluate("location.hash = '#r1t5c4'")
    until(page, "() => location.hash === '#r1t5c4'")
    page.click("#next-trick")
    assert page.evaluate(HASH) == "#r1t5c8"
    assert chromium.errors == []


BAR = """() => [...document.querySelectorAll('#stepbar button')].map(b => {
    const r = b.getBoundingClientRect();
    return {id: b.id, w: r.width, h: r.height, top: r.top, bottom: r.bottom,
            word: b.querySelector('.word').textContent,
            name: [...b.children].filter(c => !c.hasAttribute('aria-hidden')).map(c => c.textContent).join('')};
})"""


def swipe(page: Any, x0: float, x1: float, y: float) -> None:
    """A finger drawn sideways across the screen, as real touch input (Chrome's protocol)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y}]})
    for k in range(1, 6):
        x = x0 + (x1 - x0) * k / 5
        cdp.send(
            "Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]}
        )
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_the_step_bar_stays_in_reach_with_big_worded_buttons(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["eight"]
    page = open_viewer(chromium, served, phone, "#r1t2c3")
    size = PHONE if phone else DESK
    # Opened, the trick is in sight above the bar (on a phone the seats and rules fold
    # away under one line).
    trick, bar = page.evaluate(
        "() => [document.querySelector('#trick').getBoundingClientRect().bottom,"
        " document.querySelector('#stepbar .steps').getBoundingClientRect().top]"
    )
    assert trick <= (bar - 40 if phone else size["height"]), (trick, bar)
    # Scrolled to the seat to play (the last of the table), the bar is still on screen:
    # at the bottom on a phone, within a thumb's reach; at the top on a desk.
    page.evaluate("document.querySelector('.seat.to-play').scrollIntoView({block: 'end'})")
    page.evaluate("window.scrollBy(0, 400)")
    bar = page.evaluate(BAR)
    assert [b["id"] for b in bar] == ["prev-trick", "prev", "play", "next", "next-trick"]
    for b in bar:
        assert b["w"] >= 44 and b["h"] >= 44, b
        assert b["top"] >= 0 and b["bottom"] <= size["height"], b
        assert b["word"] in ("trick", "card", "play"), b
        assert b["word"] in b["name"], b  # the visible word is in the accessible name
        if phone:
            assert b["bottom"] >= size["height"] - 80, b  # the bottom of the screen
        else:
            assert b["top"] <= 80, b
    # The other steps are big enough too, and worded.
    more = page.eval_on_selector_all(
        "#controls .more button, #controls select",
        "bs => bs.map(b => [b.getBoundingClientRect().height, b.textContent])",
    )
    assert len(more) == 6 and all(h >= 44 and t.strip() for h, t in more), more
    page.click("#next")
    assert page.evaluate(HASH) == "#r1t2c4"
    # Many seats: a compact table, the trick and all 8 seats within a screen's height
    # (each seat's panel took up to 300 px of a phone's screen before).
    height = page.evaluate("() => document.querySelector('#table').getBoundingClientRect().height")
    assert height <= size["height"], height
    d = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert d[0] <= d[1], "the page scrolls sideways"
    shot(page, f"stepbar-{'phone' if phone else 'desk'}")
    if phone:
        # Swipe the table: right to left is the next card, left to right the previous.
        page.evaluate("window.scrollTo(0, 0)")
        box = page.evaluate(
            "() => { const r = document.querySelector('#trick').getBoundingClientRect();"
            " return [r.left, r.right, r.top + r.height / 2]; }"
        )
        swipe(page, box[1] - 20, box[0] + 20, box[2])
        until(page, "() => location.hash === '#r1t2c5'", "a swipe to the left to step a card")
        swipe(page, box[0] + 20, box[1] - 20, box[2])
        until(page, "() => location.hash === '#r1t2c4'", "a swipe to the right to step back")
        # A vertical drag scrolls, it does not step.
        cdp_y = box[2]
        swipe_v = page.context.new_cdp_session(page)
        swipe_v.send(
            "Input.dispatchTouchEvent",
            {"type": "touchStart", "touchPoints": [{"x": 200, "y": cdp_y}]},
        )
        swipe_v.send(
            "Input.dispatchTouchEvent",
            {"type": "touchMove", "touchPoints": [{"x": 215, "y": cdp_y - 200}]},
        )
        swipe_v.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        swipe_v.detach()
        # Once the scroll it started has come to rest (a tap in a fling only stops it):
        last: list[float] = []
        wait_for(
            lambda: last.append(page.evaluate("scrollY")) or last[-3:] == [last[-1]] * 3,
            10,
            "the scroll to rest",
            every=0.1,
        )
        assert page.evaluate(HASH) == "#r1t2c4"
        # A tap on a bar button steps.
        page.tap("#next-trick")
        assert page.evaluate(HASH) == "#r1t2c8"
    assert chromium.errors == []


SEATS = """() => [...document.querySelectorAll('.seat')].map(s => ({
    pain: [...s.querySelectorAll('.painrow [data-card]')].map(c => c.dataset.card),
    down: s.querySelectorAll('.painrow .card.hidden').length,
    hand: [...s.querySelectorAll('[data-hand] [data-card]')].map(c => c.dataset.card),
    outlined: s.querySelectorAll('[data-hand] .card.pain').length,
    round: s.querySelector('.round-score') ? Number(s.querySelector('.round-score').dataset.score) : null,
    hurt: s.querySelectorAll('.taken .chip.hurt').length,
}))"""


def _moments(lines: list[dict[str, Any]]) -> tuple[list[list[str]], list[list[str]], list[int]]:
    """Round 1 from the record: the hands dealt, the pain picks, the round's scores."""
    dealt = next(x["hands"] for x in lines if x["type"] == "round_start")
    picks = next(x["pain"] for x in lines if x["type"] == "reveal" and x["round"] == 0)
    scores = next(x["scores"] for x in lines if x["type"] == "round_end")
    return dealt, picks, scores


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_the_deal_the_choice_face_down_and_the_reveal_are_steps_of_their_own(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["eight"]
    dealt, picks, _ = _moments(served.record())
    page = open_viewer(chromium, served, phone, "#r1")
    label = "() => document.querySelector('#step-label').textContent"
    # Dealt: every hand as dealt, no pain card chosen, marked or scored yet.
    seats = page.evaluate(SEATS)
    assert [s["hand"] for s in seats] == dealt
    assert all(s["pain"] == [] and s["down"] == 0 and s["outlined"] == 0 for s in seats)
    assert all(s["round"] is None for s in seats)
    # Chosen, face down: a hidden card before every seat, the pick gone from its hand.
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r1pick"
    assert page.evaluate(label) == "Round 1 · pain cards chosen, face down"
    seats = page.evaluate(SEATS)
    assert all(s["pain"] == [] and s["down"] == len(p) for s, p in zip(seats, picks, strict=True))
    assert [s["hand"] for s in seats] == [
        [c for c in h if c not in p] for h, p in zip(dealt, picks, strict=True)
    ]
    shot(page, f"moments-pick-{'phone' if phone else 'desk'}")
    # Revealed, all at once: every pick face up, the round scores from them.
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r1reveal"
    seats = page.evaluate(SEATS)
    assert [s["pain"] for s in seats] == picks
    assert all(s["down"] == 0 and s["round"] is not None for s in seats)
    assert "revealed, all at once" in page.text_content("#trick-outcome")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r1t1c1"
    # ↑ from the first trick goes back to the deal.
    page.keyboard.press("ArrowUp")
    assert page.evaluate(HASH) == "#r1"
    assert chromium.errors == []


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_secret_pain_cards_stay_hidden_until_the_round_is_scored(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["secret"]
    lines = served.record()
    dealt, picks, scores = _moments(lines)
    tricks = sum(1 for x in lines if x["type"] == "trick" and x["round"] == 0)
    n = len(dealt)
    page = open_viewer(chromium, served, phone, "#r1")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r1pick"
    # The pain choice's fault (the picker's first answer broke a rule) is at this step.
    outcome = page.text_content("#trick-outcome") or ""
    assert "stay hidden until the round is scored" in outcome
    assert "⚠ picker" in outcome
    seats = page.evaluate(SEATS)
    assert all(s["pain"] == [] and s["down"] == 1 for s in seats)
    # Kept in the hand: the hands are the dealt ones, nothing marked.
    assert [s["hand"] for s in seats] == dealt and all(s["outlined"] == 0 for s in seats)
    # No reveal before the first lead: the next step is the first card.
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r1t1c1"
    # Through every trick but the last, complete: no pain card, no round score, no
    # points of a taken card (they would tell the pain suits).
    for t in range(1, tricks):
        page.evaluate(f"location.hash = '#r1t{t}c{n}'")
        until(page, f"() => document.querySelector('#trick').dataset.trick === '{t - 1}'")
        seats = page.evaluate(SEATS)
        assert all(s["pain"] == [] and s["round"] is None and s["hurt"] == 0 for s in seats), t
        assert page.locator("#trick .pts").count() == 0
        assert "hidden" in (page.text_content("#trick-outcome") or "") or "Nobody" in (
            page.text_content("#trick-outcome") or ""
        )
    if phone:
        shot(page, "secret-phone")
    # The round scored: every pain card face up, the scores as recorded.
    page.keyboard.press("ArrowDown")
    assert page.evaluate(HASH) == f"#r1t{tricks}c{n}"
    seats = page.evaluate(SEATS)
    assert [s["pain"] for s in seats] == picks
    assert [s["round"] for s in seats] == scores
    assert "secret pain cards are revealed" in (page.text_content("#trick-outcome") or "")
    # An address of the reveal, which this preset has not, opens at the choice.
    page.evaluate("location.hash = '#r2reveal'")
    until(
        page,
        "() => location.hash === '#r2reveal' && document.querySelector('#trick').dataset.round === '1'",
    )
    assert page.text_content("#step-label") == "Round 2 · pain cards chosen, face down"
    assert chromium.errors == []


def _think_text(us: int) -> str:
    """The viewer's words for a think time (table.js thinkText). JavaScript's toFixed and
    Math.round take a tie up (250 µs is "0.3 ms"); Python's formatting takes it to the even
    digit, so the exact value of the same double is rounded here as JavaScript does."""

    def fixed(x: float, digits: int) -> str:
        return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))

    if us == 0:
        return "0 ms"
    if us < 1000:
        return f"{fixed(us / 1000, 2 if us < 100 else 1)} ms"
    if us < 1_000_000:
        return f"{fixed(us / 1000, 0)} ms"
    return f"{fixed(us / 1e6, 1)} s"


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_a_bot_author_jumps_by_trick_reads_think_times_and_finds_faults(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["eight"]
    lines = served.record()
    n = len(lines[0]["seating"])
    plays = [x for x in lines if x["type"] == "play" and x["round"] == 0]
    tricks = sum(1 for x in lines if x["type"] == "trick" and x["round"] == 0)
    page = open_viewer(chromium, served, phone, "#r1")
    (page.tap if phone else page.click)("#show-result")  # every trick listed, not a spoiler
    # The list of round 1's tricks: the deal, the reveal, then every trick.
    entries = page.eval_on_selector_all(
        "#trick-list a", "as => as.map(a => a.getAttribute('href'))"
    )
    assert entries == ["#r1", "#r1reveal"] + [f"#r1t{t}" for t in range(1, tricks + 1)]
    link = page.locator('#trick-list a[href="#r1t3"]')
    link.tap() if phone else link.click()
    assert page.evaluate(HASH) == f"#r1t3c{n}"
    assert page.get_attribute('#trick-list a[href="#r1t3"]', "aria-current") == "step"
    # The list scrolls inside its own box: the page stayed where it was.
    # Each card of the trick with its think time and the clock it was against: 10000 ms a
    # decision and the 500 ms bank (no decision of these bots ran over).
    shown = page.eval_on_selector_all(
        "#trick .played",
        "ps => ps.map(p => [p.querySelector('.think-ms').textContent,"
        " Number(p.querySelector('meter').max), p.querySelector('.think').title])",
    )
    third = plays[2 * n : 3 * n]
    assert [s[0] for s in shown] == [_think_text(x["think_us"]) for x in third]
    assert all(s[1] == 10500 and "of the 10000 ms allowed and a 500 ms bank" in s[2] for s in shown)
    # The pain choice's think time, at the choice (the first decision: with the startup time).
    page.evaluate("location.hash = '#r1pick'")
    until(page, "() => document.querySelectorAll('.painrow .think').length > 0")
    assert "of the 20000 ms allowed" in page.get_attribute(".painrow .think", "title")
    # Faults at their card: the list links to it, the card says what was wrong.
    page.keyboard.press("End")
    faults = page.eval_on_selector_all("#faults a", "as => as.map(a => a.getAttribute('href'))")
    r = t = c = 0
    expected: list[str] = []
    pending = False
    for x in lines:
        if x["type"] == "round_start":
            r, t, c = x["round"], 0, 0
        elif x["type"] == "fault":
            pending = True
        elif x["type"] == "trick":
            t, c = t + 1, 0
        elif x["type"] == "play":
            c += 1
            if pending:
                expected.append(f"#r{r + 1}t{t + 1}c{c}")
                pending = False
    assert len(expected) == 2 and faults == expected
    first = page.locator("#faults a").first
    first.tap() if phone else first.click()
    assert page.evaluate(HASH) == expected[0]
    # The table came back into view, clear of the step bar.
    trick, bar = page.evaluate(
        "() => [document.querySelector('#trick').getBoundingClientRect().toJSON(),"
        " document.querySelector('#stepbar').getBoundingClientRect().toJSON()]"
    )
    if phone:
        assert trick["top"] >= 0 and trick["bottom"] <= bar["top"], (trick, bar)
    else:
        assert trick["top"] >= bar["bottom"] and trick["bottom"] <= DESK["height"], (trick, bar)
    here = page.locator("#trick .played.faulted")
    assert here.count() == 1 and "illegal card" in (
        here.locator(".fault-mark").text_content() or ""
    )
    assert "not in the hand" in (page.text_content("#trick-outcome") or "")
    # The trick with the fault is marked in the list.
    fault_trick = expected[0].split("c")[0]
    assert page.locator(f'#trick-list a[href="{fault_trick}"] .fault-mark').count() == 1
    shot(page, f"author-{'phone' if phone else 'desk'}")
    assert chromium.errors == []


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_the_result_is_hidden_until_asked_for_as_the_setting_says(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["eight"]
    page = open_viewer(chromium, served, phone, "#r1t2c3")
    # By default no spoiler: the result is hidden and the setting says so.
    assert not page.is_visible("#result")
    assert page.is_checked("#hide-result")
    # No trick after the one being played is listed.
    listed = "#trick-list a"
    hrefs = "as => as.map(a => a.getAttribute('href'))"
    assert page.eval_on_selector_all(listed, hrefs) == ["#r1", "#r1reveal", "#r1t1", "#r1t2"]
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowDown")
    assert page.locator(listed).count() == 4
    page.keyboard.press("ArrowRight")
    assert page.locator(listed).count() == 5
    # Asked for, on this page: shown, every trick listed; the setting stays.
    tap = page.tap if phone else page.click
    tap("#show-result")
    assert page.is_visible("#result") and not page.is_visible("#show-result")
    assert page.locator(listed).count() > 5
    assert page.is_checked("#hide-result")
    page.goto("about:blank")
    page.goto(served.match("#r1"))
    page.wait_for_selector("#main[data-drawn] #trick")
    assert not page.is_visible("#result") and page.is_visible("#show-result")
    # Without the script even, the server's result line is not shown.
    page.route("**/static/match.js", lambda route: route.abort())
    page.goto(served.match("#r1"))
    page.wait_for_selector("#result", state="attached")
    assert page.evaluate("getComputedStyle(document.querySelector('#result')).display") == "none"
    page.unroute("**/static/match.js")
    # A viewer who wants results turns the setting off: shown, and after a reload too.
    page.goto(served.match("#r1"))
    page.wait_for_selector("#main[data-drawn] #trick")
    box = page.locator("#hide-result")
    box.tap() if phone else box.uncheck()
    assert page.is_visible("#result") and not page.is_visible("#show-result")
    page.reload()
    page.wait_for_selector("#main[data-drawn] #trick")
    assert page.is_visible("#result") and not page.is_checked("#hide-result")
    box = page.locator("#hide-result")
    box.tap() if phone else box.check()
    assert not page.is_visible("#result")
    chromium.errors[:] = [e for e in chromium.errors if "match.js" not in e]
    assert chromium.errors == []


SUIT_WORDS = {"C": "clubs", "S": "spades", "H": "hearts", "D": "diamonds", "K": "caps"}
SUIT_WORDS |= {"W": "switches", "P": "planets", "R": "stars"}


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_keys_step_wherever_the_focus_is_and_each_card_is_announced(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["eight"]
    lines = served.record()
    seating = lines[0]["seating"]
    plays = [x for x in lines if x["type"] == "play" and x["round"] == 0]
    page = open_viewer(chromium, served, phone, "#r1t1c1")
    said = "() => document.querySelector('#announce').textContent"
    # A focused round drop-down: → is the next card, not the next round.
    page.focus("#round-select")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r1t1c2"
    assert page.input_value("#round-select") == "0"
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(HASH) == "#r1t1c1"
    # A round chosen in it: the keys step again from there.
    page.select_option("#round-select", "1")
    assert page.evaluate(HASH) == "#r2"
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r2pick"
    page.keyboard.press("ArrowDown")
    assert page.evaluate(HASH).startswith("#r2t1c")
    # Space on a focused button presses that button only (it does not also start play).
    page.evaluate("location.hash = '#r1t1c1'")
    until(page, "() => location.hash === '#r1t1c1'")
    page.focus("#next")
    page.keyboard.press("Space")
    assert page.evaluate(HASH) == "#r1t1c2"
    assert page.text_content("#play .word") == "play"
    # The checkbox keeps its space; the arrows still step.
    page.focus("#hide-result")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(HASH) == "#r1t1c3"
    # The scrubber says where it is in words, and the card played is announced.
    label = page.text_content("#step-label")
    assert page.get_attribute("#scrubber", "aria-valuetext") == label
    card = plays[2]["card"]
    assert page.evaluate(said) == (
        f"{seating[plays[2]['seat']]} plays {card[1:]} of {SUIT_WORDS[card[0]]}."
        f" {seating[plays[3]['seat']]} to play."
    )
    assert page.get_attribute("#announce", "role") == "status"
    page.keyboard.press("ArrowDown")
    winner = next(x["winner"] for x in lines if x["type"] == "trick")
    assert f"{seating[winner]} wins the trick" in page.evaluate(said)
    page.evaluate("location.hash = '#r1reveal'")
    until(page, "() => location.hash === '#r1reveal'")
    assert page.evaluate(said).startswith("Pain cards revealed: ")
    # The position is no longer read out as a bare number on every step.
    assert page.get_attribute("#step-label", "aria-live") is None
    assert chromium.errors == []


SLOW = [PY, str(ROOT / "tests" / "bots" / "slow_random_bot.py")]

#: Where a live page stands: its address, the status line, how far behind it shows.
LIVE = """() => {
    const st = document.querySelector('#live-status');
    return st ? {hash: location.hash, status: st.textContent, behind: Number(st.dataset.behind || 0),
                 events: Number(st.dataset.events || 0), word: document.querySelector('#play .word').textContent}
              : null;
}"""


def _next_card(a: str, b: str, n: int) -> bool:
    """Whether address ``b`` is one moment after ``a`` on a live table of ``n`` seats."""
    pa = re.fullmatch(r"#r(\d+)(?:t(\d+)c(\d+)|reveal|pick)?", a)
    pb = re.fullmatch(r"#r(\d+)(?:t(\d+)c(\d+)|reveal|pick)?", b)
    if not pa or not pb:
        return False
    ra, rb = int(pa[1]), int(pb[1])
    if pa[2] is None or pb[2] is None:  # the deal, the reveal and the first card follow
        return rb in (ra, ra + 1)
    ta, ca, tb, cb = int(pa[2]), int(pa[3]), int(pb[2]), int(pb[3])
    if (ra, ta) == (rb, tb):
        return cb == ca + 1
    return (rb, tb, cb) == (ra, ta + 1, 1) and ca == n


def _skip_to_edge(a: str, b: str, n: int) -> bool:
    """Whether address ``b`` is a skip forward from ``a`` to where the live edge's trick in
    progress plays on: a complete trick, or a moment of a deal."""
    key = re.compile(r"#r(\d+)(?:t(\d+)c(\d+)|(reveal|pick))?")
    pa, pb = key.fullmatch(a), key.fullmatch(b)
    if not pa or not pb:
        return False

    def place(m: re.Match[str]) -> tuple[int, int, int]:
        if m[2] is None:
            return (int(m[1]), 0, {"pick": 1, "reveal": 2}.get(m[4] or "", 0))
        return (int(m[1]), int(m[2]), int(m[3]))

    landed = pb[2] is None or int(pb[3]) == n
    return landed and place(pb) > place(pa)


def test_a_live_match_plays_card_by_card_can_be_stepped_back_and_caught_up(
    chromium: Chromium, tmp_path: Path
) -> None:
    """8 seats of bots that answer in 20 ms (a match in about 20 s): the live table shows one
    card at a time, buffering the rest; a viewer steps back and forth while it runs and
    catches up; on a phone paused with the seat to play just above the step bar, the seat
    stays on the screen as the badge and the status line above the table grow (paused, and
    at the match's end); the standings' "running N" leads to the running matches."""
    lines = [
        "[tournament]",
        'name = "pace"',
        "table_size = 8",
        "matches_per_table = 2",
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 10000",
    ]
    for i in range(8):
        lines += [
            "[[bots]]",
            f'name = "s{i}"',
            f"command = {json.dumps(SLOW)}",
            f"workdir = {json.dumps(str(Path(SLOW[-1]).parent))}",
            'env = { THINK_MS = "20" }',
            f"sandbox = {{ read = [{json.dumps(str(SAMPLES / 'python'))}] }}",
        ]
    (tmp_path / "t.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.Popen(
        [*REFEREE, "tournament", str(tmp_path / "t.toml"), "--web-port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stderr is not None
        url, said = "", []
        for line in proc.stderr:
            said.append(line)
            if "web on http://127.0.0.1:" in line:
                url = line.split("web on ", 1)[1].strip().rstrip("/")
                break
        assert url, f"the tournament ended without its web address: {''.join(said)[-2000:]}"
        running = wait_for(
            lambda: get_json(f"{url}/api/matches")["running"], 60, "a running match"
        )[0]["match_id"]
        # The standings lead to it: "running 1" links to the running matches.
        phone = chromium.open(True)
        phone.goto(f"{url}/")
        phone.wait_for_selector("#main[data-drawn] #progress-running")
        phone.tap("#progress-running")
        phone.wait_for_selector(f'#running tr[data-match="{running}"]')
        assert phone.url.endswith("/matches#running-now")
        # Two viewers at once: a phone and a desk (its own browser context).
        desk_context = chromium.browser.new_context(viewport=DESK)
        desk = desk_context.new_page()
        desk.on("pageerror", lambda e: chromium.errors.append(str(e)))
        for page in (phone, desk):
            page.goto(f"{url}/match?id={running}")
            page.wait_for_selector("#live-status[data-events]")
        # The phone keeps no scroll anchor, as Safari (an iPhone's browser) keeps none: what
        # the page does to keep the seat to play on the screen as the text above the table
        # grows, it does itself (Chromium's anchoring makes up for some of it or all,
        # depending on where the page is scrolled to: not a thing to count on, nor to test).
        phone.evaluate("() => { document.body.style.overflowAnchor = 'none'; }")
        # The phone pauses at once with its bar's button: it stays the live table, behind,
        # however soon the match ends (a viewer at the edge turns into the replay then, and
        # the desk's part takes a while on a loaded machine). It pauses at the live edge
        # with the seat to play just above the step bar, as a viewer who scrolled down the
        # seats has it (or the page scrolled it there): with the next cards the badge turns
        # into a button and the status line grows, above the table; the seat to play stays
        # on the screen all the same.
        stopped = wait_for(
            lambda: phone.evaluate(PAUSE_AT_THE_BAR), 30, "a seat to play at the live edge"
        )
        until(phone, PAUSED_SHOWN, "the pause shown above the table")
        s = phone.evaluate(AFTER_A_FRAME)
        assert s["tableAt"] > stopped["tableAt"], (stopped, s)  # what is above it grew
        assert s["seat"] == stopped["seat"] and _seat_on_screen(s), (stopped, s)
        paused = phone.evaluate(LIVE)
        assert paused is not None and paused["word"] == "play", paused
        # At 4× one card every 175 ms: every address the page shows (each one it writes, as
        # the page itself records them) is one card on from the one before.
        desk.select_option("#speed", "4")
        desk.evaluate(
            "() => { window.shownHashes = [];"
            " const replace = history.replaceState.bind(history);"
            " history.replaceState = (s, t, u) => { window.shownHashes.push(String(u)); replace(s, t, u); }; }"
        )
        seen = []
        while len(seen) < 12:
            s = desk.evaluate(LIVE)
            assert s is not None, "the match ended before a dozen cards were watched"
            if not seen or s["hash"] != seen[-1]["hash"]:
                seen.append(s)
            desk.wait_for_timeout(20)
        shown = desk.evaluate("window.shownHashes")
        assert len(shown) >= 11, shown
        # Near the edge one card at a time; a trick behind, on to a complete trick (or a
        # moment of the deal), from where the trick in progress plays on.
        for a, b in itertools.pairwise(shown):
            assert _next_card(a, b, 8) or _skip_to_edge(a, b, 8), (a, b, shown)
        # The feed ran ahead of the table: it was buffered, and the header says by how much
        # and which trick is shown.
        assert any(s["behind"] > 0 for s in seen), seen
        last = seen[-1]
        m = re.match(r"#r(\d+)t(\d+)c", last["hash"])
        if m:
            assert f"round {m[1]} · trick {m[2]}" in last["status"], last
        # Pause, and step back while it runs: one card back, and it stays there while the
        # match goes on.
        shot(desk, "live-desk")
        desk.keyboard.press("Space")
        here = desk.evaluate(LIVE)
        assert here["word"] == "play"  # paused
        assert axe_violations(desk) == []
        desk.keyboard.press("ArrowLeft")
        back = desk.evaluate(LIVE)
        assert _next_card(back["hash"], here["hash"], 8), (back, here)
        desk.wait_for_timeout(600)
        assert desk.evaluate(LIVE)["hash"] == back["hash"]
        desk.keyboard.press("ArrowRight")
        assert desk.evaluate(LIVE)["hash"] == here["hash"]
        # Caught up with the match when asked: every card it was behind is passed at once
        # (more may have come since).
        paused = desk.evaluate(LIVE)
        desk.click("#catch-up")
        caught = desk.evaluate(LIVE)
        if paused is not None and caught is not None:  # (or the replay has taken over)
            assert caught["events"] >= paused["events"] + paused["behind"], (paused, caught)
            assert caught["word"] == "pause", caught
        # The phone, paused since, on the same card.
        shot(phone, "live-phone")
        # The live table on a phone, paused (its badge a button back to the edge): no
        # target under 24 px, its step controls and the badge 44 px.
        assert small_targets(phone) == [], small_targets(phone)
        steps = "#controls button, #controls select, button#live-badge"
        assert phone.locator("button#live-badge").count() == 1
        assert small_targets(phone, steps, 44) == [], small_targets(phone, steps, 44)
        # As in the replay, the seat to play is on the screen, between the trick held at
        # the top and the step bar, and no name is cut.
        s = phone.evaluate(TO_PLAY)
        assert s["cut"] == [] and s["feltTop"] >= -1, s
        assert s["seat"] == stopped["seat"] and _seat_on_screen(s), (stopped, s)
        paused = phone.evaluate(LIVE)
        assert paused["behind"] > 0  # the match went on
        # With the seat to play just above the bar, the phone stays paused until the match
        # is over: the status line above the table grows (the end, a button to the replay)
        # and the seat to play stays on the screen.
        put = phone.evaluate(SEAT_AT_THE_BAR)
        wait_for(
            lambda: running in [m["match_id"] for m in get_json(f"{url}/api/matches")["finished"]],
            120,
            "the match's end",
        )
        until(phone, "() => Boolean(document.querySelector('#replay-here'))", "the end, paused")
        s = phone.evaluate(AFTER_A_FRAME)
        assert s["seat"] == stopped["seat"] and _seat_on_screen(s), (put, s)
        if not put["over"]:  # (the match may have ended while the desk watched)
            assert phone.evaluate(STATUS_HEIGHT) > put["status"], put
        # Caught up at the end, the replay takes over for a viewer who has seen it; so for
        # the desk, which followed the match to its end.
        phone.tap("#catch-up")
        for page in (phone, desk):
            deadline = 60
            wait_for(
                lambda p=page: (
                    p.evaluate("() => Boolean(document.querySelector('#step-label'))")
                    or p.keyboard.press("End")
                ),
                deadline,
                "the replay after catching up",
                every=0.3,
            )
            until(page, "() => location.hash !== ''")
            assert page.evaluate("document.querySelector('#scrubber').value") == page.evaluate(
                "document.querySelector('#scrubber').max"
            )
        desk_context.close()
        assert chromium.errors == []
    finally:
        proc.terminate()  # the matches after the watched one are not needed
        try:
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_axe_finds_nothing_on_the_viewer(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    """axe-core (with the rule that a control's name holds its visible text) at the deal's
    moments, a faulted card with think times, and the secret preset's hidden cards."""
    found = {}
    for name, hash_ in (("eight", "#r1pick"), ("eight", "#r1reveal"), ("eight", "#r1t3c8")):
        page = open_viewer(chromium, folders[name], phone, hash_)
        found[hash_] = axe_violations(page)
    page = open_viewer(chromium, folders["secret"], phone, "#r1t3c4")
    found["secret"] = axe_violations(page)
    assert all(v == [] for v in found.values()), found
    assert chromium.errors == []


#: The live table's lag: cards received and not shown, whether it is at the edge, the
#: badge's words, the seats.
LAG = """() => {
    const st = document.querySelector('#live-status');
    const badge = document.querySelector('#live-badge');
    return st && st.dataset.behind !== undefined
        ? {behind: Number(st.dataset.behind), live: st.dataset.live === '1',
           events: Number(st.dataset.events || 0), badge: badge ? badge.textContent : '',
           over: Boolean(document.querySelector('#step-label')) || st.dataset.over === '1'}
        : null;
}"""


def test_the_live_table_keeps_to_the_edge_with_fast_bots_and_catches_up(
    chromium: Chromium, tmp_path: Path
) -> None:
    """Eight bots that answer in 15 ms (about 60 cards a second, as the Python sample bots
    play on a loaded machine: a trick within one of the server's beats; the sample bots
    on a quiet one play a whole 8-seat match in 2 s, too short to watch): the live table
    stays within two tricks of what it has received, with "live" on its badge; paused,
    the badge says how far behind, and one tap on it is back at the edge; a page held up
    for two seconds (a busy phone) is back at the edge within a few."""
    lines = [
        "[tournament]",
        'name = "edge"',
        "table_size = 8",
        "matches_per_table = 3",
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 2000",
    ]
    for i in range(8):
        lines += [
            "[[bots]]",
            f'name = "r{i}"',
            f"command = {json.dumps(SLOW)}",
            f"workdir = {json.dumps(str(Path(SLOW[-1]).parent))}",
            'env = { THINK_MS = "15" }',
            f"sandbox = {{ read = [{json.dumps(str(SAMPLES / 'python'))}] }}",
        ]
    (tmp_path / "t.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.Popen(
        [*REFEREE, "tournament", str(tmp_path / "t.toml"), "--web-port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    two_tricks = 16
    try:
        assert proc.stderr is not None
        url = ""
        for line in proc.stderr:
            if "web on http://127.0.0.1:" in line:
                url = line.split("web on ", 1)[1].strip().rstrip("/")
                break
        assert url
        page = chromium.open(False)
        checked = 0
        for _ in range(3):  # a match that ends while it is watched: the next one
            running = wait_for(
                lambda: get_json(f"{url}/api/matches")["running"], 120, "a running match"
            )[0]["match_id"]
            page.goto(f"{url}/match?id={running}")
            page.wait_for_selector("#live-status[data-events], #step-label")
            assert chromium.errors == []
            # Opened on a running match: at the edge within a few seconds, and it stays.
            wait_for(
                lambda: (s := page.evaluate(LAG)) and (s["over"] or s["behind"] < two_tricks),
                3,
                "the edge",
                every=0.05,
            )
            samples = []
            for _ in range(40):
                s = page.evaluate(LAG)
                if s is None or s["over"]:
                    break
                samples.append(s)
                page.wait_for_timeout(100)
            if len(samples) < 20 or samples[-1]["events"] - samples[0]["events"] < 40:
                continue  # the match ended too soon to tell
            assert all(s["behind"] < two_tricks for s in samples), samples
            assert sum(s["live"] for s in samples) >= len(samples) * 0.9, samples
            assert all(s["badge"] == "live" for s in samples if s["live"]), samples
            # Paused: it falls behind, and the badge says so; one tap, back at the edge.
            page.click("#play")
            page.wait_for_timeout(1200)
            paused = page.evaluate(LAG)
            if paused is None or paused["over"]:
                continue
            assert not paused["live"] and paused["behind"] > 0, paused
            assert re.fullmatch(
                r"\d+ (tricks?|cards?)(, \d+ s)? behind · go live", paused["badge"]
            ), paused
            shot(page, "live-behind")
            page.click("#live-badge")
            back = page.evaluate(LAG)
            if back is None or back["over"]:
                continue
            assert back["live"] and back["behind"] < two_tricks and back["badge"] == "live", back
            # A page held up (its script busy for 2 s, as on a slow phone): the events
            # came meanwhile; within a few seconds it is at the edge again.
            page.evaluate(
                "() => { const end = performance.now() + 2000; while (performance.now() < end); }"
            )
            wait_for(
                lambda: (s := page.evaluate(LAG)) and (s["over"] or s["behind"] < two_tricks),
                3,
                "the edge after a held-up page",
                every=0.05,
            )
            shot(page, "live-edge")
            checked += 1
            break
        assert checked, "no match ran long enough to watch"
        assert axe_violations(page) == []
        assert chromium.errors == []
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def _seat_on_screen(s: dict[str, Any]) -> bool:
    """Whether the seat to play of a :data:`TO_PLAY` measure is on the screen, between
    the trick held at the top and the step bar."""
    return bool(max(0, s["feltBottom"]) - 1 <= s["top"] and s["bottom"] <= s["barTop"] + 1)


#: On a phone: the seat to play (if any) against the room the trick at the top and the
#: step bar at the bottom leave, and whether any seat's name is cut.
TO_PLAY = """() => {
    const seat = document.querySelector('.seat.to-play');
    const bar = document.getElementById('stepbar').getBoundingClientRect();
    const felt = document.querySelector('.felt').getBoundingClientRect();
    const cut = [...document.querySelectorAll('.seat .name')]
        .filter((n) => n.scrollWidth > n.clientWidth + 1).map((n) => n.textContent);
    const r = seat ? seat.getBoundingClientRect() : null;
    return {hash: location.hash, seat: seat ? Number(seat.dataset.seat) : -1,
            top: r && r.top, bottom: r && r.bottom, feltTop: felt.top,
            feltBottom: felt.bottom, barTop: bar.top, cut,
            tableAt: document.querySelector('.table-box').getBoundingClientRect().top + scrollY};
}"""


#: :data:`TO_PLAY` once the page has drawn a frame or two (or 200 ms went by).
AFTER_A_FRAME = f"""async () => {{
    await new Promise((done) => {{ requestAnimationFrame(() => requestAnimationFrame(done)); setTimeout(done, 200); }});
    return ({TO_PLAY})();
}}"""

#: The live table at its edge with a seat to play (else null): that seat scrolled to just
#: above the step bar, and paused with the bar's button, in one task of the page (no card
#: comes in between). Returns that seat and where the table is on the page.
PAUSE_AT_THE_BAR = """() => {
    const st = document.querySelector('#live-status');
    const seat = document.querySelector('.seat.to-play');
    if (!st || st.dataset.live !== '1' || st.textContent.startsWith('The match is over') || !seat) return null;
    const bar = document.getElementById('stepbar').getBoundingClientRect();
    const y = scrollY + seat.getBoundingClientRect().bottom - (bar.top - 2);
    if (y <= 0 || y > document.documentElement.scrollHeight - innerHeight) return null;
    window.scrollTo(0, y);
    if (Math.abs(seat.getBoundingClientRect().bottom - (bar.top - 2)) > 1) return null;
    document.getElementById('play').click();
    return {seat: Number(seat.dataset.seat), bottom: seat.getBoundingClientRect().bottom,
            tableAt: document.querySelector('.table-box').getBoundingClientRect().top + scrollY};
}"""

#: Whether the live table's badge has turned into a button back to the edge (or the match
#: is over: the badge stays as it was, the status line says so).
PAUSED_SHOWN = """() => Boolean(document.querySelector('button#live-badge'))
    || document.querySelector('#live-status').textContent.startsWith('The match is over')"""

#: The live table's status line's height.
STATUS_HEIGHT = "() => document.querySelector('#live-status').getBoundingClientRect().height"

#: The seat to play scrolled to just above the step bar (as far as the page goes): the
#: status line's height then, and whether the match is over.
SEAT_AT_THE_BAR = """() => {
    const seat = document.querySelector('.seat.to-play');
    const bar = document.getElementById('stepbar').getBoundingClientRect();
    window.scrollBy(0, seat.getBoundingClientRect().bottom - (bar.top - 2));
    const st = document.querySelector('#live-status');
    return {status: st.getBoundingClientRect().height, over: st.textContent.startsWith('The match is over'),
            bottom: seat.getBoundingClientRect().bottom, barTop: bar.top};
}"""


def test_on_a_phone_the_seat_to_play_is_on_screen_at_every_card_of_eight_seats(
    chromium: Chromium, folders: dict[str, Served]
) -> None:
    """Stepping through a whole round of the 8-seat match at 390×844, card by card with
    the step bar: at every position the seat to play is on the screen, between the trick
    (held at the top) and the step bar; no seat's name is cut."""
    served = folders["eight"]
    page = open_viewer(chromium, served, True, "#r1")
    seen: dict[int, int] = {}
    positions = 0
    while True:
        s = page.evaluate(TO_PLAY)
        if not s["hash"].startswith("#r1"):
            break
        positions += 1
        assert s["cut"] == [], s
        assert s["feltTop"] >= -1, s  # the trick is on the screen
        if s["seat"] >= 0:
            seen[s["seat"]] = seen.get(s["seat"], 0) + 1
            assert s["top"] >= max(0, s["feltBottom"]) - 1, s
            assert s["bottom"] <= s["barTop"] + 1, s
        if positions in (10, 60):
            shot(page, f"phone-eight-to-play-{positions}")
        page.tap("#next")
    # Every seat was to play in every position of a trick: all eight, many times.
    assert sorted(seen) == list(range(8)) and min(seen.values()) >= 7, seen
    assert positions > 100
    assert chromium.errors == []


#: The graph: its lines' last x, the position line's x, the marks listed.
GRAPH = """() => {
    const lines = [...document.querySelectorAll('#graph-svg .seat-line')];
    const xs = (l) => (l.getAttribute('points') || '').split(' ').filter(Boolean).map((p) => Number(p.split(',')[0]));
    return {lines: lines.length, lastX: Math.max(0, ...lines.flatMap(xs)),
            cursor: Number(document.querySelector('#graph-cursor').getAttribute('x1')),
            marks: [...document.querySelectorAll('#marks-list button')].map((b) => [b.textContent, Number(b.dataset.step)]),
            ticks: document.querySelectorAll('#track-marks .tick').length};
}"""


RESIZED = """() => {
    const svg = document.querySelector('#graph-svg'), b = svg.getBoundingClientRect();
    const scrubber = document.querySelector('#scrubber');
    return {width: Number(svg.getAttribute('width')), right: b.right,
            room: document.querySelector('#score-graph').getBoundingClientRect().right,
            scrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
            cursor: Number(document.querySelector('#graph-cursor').getAttribute('x1')),
            at: Number(scrubber.value), last: Number(scrubber.max)};
}"""


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desk"])
def test_the_graph_of_the_totals_jumps_where_tapped_and_marks_rounds_faults_swings(
    chromium: Chromium, folders: dict[str, Served], phone: bool
) -> None:
    served = folders["eight"]
    page = open_viewer(chromium, served, phone, "#r2t3c8")
    tap = page.tap if phone else page.click
    # The result hidden (the default): drawn up to the moment shown, no later mark.
    g = page.evaluate(GRAPH)
    assert g["lines"] == 8 and 0 < g["lastX"] <= g["cursor"] + 0.5, g
    here = page.evaluate("document.querySelector('#scrubber').value")
    assert all(at <= int(here) or text.startswith("Round ") for text, at in g["marks"]), g["marks"]
    tap("#show-result")
    g = page.evaluate(GRAPH)
    assert g["lastX"] > g["cursor"] + 100, g  # the whole match now
    texts = [t for t, _ in g["marks"]]
    rounds = [t for t in texts if re.fullmatch(r"Round \d+ ends", t)]
    record = served.record()
    assert len(rounds) == sum(1 for x in record if x["type"] == "round_end")
    faults = [t for t in texts if t.startswith("⚠ breaker: ")]
    assert len(faults) == 2, texts  # the bot broke the rule twice
    swings = [t for t in texts if t.startswith("Swing: ")]
    assert len(swings) == 3, texts
    assert g["ticks"] == len(texts)
    shot(page, f"graph-{'phone' if phone else 'desk'}")
    # A mark goes to its moment: the first fault at the card it caused.
    fault_at = next(at for t, at in g["marks"] if t.startswith("⚠ "))
    page.locator("#marks-list button", has_text="⚠ breaker").first.click()
    assert int(page.evaluate("document.querySelector('#scrubber').value")) == fault_at
    assert page.locator(".trick .fault-mark").count() == 1
    # A tap on the graph goes to the nearest moment with a total: near the right end,
    # a complete trick of the last round.
    page.locator("#score-graph").scroll_into_view_if_needed()
    box = page.locator("#graph-svg").bounding_box()
    assert box
    tap_at = {"x": box["width"] - 20, "y": box["height"] / 2}
    page.locator("#graph-svg").click(position=tap_at)
    rounds_played = sum(1 for x in record if x["type"] == "round_end")
    assert re.fullmatch(rf"#r{rounds_played}t\d+", page.evaluate(HASH)) or re.fullmatch(
        rf"#r{rounds_played}t\d+c8", page.evaluate(HASH)
    ), page.evaluate(HASH)
    # A window resized (a phone turned): the graph is drawn again at the width it has,
    # its position line where the scrubber is.
    drawn = "Number(document.querySelector('#graph-svg').getAttribute('width'))"
    was = page.evaluate(drawn)
    page.set_viewport_size({"width": 700 if phone else 600, "height": 800})
    # A function, not an expression: the page's policy refuses eval of a string.
    page.wait_for_function(f"() => {drawn} !== {was}")
    fit = page.evaluate(RESIZED)
    assert fit["right"] <= fit["room"] + 0.5 and fit["scrolls"] is False, fit
    assert (fit["width"] > was + 200) if phone else (fit["width"] < was - 200), (was, fit)
    at, last = fit["at"], fit["last"]
    assert abs(fit["cursor"] - (48 + at / last * (fit["width"] - 62))) < 1, fit
    assert page.evaluate(GRAPH)["marks"] == g["marks"]
    assert axe_violations(page) == []
    assert chromium.errors == []


def test_a_fair_play_decision_opens_at_its_moment(
    chromium: Chromium, folders: dict[str, Served]
) -> None:
    # The bot page links each weighty decision to /match?id=ID#MOMENT (docs/fairplay.md;
    # tests/test_fairplay_records.py checks the moments are the decisions'): the viewer
    # opens on that card just played, or on the round's pain choice.
    from referee.fairplay import read_decisions
    from referee.rules import card_str

    served = folders["eight"]
    decisions = read_decisions(served.out / "matches" / f"{served.match_id}.jsonl").decisions
    plays = [d for d in decisions if d.kind == "play" and d.round_index == 1]
    picks = [d for d in decisions if d.kind == "pain" and d.round_index == 1]
    page = open_viewer(chromium, served, False, f"#{plays[0].moment}")
    for d in (plays[0], plays[len(plays) // 2], plays[-1], picks[0]):
        page.evaluate(f"location.hash = '#{d.moment}'")
        until(page, f"() => document.querySelector('#trick').dataset.round === '{d.round_index}'")
        assert page.evaluate(HASH) == f"#{d.moment}"  # the address names a moment shown
        if d.kind == "play":
            trick = "() => [document.querySelector('#trick').dataset.trick, document.querySelector('#trick').dataset.card]"
            until(
                page, f"() => ({trick})()[0] === '{d.trick}' && ({trick})()[1] === '{d.card + 1}'"
            )
            last = page.eval_on_selector_all(
                "#trick .played [data-card]", "cs => cs.at(-1).dataset.card"
            )
            assert last == card_str(int(d.action))  # type: ignore[arg-type]
    assert chromium.errors == []
