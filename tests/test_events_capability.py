"""The "events" capability: events sent as they happen instead of riding on the next message."""

from __future__ import annotations

from pathlib import Path

import pytest
from bots.harness import bot, check_finished, new_marker, read_capture, run_match

from sticheln.v1 import bot_pb2

pytestmark = pytest.mark.timeout(120)


def _play(tmp_path: Path, name: str, capabilities: str) -> list[bot_pb2.RefereeMessage]:
    marker = new_marker()
    capture = tmp_path / f"{name}.b64"
    env = {"CAPTURE": str(capture), "PICK": "lowest", "CAPABILITIES": capabilities}
    bots = [bot("recording_bot.py", marker, env=env)] + [
        bot("lowest_bot.py", marker) for _ in range(3)
    ]
    result = run_match(bots, out_dir=tmp_path / name, seed=99)
    check_finished(result)
    return read_capture(capture)


def _events(messages: list[bot_pb2.RefereeMessage]) -> list[bytes]:
    return [e.SerializeToString() for m in messages for e in m.events]


def test_events_capability_sends_each_event_as_it_happens(tmp_path: Path) -> None:
    held = _play(tmp_path, "held", "")
    live = _play(tmp_path, "live", "events,unknown-thing")
    # Granted: "events" only; an unknown capability is ignored.
    assert list(held[0].welcome.capabilities) == []
    assert list(live[0].welcome.capabilities) == ["events"]
    # The same match (same seed, same deterministic play): the same events in the same order.
    assert _events(held) == _events(live) != []
    # Held back, events ride on requests and the match end; no message is events-only.
    assert all(m.WhichOneof("kind") is not None for m in held)
    assert any(m.request.view.phase and m.events for m in held if m.HasField("request"))
    # Live, the other seats' plays arrive in events-only messages, before the next request:
    # a card-play request never carries another seat's card.
    only_events = [m for m in live if m.WhichOneof("kind") is None]
    assert only_events and all(m.events for m in only_events)
    plays = [
        m
        for m in live
        if m.HasField("request") and m.request.kind == bot_pb2.DECISION_KIND_CARD_PLAY
    ]
    assert plays
    assert not [e for m in plays for e in m.events if e.HasField("card_played")]
    assert len(live) > len(held)
