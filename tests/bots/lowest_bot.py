"""A well-behaved bot: always the lowest card(s), the same choice as the referee's fallback.

``SLEEP_MS`` makes it think that long per decision; ``CAPTURE`` records what it receives.
"""

import botlib

botlib.run(name="lowest")
