"""A bot that tries to carry its hand from one seating of a duplicate deal to the next
through the host's page cache, by read timing alone (``open``, ``pread``, a clock).

Its mailbox is ``SPY_FILE``, a large file in its own folder that nobody reads: regions of
a marker page and 16 bit pages, 512 KiB apart (past the kernel's read-ahead), read
out of order. At its
first decision it times a one-byte read of each region's marker, in order:

- a region whose marker reads fast was written by an earlier seating: its bits (a fast
  page is a 1) are a 16-bit key of the hand that seating held, now an opponent's;
  printed as ``SPY read REGION KEY`` (reading them loads them: a region is read once);
- the first region whose marker reads slow is free: it writes its own hand's key there
  (the marker is loaded by its timed read; it reads the pages of its 1 bits) and stops:
  ``SPY wrote REGION KEY``.

It also times one read of every 32nd page of the largest file of its runtime it finds
(``numpy.libs``): ``SPY runtime FAST/ALL``. Then it plays the lowest card.
"""

from __future__ import annotations

import glob
import hashlib
import os
import random
import statistics
import sys
import time

import botlib

from sticheln.v1 import bot_pb2

REGIONS = 4
BITS = 16
#: Far enough apart that no read-ahead window (128 KiB here) reaches the next page.
STRIDE = 512 << 10
done = [False]


def timed(fd: int, offset: int) -> float:
    began = time.perf_counter_ns()
    os.pread(fd, 1, offset)
    return (time.perf_counter_ns() - began) / 1000


#: Where the regions begin: after one page the spy reads to know a cached read's time.
MAILBOX_START = STRIDE


def place(region: int, slot: int) -> int:
    return MAILBOX_START + (region * (BITS + 1) + slot) * STRIDE


def spy(hand: list[int]) -> None:
    key = int.from_bytes(hashlib.sha256(repr(sorted(hand)).encode()).digest()[:2], "big")
    print(f"SPY hand {key}", flush=True)
    fd = os.open(os.environ["SPY_FILE"], os.O_RDONLY)
    # A page surely cached: the mailbox's first byte, read twice (no region near it).
    os.pread(fd, 1, 0)
    fast = statistics.median(timed(fd, 0) for _ in range(9))
    cut = max(8 * fast, 25.0)
    # A read loads the page it times: each region is read once, and the first free one
    # (its marker slow) is claimed; the regions after it stay untouched.
    markers = []
    for region in range(REGIONS):
        marker = timed(fd, place(region, 0))
        markers.append(f"{marker:.0f}")
        if marker < cut:
            # Out of order: reads in a row would look sequential to read-ahead.
            order = random.sample(range(BITS), BITS)
            row = {i: timed(fd, place(region, i + 1)) for i in order}
            value = sum(1 << i for i, t in row.items() if t < cut)
            print(f"SPY read {region} {value}", flush=True)
            continue
        for i in random.sample(range(BITS), BITS):
            if key >> i & 1:
                os.pread(fd, 1, place(region, i + 1))
        print(f"SPY wrote {region} {key}", flush=True)
        break
    print(f"SPY cut {cut:.1f} us (cached {fast:.1f}); markers {' '.join(markers)}", flush=True)
    os.close(fd)
    libs = glob.glob(f"{sys.prefix}/lib/python3*/site-packages/numpy.libs/*")
    if libs:
        big = max(libs, key=os.path.getsize)
        fd = os.open(big, os.O_RDONLY)
        size = os.fstat(fd).st_size
        reads = [timed(fd, offset) for offset in range(0, size, 32 * 4096)]
        os.close(fd)
        print(f"SPY runtime {sum(t < cut for t in reads)}/{len(reads)} {big}", flush=True)


async def decide(stream: botlib.Stream, request: bot_pb2.DecisionRequest, n: int) -> None:
    if not done[0]:
        done[0] = True
        spy(list(request.view.hand))
    await botlib.answer_lowest(stream, request, n)


botlib.run(decide, name="spy")
