"""The web pages in a real browser: Debian's Chromium driven by Playwright, against a real
``referee serve`` (and ``referee web``) with sample bot processes, over 127.0.0.1 only.

The standings show every bot and update after a match; the viewer steps through a
finished match and shows each trick's cards as recorded; a running match appears on the
spectator table, advances, and shows no card that was not public yet; a bot named as
markup renders as text. Every page leaves a screenshot in test-artifacts/web/.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from leaguekit import ADMIN, REFEREE, ROOT, SAMPLES, Serve, bots, finished, wait_for
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
from sticheln.v1 import league_pb2

pytestmark = pytest.mark.skipif(
    not have_chromium(), reason="needs Debian's chromium and playwright"
)

LEAGUE = "webview"
XSS = "<img src=x onerror=alert(1)>"


class Browser:
    """One Chromium page that may reach 127.0.0.1 only; it records what it was refused,
    every dialog (none may open) and every script error."""

    def __init__(self, playwright: Any) -> None:
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        self.refused: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # A refused request (a 409, say) is logged as a console error too.
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.set_default_timeout(30_000)

    def _route(self, route: Any) -> None:
        host = urllib.parse.urlsplit(route.request.url).hostname
        if host in ("127.0.0.1", "::1"):
            route.continue_()
        else:
            self.refused.append(route.request.url)
            route.abort()

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def wait_until(self, predicate: str, timeout: float = 30, what: str = "") -> None:
        """Poll a JavaScript function until it returns true (the pages' CSP forbids
        Playwright's own polling, which evaluates strings)."""
        wait_for(lambda: self.page.evaluate(predicate), timeout, what or predicate, every=0.05)

    def check_clean(self) -> None:
        assert self.refused == [], f"the pages asked for other hosts: {self.refused}"
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"
        assert self.errors == [], f"script errors: {self.errors}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = Browser(p)
        try:
            yield b
        finally:
            b.browser.close()


class League:
    def __init__(self, serve: Serve, url: str, out: Path) -> None:
        self.serve, self.url, self.out = serve, url, out

    def finished(self) -> list[dict[str, Any]]:
        return finished(self.out / "league.db", LEAGUE)

    def record(self, match_id: str) -> list[dict[str, Any]]:
        return list(read_record(self.out / "matches" / f"{match_id}.jsonl"))


@pytest.fixture(scope="module")
def league(tmp_path_factory: pytest.TempPathFactory) -> Iterator[League]:
    tmp = tmp_path_factory.mktemp("web-browser")
    table = {"name": LEAGUE, "table_size": 3, "parallel": 1}
    with web_league(tmp, table) as (serve, url), bots(serve.address, tmp) as b:
        for kind, name, think in (
            ("heuristic", "heur", 0),
            ("random", "rand", 0),
            ("slow", "slow", 120),
        ):
            b.start(kind, name, serve.register(name), think_ms=think)
        # Names are restricted in a league; a description is free text.
        serve.league.RegisterBot(
            league_pb2.RegisterBotRequest(name="described", owner=XSS, description=XSS),
            metadata=ADMIN,
            timeout=10,
        )
        lg = League(serve, url, tmp / "out")
        wait_for(lambda: len(lg.finished()) >= 1, 120, "a finished match")
        yield lg


def test_standings_show_every_bot_and_update_after_a_match(
    browser: Browser, league: League
) -> None:
    page = browser.page
    page.goto(f"{league.url}/")
    page.wait_for_selector("#standings tbody tr")
    page.evaluate("window.sameDocument = true")
    shown = page.eval_on_selector_all("#standings tbody tr", "rows => rows.map(r => r.dataset.bot)")
    assert sorted(shown) == ["heur", "rand", "slow"]
    # A bot that has not played yet is reachable from the standings.
    assert page.eval_on_selector_all("#unrated a", "as => as.map(a => a.textContent)") == [
        "described"
    ]
    count = int(page.get_attribute("#standings-meta", "data-matches") or 0)
    before = len(league.finished())
    # No reload: the page follows the league's updates by itself.
    browser.wait_until(
        f"() => Number(document.querySelector('#standings-meta').dataset.matches) > {count}",
        60,
        "the standings to count a new match",
    )
    assert page.evaluate("window.sameDocument") is True
    assert len(league.finished()) > before or count < before
    cells = page.eval_on_selector_all(
        "#standings tbody tr", "rows => rows.map(r => r.querySelector('.live-elo').textContent)"
    )
    assert all(c != "–" for c in cells)
    assert page.locator("#ratings-chart .errorbar").count() == 3
    browser.screenshot("standings")
    browser.check_clean()


def test_the_viewer_steps_through_a_finished_match_as_recorded(
    browser: Browser, league: League
) -> None:
    match_id = league.finished()[0]["match_id"]
    lines = league.record(match_id)
    seating = lines[0]["seating"]
    n = len(seating)
    page = browser.page
    page.goto(f"{league.url}/match?id={match_id}")
    page.wait_for_selector("#trick")
    assert page.text_content("#step-label") == "Round 1 · the deal"
    hands = page.eval_on_selector_all(
        ".seat [data-hand]",
        "hs => hs.map(h => [...h.querySelectorAll('[data-card]')].map(c => c.dataset.card))",
    )
    assert hands == lines[1]["hands"]
    state = """() => {
        const t = document.querySelector('#trick');
        return {round: Number(t.dataset.round), trick: Number(t.dataset.trick),
                cards: [...t.querySelectorAll('.played')].map(p => [Number(p.dataset.seat), p.querySelector('[data-card]').dataset.card]),
                won: [...t.querySelectorAll('.played')].filter(p => p.querySelector('.won')).map(p => Number(p.dataset.seat)),
                outcome: document.querySelector('#trick-outcome').textContent,
                hash: location.hash};
    }"""
    trick_number: dict[int, int] = {}
    for line in lines:
        if line["type"] == "round_start":
            if line["round"] > 0:
                page.keyboard.press("ArrowRight")  # the next round's deal
            assert page.evaluate(state)["trick"] == -1
            # The pain cards chosen face down, then revealed: each its own step.
            page.keyboard.press("ArrowRight")
            assert page.evaluate(state)["hash"] == f"#r{line['round'] + 1}pick"
            page.keyboard.press("ArrowRight")
            assert page.evaluate(state)["hash"] == f"#r{line['round'] + 1}reveal"
        if line["type"] != "trick":
            continue
        r = line["round"]
        t = trick_number[r] = trick_number.get(r, -1) + 1
        expected = [((line["leader"] + i) % n, c) for i, c in enumerate(line["cards"])]
        for c in range(1, n + 1):  # card by card
            page.keyboard.press("ArrowRight")
            shown = page.evaluate(state)
            assert (shown["round"], shown["trick"]) == (r, t)
            assert [tuple(x) for x in shown["cards"]] == expected[:c]
            assert shown["hash"] == f"#r{r + 1}t{t + 1}c{c}"
            if c < n:
                assert shown["won"] == [] and shown["outcome"].startswith("Lead suit")
        if line["winner"] >= 0:
            assert shown["won"] == [line["winner"]]
            assert shown["outcome"].startswith(f"{seating[line['winner']]} wins")
        else:
            assert shown["won"] == [] and shown["outcome"].startswith("Nobody wins")
        if t == 3 and r == 0:
            browser.screenshot("viewer")
    # The scores of every round, as recorded.
    ends = [x["scores"] for x in lines if x["type"] == "round_end"]
    rows = page.eval_on_selector_all(
        "#scores tbody tr[data-round]",
        "rs => rs.map(r => [...r.querySelectorAll('td')].map(c => c.textContent))",
    )
    assert [[int(v) for v in row[1:]] for row in rows] == ends
    # Back a card with the key, a trick with ↑, a round with the select, Home and End.
    page.keyboard.press("ArrowLeft")
    assert len(page.evaluate(state)["cards"]) == n - 1
    page.keyboard.press("ArrowUp")
    assert page.evaluate(state)["trick"] == trick_number[len(ends) - 1] - 1
    page.select_option("#round-select", "0")
    assert page.text_content("#step-label") == "Round 1 · the deal"
    page.click("#next")
    assert page.text_content("#step-label") == "Round 1 · pain cards chosen, face down"
    page.click("#next")
    page.click("#next")
    assert (
        page.text_content("#step-label")
        == f"Round 1 · trick 1 / {trick_number[0] + 1} · card 1 / {n}"
    )
    page.keyboard.press("End")
    assert page.evaluate(state)["hash"] == f"#r{len(ends)}t{trick_number[len(ends) - 1] + 1}c{n}"
    page.keyboard.press("Home")
    assert page.text_content("#step-label") == "Round 1 · the deal"
    page.click("#play")
    browser.wait_until(
        "() => document.querySelector('#step-label').textContent.includes('trick 2 ')"
    )
    page.click("#play")
    paused = page.text_content("#step-label")
    page.wait_for_timeout(1500)  # a playing viewer would have moved on by now
    assert page.text_content("#step-label") == paused
    download = page.get_attribute("#download", "href")
    assert download == f"/api/matches/{match_id}/record.jsonl"
    browser.check_clean()


def test_a_running_match_appears_on_the_spectator_table_and_advances(
    browser: Browser, league: League
) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = browser.page
    # The league's matches are short: one may end between the list and the viewer's
    # first look, so take the next, a dozen times at the most.
    for _attempt in range(12):
        running = wait_for(
            lambda: get_json(f"{league.url}/api/matches")["running"], 60, "a running match"
        )[0]["match_id"]
        page.goto(f"{league.url}/matches")
        try:
            page.wait_for_selector(f'#running tr[data-match="{running}"]', timeout=15_000)
            browser.screenshot("matches")
            page.click(f'#running tr[data-match="{running}"] a', timeout=15_000)
        except PlaywrightTimeout:
            still = [m["match_id"] for m in get_json(f"{league.url}/api/matches")["running"]]
            if running in still:
                raise  # running, and the page does not list it
            continue  # it finished (and left the live list) before the click: take the next one
        page.wait_for_selector("#live-badge, #step-label")
        if page.locator("#live-badge").count():
            break
        # It finished between the list and the click: the viewer opened; take the next one.
    else:
        raise AssertionError("no running match stayed running long enough to be opened")
    # Once the match is over the page turns into the replay by itself: the spectator's
    # status line is gone then, and what is shown is the finished record's.
    snapshot = """() => {
        const st = document.querySelector('#live-status');
        return {
            live: Boolean(st),
            events: st ? Number(st.dataset.events || 0) : -1,
            over: !st || st.dataset.over === '1',
            round: Number(document.querySelector('#trick')?.dataset.round ?? -1),
            cards: st ? [...document.querySelectorAll('#main [data-card]')].map(c => c.dataset.card) : [],
            hands: st ? document.querySelectorAll('[data-hand]').length : 0,
        };
    }"""
    page.wait_for_selector("#live-status, #step-label")
    seen: list[dict[str, Any]] = []
    first = page.evaluate(snapshot)
    # It advances: more events arrive while the page stays open.
    while True:
        s = page.evaluate(snapshot)
        seen.append(s)
        if s["over"] or s["events"] >= first["events"] + 20:
            break
        page.wait_for_timeout(50)
        assert len(seen) < 1200, "the spectator table did not advance"
    # More events came, or the match ended and the page followed it into the replay.
    assert any(s["events"] > first["events"] for s in seen) or not seen[-1]["live"] or first["over"]
    browser.screenshot("spectator")
    wait_for(lambda: running in [m["match_id"] for m in league.finished()], 60, "the match's end")
    # The table plays behind the match, at a pace one can follow: caught up with (End),
    # the match over, it turns into the replay.
    wait_for(
        lambda: (
            page.evaluate("() => Boolean(document.querySelector('#step-label'))")
            or page.keyboard.press("End")
        ),
        60,
        "the replay after the end",
        every=0.3,
    )
    # At its last card, with that position in the address.
    assert page.evaluate("document.querySelector('#scrubber').value") == page.evaluate(
        "document.querySelector('#scrubber').max"
    )
    assert re.fullmatch(r"#r\d+t\d+c\d+", page.evaluate("location.hash"))
    lines = league.record(running)
    played: dict[int, set[str]] = {}
    picks: dict[int, set[str]] = {}
    for x in lines:
        if x["type"] == "play":
            played.setdefault(x["round"], set()).add(x["card"])
        elif x["type"] == "reveal":
            picks[x["round"]] = {c for p in x["pain"] for c in p}
    for s in seen:
        if not s["live"]:
            continue
        assert s["hands"] == 0, "a hand was shown on the spectator table"
        allowed = played.get(s["round"], set()) | picks.get(s["round"], set())
        assert set(s["cards"]) <= allowed, f"cards not public yet: {set(s['cards']) - allowed}"
    browser.check_clean()


def test_bot_and_head_to_head_pages(browser: Browser, league: League) -> None:
    page = browser.page
    page.goto(f"{league.url}/head-to-head")
    page.wait_for_selector("#main[data-drawn] #matrix")
    heads = page.eval_on_selector_all("#matrix thead th a", "as => as.map(a => a.textContent)")
    assert heads == ["heur", "rand", "slow"]
    browser.screenshot("head-to-head")
    # Left open, it is drawn again when the standings are published again (the league
    # plays on): more matches shared, the cells shaded again.
    shared = "() => Number(document.querySelector('#matrix td[data-share] .diff').textContent.split('· ')[1])"
    before = page.evaluate(shared)
    browser.wait_until(
        "() => Number(document.querySelector('#main').dataset.updated || 0) >= 1", 90
    )
    browser.wait_until(f"() => ({shared})() > {before}", 60, "more matches in the matrix")
    assert page.evaluate("document.querySelector('#matrix td[data-share]').style.background") != ""
    page.goto(f"{league.url}/bot?name=heur")
    page.wait_for_selector("#main[data-drawn] #recent")
    assert page.text_content("#bot-name") == "heur"
    assert page.locator("svg[aria-label='live Elo over matches'] polyline").count() == 1
    browser.screenshot("bot")
    # A bot's page too: drawn again with its newer matches.
    played = "() => Number([...document.querySelectorAll('table.entry tr')].find((r) => r.cells[0].textContent === 'Matches').cells[1].textContent)"
    before = page.evaluate(played)
    browser.wait_until(
        "() => Number(document.querySelector('#main').dataset.updated || 0) >= 1", 90
    )
    browser.wait_until(f"() => ({played})() > {before}", 60, "more matches on the bot's page")
    page.goto(f"{league.url}/bot?name=described")
    page.wait_for_selector("#bot-description")
    assert page.text_content("#bot-description") == XSS
    # The owner (an e-mail address in a real league) is not on the public page.
    assert "Owner" not in page.inner_text("#main")
    assert page.locator("img").count() == 0
    browser.check_clean()


def test_a_bot_named_as_markup_renders_as_text(browser: Browser, tmp_path: Path) -> None:
    """A tournament with a bot named like an HTML tag, browsed with ``referee web``."""
    bot = [sys.executable, str(SAMPLES / "python" / "random_bot.py")]
    tour = tmp_path / "t.toml"
    tour.write_text(
        "\n".join(
            [
                "[tournament]",
                'name = "xss"',
                "table_size = 3",
                "matches_per_table = 1",
                "parallel = 1",
                'out = "out"',
                "[clock]",
                "decision_ms = 10000",
                *(
                    f"[[bots]]\nname = {json.dumps(name)}\ncommand = {json.dumps(bot)}\n"
                    f"workdir = {json.dumps(str(SAMPLES))}"
                    for name in (XSS, "plain", "other")
                ),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [*REFEREE, "tournament", str(tour)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with folder_web(tmp_path / "out") as url:
        page = browser.page
        match_id = get_json(f"{url}/api/matches")["finished"][0]["match_id"]
        pages = {
            "xss-standings": ("/", "#standings"),
            "xss-bot": (f"/bot?name={urllib.parse.quote(XSS)}", "#recent"),
            "xss-head-to-head": ("/head-to-head", "#matrix"),
            "xss-matches": ("/matches", "#finished"),
            "xss-viewer": (f"/match?id={match_id}", "#trick"),
        }
        for name, (path, ready) in pages.items():
            page.goto(url + path)
            page.wait_for_selector(f"#main[data-drawn] {ready}")
            assert XSS in page.inner_text("#main"), name
            assert page.locator("img").count() == 0, name
            browser.screenshot(name)
        browser.check_clean()
