"""A bot that plays well but does not exit when its streams end: it lingers.

After every stream has ended (status OK) it keeps running for ``LINGER_S`` seconds
(default 60), as a bot that forgot to exit would; then it exits with ``EXIT_STATUS``
(default 0). ``LINGER_S=0`` and ``EXIT_STATUS=3`` make a bot that exits at once, but with
a failure status.
"""

import os
import time

import botlib

botlib.run(name="lingering")
time.sleep(float(os.environ.get("LINGER_S", "60")))
raise SystemExit(int(os.environ.get("EXIT_STATUS", "0")))
