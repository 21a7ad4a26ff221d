"""The random sample bot (sample_bots/python/random_bot.py), thinking ``THINK_MS`` per card.

It takes the sample bots' command line (``--referee``, ``--token``, ``--name``,
``--seats``); the pause makes its matches last long enough for a test to stop something
in the middle of one.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_bots" / "python"))

from random_bot import RandomBot
from sticheln_bot import PlainView, run

THINK_S = int(os.environ.get("THINK_MS", "0")) / 1000


class SlowRandomBot(RandomBot):
    name = "slow-random"

    def choose_card(self, view: PlainView) -> int:
        time.sleep(THINK_S)  # one stream per process in the tests: blocking is fine
        return super().choose_card(view)


if __name__ == "__main__":
    run(SlowRandomBot())
