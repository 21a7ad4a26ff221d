"""A bot that dies at its ``CRASH_AT``-th request (default 3).

``CRASH_HOW=kill`` (default): it sends itself SIGKILL. ``CRASH_HOW=alloc``: it allocates
``ALLOC_MB`` megabytes, beyond its memory limit, and dies of the MemoryError.
With ``CHILD=1`` it first starts a child process (with the same arguments, so the test's
marker finds it) that would sleep for an hour: the referee must kill it too.
"""

import os
import signal
import subprocess
import sys

import botlib

from sticheln.v1 import bot_pb2

CRASH_AT = int(os.environ.get("CRASH_AT", "3"))
HOW = os.environ.get("CRASH_HOW", "kill")

if os.environ.get("CHILD") == "1":
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(3600)", *sys.argv[1:]],
        stdin=subprocess.DEVNULL,
    )


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    if n == CRASH_AT:
        if HOW == "alloc":
            hog = bytearray(int(os.environ["ALLOC_MB"]) << 20)
            hog[-1] = 1
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    await stream.write(botlib.decision(request.request_id, botlib.lowest(request)))


botlib.run(decide, name="crash")
