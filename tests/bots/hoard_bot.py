"""A bot that plays (the lowest card) and, once its stream is open, opens ``HOARD``
more connections to its referee socket and holds them: each costs the referee a
descriptor, which every other seat's start needs. ``HOARD_DELAY`` seconds after its
first decision request (its handshake done, its match under way: not during a start
check, however slow the machine) it opens them, says how many, then watches them for 5 s
at most and says how many the referee left open:

    HOARD opened N
    HOARD alive M

The referee closes a socket that holds too many connections (its bot's streams end with
it; ``Intake.socket_connections``).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

import botlib

from sticheln.v1 import bot_pb2

#: Set once the first decision request has come.
STARTED = threading.Event()


def alive(held: list[socket.socket]) -> int:
    """Connections the referee has not closed (a closed one reads as end of file)."""
    count = 0
    for s in held:
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b"":
                count += 1
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count


def hoard() -> None:
    time.sleep(float(os.environ.get("HOARD_DELAY", "0")))
    path = os.environ["STICHELN_REFEREE"].removeprefix("unix:")
    held = []
    for _ in range(int(os.environ.get("HOARD", "300"))):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
        except OSError:
            s.close()
            break
        held.append(s)
    # One write, its newline with it: gRPC's own log lines share the file (stderr).
    sys.stdout.write(f"HOARD opened {len(held)}\n")
    sys.stdout.flush()
    deadline = time.monotonic() + 5
    while (left := alive(held)) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"HOARD alive {left}", flush=True)


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    """Answer the lowest cards; at the first request, start hoarding."""
    if not STARTED.is_set():
        STARTED.set()
        threading.Thread(target=hoard, daemon=True).start()
    await botlib.answer_lowest(stream, request, n)


def main() -> None:
    try:
        botlib.run(decide, name="hoard")
    except Exception as exc:  # its socket was closed under it: wait for the report
        print(f"stream ended: {type(exc).__name__}", flush=True)
    time.sleep(4)


if __name__ == "__main__":
    main()
