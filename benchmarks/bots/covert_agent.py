"""One end of a covert channel between two sandboxes (``benchmarks/covert.py``): it sends
or receives a bit string, one bit per time slot from a wall-clock start both ends are
given, or (the page cache) one bit per page of a shared file.

    python3 covert_agent.py CHANNEL send|recv BITS START SLOT_S [FILE]

Channels: ``cpu`` (the sender spins on every core in a 1 slot, sleeps in a 0 slot; the
receiver counts its own loop turns per slot), ``statfs`` (the sender writes 64 KiB of
output, its log on the host's disk, in a 1 slot; the receiver reads the free blocks of the
file system under ``/usr``), ``pagecache`` (the sender reads page k of FILE for a 1 bit;
the receiver, in a later sandbox, times its read of each page: a page another sandbox
read is cached, a fast read), ``dentries`` (the sender looks up 4 names that do not exist
in its own folder for a 1 bit, NONCE in their names; the receiver, in a later sandbox,
times its lookups of the same names: a name looked up before is answered from the host's
negative dentry, faster). The receiver prints ``GOT <bits>``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

STRIDE = 32 * 4096  # pages apart, past the kernel's read-ahead and fault-around windows


def wait_until(t: float) -> None:
    while (left := t - time.time()) > 0:
        time.sleep(min(left, 0.01))


def spin(until: float) -> int:
    turns = 0
    while time.time() < until:
        turns += 1
    return turns


def cpu(role: str, bits: str, start: float, slot: float) -> str:
    cores = len(os.sched_getaffinity(0))
    got = []
    for i, bit in enumerate(bits):
        begin, end = start + i * slot, start + (i + 1) * slot
        wait_until(begin)
        if role == "send":
            if bit == "1":
                workers = [threading.Thread(target=spin, args=(end,)) for _ in range(cores)]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
        else:
            got.append(spin(end - slot * 0.1))
    if role == "send":
        return ""
    print("TURNS", got, flush=True)
    cut = sorted(got)[len(got) // 2]  # about half the bits are 1: the median parts them
    return "".join("1" if n < cut else "0" for n in got)


def statfs(role: str, bits: str, start: float, slot: float) -> str:
    got = []
    chunk = "x" * 1023 + "\n"
    for i, bit in enumerate(bits):
        begin = start + i * slot
        wait_until(begin)
        if role == "send":
            if bit == "1":
                sys.stdout.write(chunk * 64)  # 64 KiB: 16 blocks of the host's disk
                sys.stdout.flush()
        else:
            before = os.statvfs("/usr").f_bfree
            wait_until(begin + slot * 0.9)
            got.append(before - os.statvfs("/usr").f_bfree)
    if role == "send":
        return ""
    print("BLOCKS", got, flush=True)
    return "".join("1" if n >= 8 else "0" for n in got)


def pagecache(role: str, bits: str, path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    if role == "send":
        for k, bit in enumerate(bits):
            if bit == "1":
                os.pread(fd, 1, k * STRIDE)
        return ""
    times = []
    for k in range(len(bits)):
        t = time.perf_counter()
        os.pread(fd, 1, k * STRIDE)
        times.append(time.perf_counter() - t)
    print("TIMES", [round(t * 1e6) for t in times], flush=True)
    ranked = sorted(times)  # about half the pages were read: a cut between the quartiles
    cut = (ranked[len(ranked) // 4] * ranked[3 * len(ranked) // 4]) ** 0.5
    return "".join("1" if t < cut else "0" for t in times)


def dentries(role: str, bits: str, nonce: str) -> str:
    def names(k: int) -> list[str]:
        return [f".nx-{nonce}-{k}-{j}" for j in range(4)]

    if role == "send":
        for k, bit in enumerate(bits):
            if bit == "1":
                for name in names(k):
                    with contextlib.suppress(OSError):
                        os.stat(name)
        return ""
    times = []
    for k in range(len(bits)):
        each = []
        for name in names(k):
            t = time.perf_counter_ns()
            try:  # noqa: SIM105 (timed: nothing but the lookup)
                os.stat(name)
            except OSError:
                pass
            each.append(time.perf_counter_ns() - t)
        times.append(sorted(each)[1])  # the second fastest of 4
    print("TIMES", times, flush=True)
    cut = sorted(times)[len(times) // 2]  # about half were looked up
    return "".join("1" if t < cut else "0" for t in times)


def main() -> None:
    channel, role, bits, start, slot = sys.argv[1:6]
    t0 = time.time()
    if channel == "cpu":
        got = cpu(role, bits, float(start), float(slot))
    elif channel == "statfs":
        try:
            got = statfs(role, bits, float(start), float(slot))
        except OSError as exc:  # the sandbox refuses it
            print(f"REFUSED {exc}", flush=True)
            return
    elif channel == "dentries":
        got = dentries(role, bits, sys.argv[6])
    else:
        got = pagecache(role, bits, sys.argv[6])
    if role == "recv":
        print(f"GOT {got} in {time.time() - t0:.3f} s", flush=True)


if __name__ == "__main__":
    main()
