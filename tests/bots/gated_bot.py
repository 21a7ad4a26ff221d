"""The random sample bot, held at the start of chosen matches until the test lets it go.

``HOLD`` is a comma-separated list of ``INDEX=FILE``: in the tournament's match
``INDEX`` (from 0; its matches are played one at a time) the bot in seat 0 answers its first
request only once ``FILE`` exists (the test creates it). A bot is not told the
tournament's match numbers (``MatchStart.match_id`` is random), so the seat-0 bots count
the matches in ``STARTS``, a file they append a line to at every match start. It takes the
sample bots' command line and reads and writes files of the test's, so its tournament runs
it unsandboxed.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_bots" / "python"))

from random_bot import RandomBot
from sticheln_bot import run

from sticheln.v1 import bot_pb2

GATES = dict(item.split("=", 1) for item in os.environ.get("HOLD", "").split(",") if "=" in item)
STARTS = os.environ.get("STARTS", "")


class GatedBot(RandomBot):
    name = "gated"

    def __init__(self) -> None:
        super().__init__()
        self.gate = ""

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        self.gate = ""
        if start.seat == 0 and STARTS:
            with open(STARTS, "a+", encoding="utf-8") as starts:
                starts.write(f"{start.match_id}\n")
                starts.seek(0)
                index = len(starts.read().splitlines()) - 1
            self.gate = GATES.get(str(index), "")

    def decide(self, request: bot_pb2.DecisionRequest) -> list[int]:
        while self.gate and not os.path.exists(self.gate):
            time.sleep(0.02)  # one stream per process: blocking is fine
        self.gate = ""
        return super().decide(request)


if __name__ == "__main__":
    run(GatedBot())
