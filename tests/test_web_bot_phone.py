"""The bot page on a phone: Debian's Chromium at 390 px wide (an iPhone's CSS width)
against a real ``referee serve`` hosting bots, whose bot has two versions and a history
of submissions, one refused with a long refusal. Its Versions and Submissions tables fit
the screen: no cell runs past the right edge and the page does not scroll sideways.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from leaguekit import ADMIN, serving, write_config
from test_web_browser import Browser
from webkit import have_chromium

from sticheln.v1 import league_pb2

pytestmark = pytest.mark.skipif(
    not have_chromium(), reason="needs Debian's chromium and playwright"
)

PHONE = {"width": 390, "height": 844}
REFUSAL = (
    "check-bot: 1 of 13 scenarios failed; first short-clock: round 1, trick 3, playing "
    "its 2nd card: timeout: no answer within 1150 ms; sent nothing in time; expected 1 "
    "card to play from the hand C14 H0 H2 H6 H13 H14 D6 D11 W9 W11 W14 P0 P6 R0"
)


@pytest.fixture
def phone() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = Browser(p)
        b.context.close()
        b.context = b.browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        b.context.route("**/*", b._route)
        b.page = b.context.new_page()
        b.page.on("dialog", b._dialog)
        b.page.on("pageerror", lambda e: b.errors.append(str(e)))
        b.page.set_default_timeout(30_000)
        try:
            yield b
        finally:
            b.browser.close()


def test_the_bot_page_fits_a_phone(phone: Browser, tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "league.toml", {"name": "phone", "table_size": 3, "web_port": 0}
    )
    code = tmp_path / "code"
    config.write_text(
        config.read_text()
        + f"[hosting]\nenabled = true\nworkers = 0\ncode_dir = {json.dumps(str(code))}\n"
        + '[sandbox]\nmode = "bubblewrap"\n'
    )
    with serving(config, tmp_path / "serve.log") as serve:
        url = serve.lines.get(timeout=30).split(" ", 2)[2].strip().rstrip("/")
        serve.register("author-with-a-long-name")
        serve.league.RegisterVersion(
            league_pb2.RegisterVersionRequest(
                previous_version="author-with-a-long-name",
                description="the second version, with a description long enough to wrap",
            ),
            metadata=ADMIN,
            timeout=10,
        )
        # Submissions as the league stores them (decided ones: nothing is validated).
        with sqlite3.connect(tmp_path / "out" / "league.db") as db:
            now = time.time()
            for number, status, refusal in (
                (1, "retired", ""),
                (2, "refused", REFUSAL),
                (3, "retired", ""),
            ):
                db.execute(
                    "INSERT INTO league_submissions (bot, number, sha256, format, bot_file, "
                    "status, refusal, report, build_sha256, submitted_at, decided_at) "
                    "VALUES (?, ?, ?, 'tar.gz', 'bot.toml', ?, ?, '', '', ?, ?)",
                    ("author-with-a-long-name", number, f"{number:x}" * 64, status, refusal,
                     now, now),
                )  # fmt: skip
        page = phone.page
        page.goto(f"{url}/bot?name=author-with-a-long-name")
        page.wait_for_selector("#main[data-drawn] #submissions")
        page.wait_for_selector("#versions")
        phone.screenshot("bot-phone")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        for table in ("#versions", "#submissions"):
            cells = page.eval_on_selector_all(
                f"{table} td",
                "tds => tds.map(td => [td.getBoundingClientRect().left, "
                "td.getBoundingClientRect().right, td.textContent])",
            )
            assert cells, table
            for left, right, text in cells:
                assert left >= 0 and right <= PHONE["width"], (table, text, left, right)
        # Each cell says what it is, since the header row is not shown on a phone.
        labels = page.eval_on_selector_all(
            "#submissions tbody tr:first-child td",
            "tds => tds.map(td => getComputedStyle(td, '::before').content)",
        )
        assert labels[:4] == ['"#"', '"Status"', '"Rating (95% interval)"', '"Matches"'], labels
        assert REFUSAL in page.inner_text("#submissions")
        phone.check_clean()
