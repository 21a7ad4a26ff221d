"""The random sample bot, held at the start of chosen matches until the test lets it go.

``HOLD`` is a comma-separated list of ``MATCH_ID=FILE``: in match ``MATCH_ID`` the bot
answers its first request only once ``FILE`` exists (the test creates it). It takes the
sample bots' command line and needs to read FILE, so its tournament runs it unsandboxed.
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


class GatedBot(RandomBot):
    name = "gated"

    def __init__(self) -> None:
        super().__init__()
        self.gate = ""

    def on_match_start(self, start: bot_pb2.MatchStart) -> None:
        self.gate = GATES.get(start.match_id, "")

    def decide(self, request: bot_pb2.DecisionRequest) -> list[int]:
        while self.gate and not os.path.exists(self.gate):
            time.sleep(0.02)  # one stream per process: blocking is fine
        self.gate = ""
        return super().decide(request)


if __name__ == "__main__":
    run(GatedBot())
