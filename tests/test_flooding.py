"""A bot cannot flood the referee: a message over the 16 KiB limit ends its stream with
RESOURCE_EXHAUSTED and a recorded cause; a seat adds a bounded number of fault lines to
the record and the log, and the rest only as counts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from bots.harness import (
    assert_no_processes,
    bot,
    check_finished,
    collect_reports,
    new_marker,
    record_faults,
    run_match,
)

from referee.match import server
from referee.match.runner import FAULT_LINES_PER_SEAT, Clock
from referee.match.server import MESSAGE_LIMIT
from referee.rules import preset

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


@pytest.mark.parametrize("size", [2 * MESSAGE_LIMIT, MESSAGE_LIMIT + 1])
def test_a_message_over_the_limit_forfeits_the_seat_and_says_so(
    size: int, tmp_path: Path, marker: str
) -> None:
    report = tmp_path / "report"
    flood = bot(
        "flood_bot.py", marker, env={"MODE": "big", "BIG_BYTES": str(size), "REPORT": str(report)}
    )
    result = run_match(
        [flood, bot("lowest_bot.py", marker), bot("lowest_bot.py", marker, name="lowest2")],
        preset("sticheln", rounds=1),
        out_dir=tmp_path,  # the harness's ROOMY clock: the honest seats are never late
    )
    lines = check_finished(result)
    (fault,) = record_faults(lines, 0)
    assert fault["reason"] == "disconnect" and fault["forfeited"]
    assert "over the 16 KiB limit (16,384 bytes)" in fault["detail"]
    assert "the bot sent a message of " in fault["detail"]
    sent = int(fault["detail"].split("message of ")[1].split(" bytes")[0].replace(",", ""))
    assert size < sent <= size + 12  # the padding and a few bytes of framing around it
    collect_reports(tmp_path)
    status = report.read_text()
    assert status.startswith("RESOURCE_EXHAUSTED ")
    assert "over the 16 KiB limit" in status
    assert result.seats[0].forfeited


def test_a_flooding_seat_adds_a_bounded_record_and_log_and_one_summary(
    tmp_path: Path, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stream sending more than UNSOLICITED_LIMIT messages between two requests is cut
    # (tests/test_redteam.py); lifted here, so that the flood reaches the record's cap of
    # fault lines, which a seat can also reach over many requests.
    monkeypatch.setattr(server, "UNSOLICITED_LIMIT", 1_000_000)
    flood = bot("flood_bot.py", marker, env={"MODE": "stale", "STALE": "2000", "AFTER": "1000"})
    with structlog.testing.capture_logs() as logs:
        result = run_match(
            [flood, bot("lowest_bot.py", marker), bot("lowest_bot.py", marker, name="lowest2")],
            preset("sticheln", rounds=1),
            out_dir=tmp_path,
            clock=Clock(decision_ms=10_000, startup_ms=30_000),
        )
    lines = check_finished(result)
    faults = record_faults(lines, 0)
    # The first faults one by one: the stale answers up to the cap, then the forfeit.
    assert [f["reason"] for f in faults] == ["stale_request_id"] * FAULT_LINES_PER_SEAT + [
        "malformed_message"
    ]
    assert faults[-1]["strikes"] == 3 and faults[-1]["forfeited"]
    assert max(f["strikes"] for f in faults) == 3  # a forfeited seat's garbage adds no strike
    (dropped,) = [x for x in lines if x["type"] == "faults_dropped"]
    assert dropped["seat"] == 0
    assert dropped["counts"]["stale_request_id"] == 2000 - FAULT_LINES_PER_SEAT
    # The two strikes before the forfeit, and whatever came after it before the end.
    assert dropped["counts"]["malformed_message"] >= 2
    assert dropped["total"] == sum(dropped["counts"].values())
    assert lines[-2] == dropped  # the summary comes just before the end line
    assert result.record_path.stat().st_size < 40_000
    seat_logs = [e for e in logs if e.get("seat") == 0]
    assert sum(e["event"] == "fault" for e in seat_logs) == FAULT_LINES_PER_SEAT + 1
    assert [e["total"] for e in seat_logs if e["event"] == "faults_dropped"] == [dropped["total"]]
