"""Covert channels that remain between sandboxed bots, measured in each tier.

Two bot processes, each in its own sandbox as the referee starts them (``referee.jail``:
its uid, cgroup, policy), one sending a random bit string and the other receiving it
(``benchmarks/bots/covert_agent.py``), over:

- ``cpu``: CPU contention between two seats of one table (the sender spins on every core
  in a 1 slot; the receiver counts its loop turns per slot);
- ``statfs``: the host's free disk blocks, which ``statfs`` on any bound path shows: the
  sender's output goes into its log on the host's disk (64 KiB for a 1 slot), the receiver
  reads the free blocks under ``/usr``;
- ``pagecache``: the host's page cache, which outlives both sandboxes: the sender reads
  page k of a file both may read for a 1 bit and ends; a later sandbox times its read of
  each page (a duplicate deal's later seating learning what an earlier one knew).

- ``dentries``: the host's cache of names that do not exist (negative dentries), which
  outlives both sandboxes too: the sender looks up 4 made-up names in its own folder for a
  1 bit and ends; a later sandbox times its lookups of the same names.

- ``turns``: the referee's turn order, in a real ``referee match`` (the tier's sandbox):
  one seat waits ``--delay`` ms before a card play for a 1 bit
  (``tests/bots/turn_bot.py``), another seat of the same table times, for each of its
  card plays, how long after its previous answer the request came; the record says
  which of the sender's plays fell in each gap, so each bit is checked.

For each channel and tier: bits sent, wrong bits, and the rate (bits per second of the
receiver's time, and per second less the wrong bits' share). Where runsc cannot run, the
gvisor tier is skipped with the reason::

    python benchmarks/covert.py [--bits 64] [--slot 0.1] [--tier bubblewrap --tier gvisor]
        [--channel cpu --channel statfs --channel pagecache --channel dentries --channel turns]

Measured on the 2-core development machine (root referee, Debian's 2022 runsc, load
average 11-26 from other work), ``--bits 64 --slot 0.3``:

- ``pagecache``: bubblewrap 0 wrong bits of 64, gvisor 4-10 of 64, the receiver reading
  its 64 pages in 4-12 ms: open in both tiers (docs/security.md);
- ``cpu``: bubblewrap 13-36 wrong (0-0.1 bit/s net), gvisor 22-28 wrong (0-0.2 bit/s):
  drowned by the machine's own load here;
- ``turns`` (``--slot`` is the sender's delay for a 1): at 50 ms, 0 wrong of 42 bits in
  one match in either tier (35-40 bit/s of the match's think time); at 10 ms, 0 wrong
  under bubblewrap (177 bit/s), 19 of 42 under gvisor (whose answers vary by milliseconds);
- ``dentries`` (2026-12-07, load 31, ``--bits 64``, seeds 1 and 2): bubblewrap 2 and 9
  wrong of 64, gvisor 32 and 25 wrong: open under bubblewrap, near chance in gVisor;
- ``statfs``: closed in both tiers (refused); before, 10-16 wrong bits of 32-64 at 0.1-0.3 s
  slots (0.3-1.3 bit/s net, other work writing to the same disk), in either tier.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from referee import jail  # noqa: E402
from referee.jail import gvisor, resident  # noqa: E402
from referee.jail.bots import BotSpec  # noqa: E402
from referee.jail.sandbox import Sandbox  # noqa: E402
from referee.match.pool import bot_reads, keep_resident  # noqa: E402

AGENT = REPO / "benchmarks" / "bots" / "covert_agent.py"
STRIDE = 32 * 4096


async def _run(tier: str, folder: Path, args: list[str], log: Path) -> str:
    sandbox = Sandbox(tier)
    spec = BotSpec(
        name="covert",
        command=(sys.executable, AGENT.name, *args),
        workdir=AGENT.parent,
        read=(folder,),
    )
    user = sandbox.lease_user()
    try:
        # As the referee starts a bot: its runtime's files only, and in a run that replays
        # deals, all it may read resident first (referee.jail.resident).
        policy = sandbox.policy(
            AGENT.parent, (folder,), None, user.ids if user else None, runtime=bot_reads(spec)
        )
        keep_resident(policy)
        process = await jail.start(spec, "unix:/nowhere", "-", log, policy=policy)
        await process.proc.wait()
        await process.stop()
    finally:
        if user is not None:
            user.release()
    return log.read_text(errors="replace")


def _got(text: str) -> tuple[str, float]:
    for line in text.splitlines():
        if line.startswith("REFUSED "):
            raise Refused(line.removeprefix("REFUSED "))
        if line.startswith("GOT "):
            _, bits, _, seconds, _ = line.split()
            return bits, float(seconds)
    raise RuntimeError(f"the receiver said nothing: {text[-500:]}")


class Refused(Exception):
    """The sandbox refuses what the channel needs: closed."""


def _fresh(path: Path, size: int) -> None:
    """A new file nobody has read: written, then its pages dropped (as after a boot).
    Nothing else is evicted: the channel has the page cache as any bot finds it."""
    path.write_bytes(os.urandom(size))
    path.chmod(0o644)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def turns(tier: str, bits: str, delay_ms: int, folder: Path) -> tuple[int, int, float]:
    """The turn-order channel in one match: (bits checked, wrong, seconds of play)."""
    bots = REPO / "tests" / "bots"
    files = []
    for role in ("recv", "send", "lowest"):
        script = "lowest_bot.py" if role == "lowest" else "turn_bot.py"
        path = folder / f"{tier}-{role}.toml"
        env = {"TURN_ROLE": role, "TURN_BITS": bits, "TURN_DELAY_MS": str(delay_ms)}
        lines = [f'name = "{role}"', f'command = ["{sys.executable}", "{script}"]']
        lines += [f'workdir = "{bots}"', "[env]", *(f'{k} = "{v}"' for k, v in env.items())]
        path.write_text("\n".join(lines) + "\n")
        files += ["--bot", str(path)]
    out = folder / f"{tier}-turns"
    argv = [sys.executable, "-m", "referee.cli", "match", "--sandbox", tier, "--seed", "7"]
    argv += [*files, "--rules", "sticheln", "--out", str(out), "--read", str(bots)]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)
    (log,) = (out / "logs").glob("*-recv.log")
    gaps = [float(x) for x in log.read_text().split("GAPS ")[1].split()]
    (record,) = (out / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    # For each of the receiver's plays, the sender's 1 bits played since its previous one.
    expected, sent, since = [], 0, 0
    for line in lines:
        if line.get("type") == "round_start":
            since = 0  # the round's pain choices came in between: gaps restart at them
        if line.get("type") != "play":
            continue
        if line["seat"] == 1:
            sent += 1
            since += bits[(sent - 1) % len(bits)] == "1"
        elif line["seat"] == 0:
            expected.append(since)
            since = 0
    got = [round(g / delay_ms) for g in gaps]
    wrong = sum(a != b for a, b in zip(got, expected, strict=True))
    seconds = sum(x.get("think_us", 0) for x in lines if x.get("type") == "play") / 1e6
    return sent, wrong, seconds


async def measure(tier: str, channel: str, bits: str, slot: float, folder: Path) -> str:
    logs = folder / f"{tier}-{channel}-{os.environ.get(resident.VARIABLE, '')}"
    logs.mkdir()
    if channel == "turns":
        sent, wrong, seconds = turns(tier, bits, round(slot * 1000), folder)
        return (
            f"{tier:10} {channel:9} {sent} bits, {wrong} gaps read wrong, "
            f"{sent / seconds:8.1f} bit/s (the match's think time {seconds:.2f} s)"
        )
    if channel == "pagecache":
        # A fresh file for each run: what one run's sender read stays cached.
        shared = folder / f"shared-{tier}-{os.environ[resident.VARIABLE]}.bin"
        _fresh(shared, len(bits) * STRIDE + 4096)
        await _run(tier, folder, [channel, "send", bits, "0", "0", str(shared)], logs / "s.log")
        got, seconds = _got(
            await _run(tier, folder, [channel, "recv", bits, "0", "0", str(shared)], logs / "r.log")
        )
    elif channel == "dentries":
        nonce = f"{random.getrandbits(48):x}"  # names nobody looked up
        await _run(tier, folder, [channel, "send", bits, "0", "0", nonce], logs / "s.log")
        got, seconds = _got(
            await _run(tier, folder, [channel, "recv", bits, "0", "0", nonce], logs / "r.log")
        )
    else:
        start = time.time() + (8 if tier == "gvisor" else 4)  # both started by then
        args = [channel, "{}", bits, f"{start:.3f}", str(slot)]
        sender = [a.replace("{}", "send") for a in args]
        receiver = [a.replace("{}", "recv") for a in args]
        _, text = await asyncio.gather(
            _run(tier, folder, sender, logs / "s.log"), _run(tier, folder, receiver, logs / "r.log")
        )
        got, _ = _got(text)
        seconds = slot * len(bits)
    wrong = sum(a != b for a, b in zip(got, bits, strict=True))
    p = wrong / len(bits)
    entropy = 0.0 if p in (0, 1) else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
    rate = len(bits) / max(seconds, 0.001)  # printed to the millisecond
    return (
        f"{tier:10} {channel:9} {len(bits)} bits, {wrong} wrong, "
        f"{rate:8.1f} bit/s raw, {rate * max(0.0, 1 - entropy):8.1f} bit/s net "
        f"({seconds:.3f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument(
        "--slot", type=float, default=0.1, help="seconds per bit (cpu, statfs; turns: a 1's delay)"
    )
    parser.add_argument("--tier", action="append", choices=("bubblewrap", "gvisor"))
    channels = ("cpu", "statfs", "pagecache", "dentries", "turns")
    parser.add_argument("--channel", action="append", choices=channels)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--held",
        action="append",
        choices=("yes", "no"),
        help="pagecache: with what a bot reads kept resident (yes: as a duplicate tournament "
        "runs; no: as before), or both (the default)",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    bits = "".join(rng.choice("01") for _ in range(args.bits))
    folder = Path(tempfile.mkdtemp(prefix="sticheln-covert-"))
    folder.chmod(0o755)
    try:
        for tier in args.tier or ["bubblewrap", "gvisor"]:
            if tier == "gvisor" and (why := gvisor.missing()):
                print(f"{tier:10} skipped: {why}")
                continue
            for channel in args.channel or channels:
                for held in (args.held or ["yes", "no"]) if channel == "pagecache" else ["no"]:
                    os.environ[resident.VARIABLE] = "1" if held == "yes" else "0"
                    label = f"{channel} {'held' if held == 'yes' else 'not held'}"
                    try:
                        line = asyncio.run(measure(tier, channel, bits, args.slot, folder))
                        if channel == "pagecache":
                            line = line.replace("pagecache", label, 1)
                        print(line, flush=True)
                    except Refused as exc:
                        print(f"{tier:10} {channel:9} closed: the sandbox refuses it ({exc})")
    finally:
        resident.release_all()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
