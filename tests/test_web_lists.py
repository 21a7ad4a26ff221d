"""The standings, the match list and the head-to-head page on a phone and a desk, and what
the pages weigh: ``referee web`` on a finished tournament's folder (five bots, ten
matches, one bot's interval marked as the bootstrap's ``unidentified``), and a live
tournament whose pages are left open.

Without a browser: pages, scripts and documents go gzip- or deflate-compressed with an
ETag, and a client that has the body gets 304; the shipped files are linked under a
version and kept by the browser for good; ``/api/matches?after=N`` sends only what
finished since. In Chromium at 390×844 (touch) and 1280×800: what a phone shows first
and the rest behind a switch, no wrapped match id or score, winners marked, words where
a flag was, axe-core finds nothing, a skip link reaches the first step button, and
pages left open during a tournament ask only for changes. Screenshots go to
test-artifacts/web/.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from leaguekit import REFEREE, ROOT, SAMPLES, wait_for
from webkit import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    Reply,
    axe_violations,
    folder_web,
    get_json,
    have_chromium,
    small_targets,
)

from referee.web.render import fmt

PY = sys.executable
BOTS = ["heuristic", "random", "random-two", "heuristic-two", "a-bot-with-a-rather-long-name"]
UNMEASURED_BOT = "random-two"
GZIP = {"Accept-Encoding": "gzip"}
SIZES = {"phone": (390, 844, True), "desk": (1280, 800, False)}

browser_only = pytest.mark.skipif(
    not have_chromium(), reason="needs Debian's chromium and playwright"
)


def _tournament(
    tmp: Path,
    name: str,
    matches_per_table: int,
    *extra: str,
    think_ms: int = 0,
    rounds: int = 0,
) -> list[str]:
    """A round robin of the Python sample bots; with ``think_ms``, random bots that think
    that long per card (tests/bots/slow_random_bot.py), so that it lasts a while; with
    ``rounds``, matches of that many rounds (else the preset's, one per player)."""
    lines = [
        "[tournament]",
        f'name = "{name}"',
        "table_size = 4",
        f"matches_per_table = {matches_per_table}",
        "parallel = 1",
        'out = "out"',
        "[clock]",
        "decision_ms = 10000",
    ]
    for bot in BOTS:
        script = (
            SAMPLES
            / "python"
            / ("random_bot.py" if bot.startswith("random") else "heuristic_bot.py")
        )
        if think_ms:
            script = ROOT / "tests" / "bots" / "slow_random_bot.py"
        lines += [
            "[[bots]]",
            f"name = {json.dumps(bot)}",
            f"command = {json.dumps([PY, str(script)])}",
            f"workdir = {json.dumps(str(SAMPLES / 'python'))}",
            f"sandbox = {{ read = [{json.dumps(str(SAMPLES / 'python'))}, {json.dumps(str(script.parent))}] }}",
            f'env = {{ THINK_MS = "{think_ms}" }}',
        ]
    if rounds:
        lines += ["[rules]", 'preset = "sticheln"', f"rounds = {rounds}"]
    (tmp / "t.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [*REFEREE, "tournament", str(tmp / "t.toml"), *extra]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("web-lists")
    done = subprocess.run(
        _tournament(tmp, "lists", 2), capture_output=True, text=True, timeout=300, cwd=tmp
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # The bootstrap's flag for an interval it cannot measure, as ratings.json writes it.
    ratings = json.loads((tmp / "out" / "ratings.json").read_text())
    for row in ratings["standings"]:
        if row["bot"] == UNMEASURED_BOT:
            row["unidentified"] = True
    (tmp / "out" / "ratings.json").write_text(json.dumps(ratings))
    with folder_web(tmp / "out") as base:
        yield base


def fetch(url: str, **headers: str) -> Reply:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return Reply(r.status, dict(r.headers.items()), r.read())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, dict(exc.headers.items()), exc.read())


# -- without a browser -------------------------------------------------------------------------


def test_pages_and_documents_go_compressed_with_an_etag_and_304_when_unchanged(url: str) -> None:
    match_id = get_json(f"{url}/api/matches")["finished"][0]["match_id"]
    for path in ("/", "/matches", "/api/standings", f"/api/matches/{match_id}",
                 f"/api/matches/{match_id}/record.jsonl", "/static/common.js"):  # fmt: skip
        plain = fetch(url + path)
        assert plain.status == 200 and "Content-Encoding" not in plain.headers, path
        etag = plain.headers["ETag"]
        for coding, unpack in (("gzip", gzip.decompress), ("deflate", zlib.decompress)):
            packed = fetch(url + path, **{"Accept-Encoding": f"{coding}, br;q=0"})
            assert packed.headers["Content-Encoding"] == coding, path
            assert packed.headers["Vary"] == "Accept-Encoding"
            assert unpack(packed.body) == plain.body, path
            assert len(packed.body) < len(plain.body) / 2, path
            assert packed.headers["ETag"] == etag
        again = fetch(url + path, **{"If-None-Match": etag, "Accept-Encoding": "gzip"})
        assert again.status == 304 and again.body == b"", path
        assert again.headers["ETag"] == etag
        assert "Content-Security-Policy" in again.headers
        assert plain.headers["Cache-Control"] == "no-cache", path  # asked again, 304 if same
    # A finished match's document is the same bytes every time: the same tag.
    assert fetch(f"{url}/api/matches/{match_id}").headers["ETag"] == etag_of(url, match_id)
    # An error is never kept.
    missing = fetch(f"{url}/api/matches/nope")
    assert missing.status == 404 and "ETag" not in missing.headers
    # A body too small to gain goes as it is.
    state = fetch(f"{url}/api/matches/{match_id}/state", **{"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in state.headers


def etag_of(url: str, match_id: str) -> str:
    return fetch(f"{url}/api/matches/{match_id}").headers["ETag"]


def test_shipped_files_are_linked_under_a_version_and_kept_for_good(url: str) -> None:
    html = fetch(f"{url}/").body.decode()
    links = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert links and all(re.fullmatch(r"/static/[\w.-]+\?v=[0-9a-f]{12}", x) for x in links)
    version = links[0].split("=")[1]
    script = fetch(f"{url}/static/standings.js?v={version}")
    assert script.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    # The modules it imports carry the same version (a browser keeps them together).
    imports = re.findall(rb'from "(/static/[^"]+)"', script.body)
    assert f"/static/common.js?v={version}".encode() in imports, imports
    assert all(i.endswith(f".js?v={version}".encode()) for i in imports), imports
    # Without the version, or with another one, the file is asked again each time.
    for path in ("/static/standings.js", "/static/standings.js?v=000000000000"):
        assert fetch(url + path).headers["Cache-Control"] == "no-cache"
    # The version is the shipped files' own: a changed file gives another.
    shipped = resources.files("referee.web") / "static" / "standings.js"
    assert b"?v=" not in shipped.read_bytes()


def test_a_matches_page_left_open_asks_only_for_what_finished_since(url: str) -> None:
    first = get_json(f"{url}/api/matches?limit=100")["finished"]
    orders = [m["finish_order"] for m in first]
    assert orders == sorted(orders, reverse=True) and len(orders) == 10
    since = get_json(f"{url}/api/matches?limit=100&after={orders[3]}")
    assert [m["finish_order"] for m in since["finished"]] == orders[:3]
    assert since["newest"] == orders[0]
    assert since["finished"] == first[:3]
    nothing = get_json(f"{url}/api/matches?limit=100&after={orders[0]}")
    assert nothing["finished"] == [] and nothing["newest"] == orders[0]
    assert {"progress", "running", "embargoed"} <= set(nothing)
    limited = get_json(f"{url}/api/matches?limit=2&after=0")["finished"]
    assert limited == first[:2]
    for bad in ("after=-1", "after=x", "after=1&before=3"):
        reply = fetch(f"{url}/api/matches?{bad}")
        assert reply.status == 400 and "after" in reply.json()["error"], bad


def _first_update(url: str, **headers: str) -> tuple[dict[str, str], str, dict[str, Any]]:
    """The update stream's headers, its first event's id and the event, read as they
    come (gunzipped as a browser would, event by event: the stream stays open)."""
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, timeout=10) as r:
        got = dict(r.headers.items())
        unzip = zlib.decompressobj(31) if got.get("Content-Encoding") == "gzip" else None
        text = ""
        while "\ndata: " not in text or not text.endswith("\n\n"):
            chunk = r.read1(65536)
            assert chunk, f"the stream ended before its first event: {text!r}"
            text += (unzip.decompress(chunk) if unzip else chunk).decode()
    event = dict(line.split(": ", 1) for line in text.split("\n") if ": " in line)
    return got, event.get("id", ""), json.loads(event["data"])


def test_a_matches_list_left_open_takes_what_is_new_from_its_update_stream(url: str) -> None:
    first = get_json(f"{url}/api/matches?limit=100")["finished"]
    orders = [m["finish_order"] for m in first]
    rows = [[m[k] for k in ("match_id", "finish_order", "seating", "places", "totals", "faults")]
            for m in first]  # fmt: skip
    # The matches finished since the list's newest, as compact rows, with the running ones,
    # in one gzip stream flushed event by event; the event's id is the newest it carries.
    headers, id_, ev = _first_update(f"{url}/api/updates?after={orders[3]}", **GZIP)
    assert headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in headers["Vary"]
    assert ev["new_matches"] == rows[:3] and ev["running_matches"] == []
    assert id_ == str(orders[0]) == str(ev["versions"]["matches"])
    assert ev["finished"] == len(first)  # the progress as every page's stream has it
    # A browser reconnecting sends the id it had: nothing it has is sent again.
    _, _, again = _first_update(f"{url}/api/updates?after=0", **{"Last-Event-ID": id_})
    assert again["new_matches"] == []
    # A page that is not a list gets the progress alone, plain to a client without gzip.
    headers, id_, plain = _first_update(f"{url}/api/updates")
    assert "Content-Encoding" not in headers and id_ == ""
    assert "new_matches" not in plain and plain["versions"] == ev["versions"]
    reply = fetch(f"{url}/api/updates?after=x")
    assert reply.status == 400 and "after" in reply.json()["error"]


# -- in a browser ------------------------------------------------------------------------------


class Browser:
    def __init__(self, playwright: Any) -> None:
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.errors: list[str] = []

    def page(self, size: str, script: bool = True, cache: bool = False) -> Any:
        """A page in a context of its own; with ``cache``, requests to other hosts are not
        refused by a route (Playwright turns the HTTP cache off where it routes), which
        these pages never make anyway (their CSP allows only their own server)."""
        width, height, touch = SIZES[size]
        context = self.browser.new_context(
            viewport={"width": width, "height": height},
            has_touch=touch,
            is_mobile=touch,
            java_script_enabled=script,
        )
        if not cache:
            context.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if urllib.parse.urlsplit(route.request.url).hostname == "127.0.0.1"
                    else route.abort()
                ),
            )
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        return page


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = Browser(p)
        try:
            yield b
        finally:
            b.browser.close()
    assert b.errors == [], b.errors


def until(page: Any, predicate: str, what: str = "", timeout: float = 30) -> Any:
    """Poll a JavaScript function until it returns something true (the pages' CSP forbids
    Playwright's own polling, which evaluates strings)."""
    return wait_for(lambda: page.evaluate(predicate), timeout, what or predicate, every=0.05)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def sideways(page: Any) -> int:
    return int(
        page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )


VISIBLE_HEADS = """() => [...document.querySelectorAll('#standings thead th')]
    .filter(th => th.getClientRects().length).map(th => th.textContent)"""
ALL_HEADS = ["Rank", "Bot", "Rating", "95% interval", "Live Elo", "Matches", "Mean score",
             "Mean place", "Strikes"]  # fmt: skip


@browser_only
@pytest.mark.parametrize("size", SIZES)
def test_the_standings_show_a_phone_four_columns_and_the_rest_on_purpose(
    chromium: Browser, url: str, size: str
) -> None:
    page = chromium.page(size)
    page.goto(f"{url}/")
    until(page, "() => document.querySelector('#main[data-drawn] #standings')")
    phone = size == "phone"
    # Rating and Live Elo are explained where they stand, above the table.
    terms = page.eval_on_selector_all("#terms dt", "xs => xs.map(x => x.textContent)")
    assert terms == ["Rating", "Live Elo"]
    assert page.is_visible("#terms")
    # No flag where a number is read: the interval the bootstrap cannot measure says so,
    # and a note says what it means.
    text = page.inner_text("body")
    assert "unidentified" not in text.lower()
    row = page.locator(f'#standings tr[data-bot="{UNMEASURED_BOT}"] td').nth(3)
    assert row.text_content() == "not measurable"
    assert "cannot measure" in page.inner_text("#interval-note")
    if phone:
        assert page.evaluate(VISIBLE_HEADS) == ["Rank", "Bot", "Rating", "Live Elo"]
        wrap = page.evaluate(
            "(() => { const w = document.querySelector('.table-wrap');"
            " return w.scrollWidth - w.clientWidth; })()"
        )
        assert wrap <= 0, "the first columns need no swipe"
        # Measured in the page: a live refresh may draw the table (and its toggle) anew
        # between a lookup and a measure from outside.
        height = page.evaluate(
            "document.querySelector('label[for=all-columns]').getBoundingClientRect().height"
        )
        assert height >= 44
        shot(page, f"lists-standings-{size}")
        page.locator("label[for=all-columns]").tap()
        assert page.evaluate(VISIBLE_HEADS) == ALL_HEADS
        # The switch survives the page's redraw (the next update).
        page.evaluate("document.getElementById('main').removeAttribute('data-drawn')")
        page.reload()
        until(page, "() => document.querySelector('#main[data-drawn] #standings')")
    else:
        assert page.evaluate(VISIBLE_HEADS) == ALL_HEADS
        assert not page.is_visible("label[for=all-columns]")
    assert sideways(page) <= 0
    shot(page, f"lists-standings-{size}-all" if phone else f"lists-standings-{size}")
    page.context.close()


@browser_only
@pytest.mark.parametrize("size", SIZES)
def test_the_match_list_keeps_ids_and_scores_whole_and_marks_the_winners(
    chromium: Browser, url: str, size: str
) -> None:
    finished = get_json(f"{url}/api/matches?limit=100")["finished"]
    for drawn in ("server", "script"):
        page = chromium.page(size, script=drawn == "script")
        page.goto(f"{url}/matches")
        if drawn == "script":
            until(page, "() => document.querySelector('#main[data-drawn] #finished')")
        # Each id and each "(place. score)" on one line: one box each.
        lines = page.eval_on_selector_all(
            "#finished td.id a, #finished .result", "xs => xs.map(x => x.getClientRects().length)"
        )
        assert lines and set(lines) == {1}, f"{drawn}: something wraps: {lines}"
        winners = page.eval_on_selector_all(
            "#finished tr[data-match]",
            "rows => rows.map(r => [r.dataset.match, [...r.querySelectorAll('.seat-entry.winner a.bot')]"
            ".map(a => a.textContent)])",
        )
        assert winners == [
            [m["match_id"], [b for b, p in zip(m["seating"], m["places"], strict=True) if p == 1]]
            for m in finished
        ], drawn
        assert page.is_visible("#winner-key")
        assert sideways(page) <= 0
        shot(page, f"lists-matches-{size}-{drawn}")
        # A bot's latest matches too.
        page.goto(f"{url}/bot?name={BOTS[-1]}")
        if drawn == "script":
            until(page, "() => document.querySelector('#main[data-drawn] #recent')")
        ids = page.eval_on_selector_all(
            "#recent td.id a", "xs => xs.map(x => x.getClientRects().length)"
        )
        assert ids and set(ids) == {1}, f"{drawn}: an id wraps on the bot's page: {ids}"
        page.context.close()


@browser_only
@pytest.mark.parametrize("size", SIZES)
def test_head_to_head_on_a_phone_is_a_list_per_bot_and_the_matrix_on_purpose(
    chromium: Browser, url: str, size: str
) -> None:
    doc = get_json(f"{url}/api/head-to-head")
    page = chromium.page(size)
    page.goto(f"{url}/head-to-head")
    until(page, "() => document.querySelector('#main[data-drawn]')")
    if size == "phone":
        assert not page.is_visible("#matrix")
        summaries = page.locator("#h2h-list summary")
        assert summaries.count() == len(doc["bots"])
        assert summaries.first.bounding_box()["height"] >= 44
        summaries.first.tap()
        items = page.locator("#h2h-list details[open] li")
        others = [c for c in doc["cells"][0] if c]
        assert items.count() == len(others)
        first = items.first.inner_text()
        assert f"{fmt(others[0]['better_share'] * 100)}%" in first and "matches" in first
        assert sideways(page) <= 0
        shot(page, f"lists-h2h-{size}")
        page.locator("label[for=whole-matrix]").tap()
        assert page.is_visible("#matrix")
    else:
        assert page.is_visible("#matrix") and not page.is_visible("#h2h-list")
        assert not page.is_visible("label[for=whole-matrix]")
        shot(page, f"lists-h2h-{size}")
    assert sideways(page) <= 0
    page.context.close()


@browser_only
@pytest.mark.parametrize("size", SIZES)
def test_axe_finds_nothing_on_the_lists(chromium: Browser, url: str, size: str) -> None:
    page = chromium.page(size)
    found = {}
    for path in ("/", "/matches", "/head-to-head", "/bot?name=random-two"):
        page.goto(url + path)
        until(page, "() => document.querySelector('#main[data-drawn]')")
        if size == "phone" and path == "/head-to-head":
            page.locator("#h2h-list summary").first.tap()
            page.locator("label[for=whole-matrix]").tap()  # the matrix's colours too
        found[path] = axe_violations(page)
    assert all(v == [] for v in found.values()), found
    page.context.close()


@browser_only
@pytest.mark.parametrize("size", SIZES)
def test_no_target_is_under_24_px_and_no_step_control_under_44(
    chromium: Browser, url: str, size: str
) -> None:
    """Every link, button, box and fold of every page, its switches opened, is at least
    24 px square (WCAG's minimum target), and the viewer's step controls 44 px."""
    match_id = get_json(f"{url}/api/matches")["finished"][0]["match_id"]
    page = chromium.page(size)
    tap = page.tap if size == "phone" else page.click
    found = {}
    pages = ["/", "/matches", "/head-to-head", f"/bot?name={urllib.parse.quote(BOTS[-1])}"]
    pages += ["/rules", f"/match?id={match_id}#r1t2c1"]
    for path in pages:
        page.goto(url + path)
        page.wait_for_selector("#main[data-drawn], main.rules", state="attached")
        if size == "phone" and path == "/":
            tap("label[for=all-columns]")
        if size == "phone" and path == "/head-to-head":
            page.locator("#h2h-list summary").first.tap()
            tap("label[for=whole-matrix]")
        if path.startswith("/match?"):
            page.wait_for_selector("#trick")
            tap("#show-result")  # its bot links too
            steps = small_targets(page, "#controls button, #controls select", 44)
            found[f"{path} step controls"] = steps
        found[path] = small_targets(page)
    shot(page, f"lists-targets-{size}")
    assert all(v == [] for v in found.values()), found
    assert chromium.errors == []
    page.context.close()


@browser_only
@pytest.mark.parametrize("size", SIZES)
def test_a_skip_link_leads_past_the_links_to_the_first_step_button(
    chromium: Browser, url: str, size: str
) -> None:
    match_id = get_json(f"{url}/api/matches")["finished"][0]["match_id"]
    page = chromium.page(size)
    page.goto(f"{url}/match?id={match_id}#r1t2c1")
    until(page, "() => document.querySelector('.controls button')")
    before = page.evaluate(
        """() => { const first = document.querySelector('.controls button');
        return [...document.querySelectorAll('a[href], button')].filter(
            x => x.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING).length; }"""
    )
    assert before >= 5, "the page has links before the step buttons (so a skip link helps)"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    assert page.is_visible("a.skip")
    assert page.inner_text("a.skip") == "Skip to the step buttons"
    page.keyboard.press("Enter")
    first_button = page.evaluate("document.querySelector('.controls button').id")
    assert page.evaluate("document.activeElement.id") == first_button
    assert page.evaluate("location.hash") == "#r1t2c1", "the viewer's position stays"
    # Elsewhere it leads to the content.
    page.goto(f"{url}/matches")
    page.keyboard.press("Tab")
    assert page.inner_text("a.skip") == "Skip to the content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    page.context.close()


@browser_only
def test_pages_left_open_during_a_tournament_ask_only_for_changes(
    chromium: Browser, tmp_path: Path
) -> None:
    # 40 matches of two rounds, of bots that think 10 ms a card (a second or so a match,
    # as a loaded machine's): the update stream sends at most every 5 s, so the tournament
    # must run a while beside the open pages, on a quiet machine too. (Two rounds, not the
    # preset's four, at twice the thinking: as long a run for half the decisions' CPU.)
    cmd = _tournament(tmp_path, "open", 8, "--web-port", "0", think_ms=10, rounds=2)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert proc.stderr is not None
        line = ""
        while not line.startswith("web on "):
            line = proc.stderr.readline()
            assert line, "the tournament ended without printing its web address"
        base = line.split(" ", 2)[2].strip().rstrip("/")
        pages = {}
        asked: dict[str, list[tuple[str, str | None, int]]] = {"matches": [], "standings": []}
        streams: list[str] = []
        for name, path in (("matches", "/matches"), ("standings", "/")):
            page = chromium.page("phone", cache=True)
            page.on(
                "requestfinished",
                lambda r, into=asked[name]: (
                    into.append(
                        (r.url, r.all_headers().get("if-none-match"), r.sizes()["responseBodySize"])
                    )
                    if "/api/" in r.url and "/api/updates" not in r.url
                    else None
                ),
            )
            if name == "matches":
                page.on(
                    "request", lambda r: streams.append(r.url) if "/api/updates" in r.url else None
                )
            page.goto(base + path)
            pages[name] = page
        matches = pages["matches"]
        until(
            matches,
            # (its stream sends at most every 5 s: the last few may finish after its last event)
            "() => document.querySelectorAll('#finished tr[data-match]').length >= 10",
            "ten matches on the open page",
            timeout=240,
        )
        assert proc.wait(timeout=240) == 0
        # (The server stops with the tournament: the last few may not have reached it.)
        shown = matches.eval_on_selector_all(
            "#finished tr[data-match]", "xs => xs.map(x => x.dataset.match)"
        )
        # One at a time, so finished in schedule order: the page holds the first ones
        # to finish, newest first, none twice and none left out.
        played = sorted(p.stem for p in (tmp_path / "out" / "matches").glob("*.jsonl"))
        assert len(played) == 40
        assert shown == played[: len(shown)][::-1]
        # After its first load the list asked nothing: its update stream brought what
        # finished since the newest it had drawn.
        lists = [u for u, _, _ in asked["matches"] if "/api/matches?" in u]
        assert len(lists) == 1 and "after=" not in lists[0], lists
        assert streams and all("/api/updates?after=" in u for u in streams), streams
        # The standings were asked again only when the update stream said they were
        # published again: every ask brought a new document, none a 304 for nothing; the
        # bots, which did not change, were not asked again.
        standings = [(tag, n) for u, tag, n in asked["standings"] if "/api/standings" in u]
        bots = [(tag, n) for u, tag, n in asked["standings"] if "/api/bots" in u]
        assert len(standings) >= 2, standings
        assert all(tag and n > 0 for tag, n in standings[1:]), standings
        assert len(bots) == 1, bots  # a tournament's bots do not change: asked once
        assert not any("/api/info" in u for u, _, _ in asked["standings"][1:])
        for page in pages.values():
            page.context.close()
        # The pages' update streams, cut when the tournament's server stopped.
        chromium.errors[:] = [e for e in chromium.errors if "ERR_CONNECTION_REFUSED" not in e]
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)


def test_numbers_drawn_by_the_server_are_those_the_pages_javascript_draws() -> None:
    # A page is drawn by the server, then redrawn live by its JavaScript: both must round
    # alike, or a share of 12.5% reads 12% and then 13%. JavaScript's toFixed is asked.
    import shutil

    from referee.web.render import signed

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to ask what JavaScript writes")
    values = [(12.5, 0), (0.25, 1), (-2.5, 0), (2.675, 2), (0.35, 1), (-0.4, 0), (1.5, 0)]
    values += [(x / 8, d) for x in range(-40, 41) for d in (0, 1, 2)]
    script = f"for (const [x, d] of {json.dumps(values)}) console.log(x.toFixed(d));"
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    javascript = done.stdout.split()
    assert [fmt(x, d) for x, d in values] == javascript
    assert [signed(x, d) for x, d in values] == [
        f"+{text}" if x > 0 else text for (x, _), text in zip(values, javascript, strict=True)
    ]
