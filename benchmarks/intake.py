"""Bounded intake: what half-sent gRPC messages from a client with no token cost the
referee, on a started bot's private Unix socket and on a league's TCP port.

Two scenarios, each a real subprocess on this machine (Unix sockets and 127.0.0.1 only):

- ``socket``: ``referee match`` plays three test bots (``tests/bots/lowest_bot.py``,
  thinking ``SLEEP_MS`` per decision so that the match lasts) in their sandboxes; once the
  match is playing, ``--streams`` streams are opened on one bot's private socket, each
  declaring a message as large as the referee accepts and sending all of it but the last
  byte as far as flow control lets (``tests/halfsent.py``, a raw HTTP/2 client);
- ``league``: ``referee serve`` with no bot; the same streams on its TCP port.

Printed per scenario: the referee's ``VmRSS`` (/proc/PID/status) before and after (the
streams still held), the bytes the referee's flow control let through, how the streams
were ended, and (``socket``) whether the match then finished with no fault::

    python benchmarks/intake.py [--streams 200] [--connections 4] [--length BYTES]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from halfsent import HalfSender, rss_kib  # noqa: E402

from referee.match.server import TRANSPORT_LIMIT  # noqa: E402

REFEREE = [sys.executable, "-m", "referee.cli"]
BOTS = ROOT / "tests" / "bots"


def _wait(check: object, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()  # type: ignore[operator]
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def attack(address: str, streams: int, connections: int, length: int) -> list[HalfSender]:
    """``streams`` half-sent streams over ``connections`` connections, settled."""
    per = [streams // connections + (i < streams % connections) for i in range(connections)]
    senders = [HalfSender(address, n, length) for n in per if n]
    for s in senders:
        s.settled.wait(60)
    return senders


def report(name: str, pid: int, before: int, senders: list[HalfSender]) -> dict[str, object]:
    after = rss_kib(pid)
    ended: dict[str, int] = {}
    for s in senders:
        for why, n in s.tally.ended.items():
            ended[why] = ended.get(why, 0) + n
    return {
        f"{name}_rss_before_mb": round(before / 1024, 1),
        f"{name}_rss_after_mb": round(after / 1024, 1),
        f"{name}_rss_growth_mb": round((after - before) / 1024, 1),
        f"{name}_bytes_let_through_mb": round(sum(s.tally.sent for s in senders) / 2**20, 1),
        f"{name}_streams_held": sum(s.open_streams for s in senders),
        f"{name}_streams_ended": ended,
    }


def socket_scenario(args: argparse.Namespace, folder: Path) -> dict[str, object]:
    tmp = folder / "tmp"
    tmp.mkdir()
    files = []
    for name in ("ann", "ben", "cy"):
        path = folder / "bots" / f"{name}.toml"
        path.parent.mkdir(exist_ok=True)
        command = [sys.executable, "lowest_bot.py"]
        path.write_text(
            f"name = {json.dumps(name)}\ncommand = {json.dumps(command)}\n"
            f'workdir = {json.dumps(str(BOTS))}\n[env]\nSLEEP_MS = "{args.sleep_ms}"\n'
        )
        files.append(path)
    out = folder / "out"
    proc = subprocess.Popen(
        [*REFEREE, "match", "--read", str(BOTS), "--out", str(out), "--rules", "sticheln"]
        + [x for f in files for x in ("--bot", str(f))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )

    def playing() -> bool:
        records = list((out / "matches").glob("*.jsonl")) if (out / "matches").exists() else []
        return any('"type":"play"' in r.read_text() for r in records)

    _wait(playing, 60, "the match to play")
    (sock,) = _wait(lambda: sorted(tmp.glob("sticheln-sockets-*/1/referee.sock")), 10, "socket")
    before = rss_kib(proc.pid)
    senders = attack(f"unix:{sock}", args.streams, args.connections, args.length)
    figures = report("socket", proc.pid, before, senders)
    for s in senders:
        s.close()
    proc.communicate(timeout=300)
    (record,) = (out / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    figures["socket_match_finished"] = (
        proc.returncode == 0
        and lines[-1].get("reason") == "completed"
        and not [x for x in lines if x.get("type") == "fault"]
    )
    return figures


def league_scenario(args: argparse.Namespace, folder: Path) -> dict[str, object]:
    config = folder / "league.toml"
    config.write_text('[league]\nname = "intake"\nport = 0\nout = "out"\n')
    proc = subprocess.Popen(
        [*REFEREE, "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "STICHELN_ADMIN_TOKEN": "intake-benchmark-token-0123"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        address = first.rsplit(" ", 1)[1].strip()
        time.sleep(1.0)  # the league's start-up allocations settle before the baseline
        before = rss_kib(proc.pid)
        senders = attack(address, args.streams, args.connections, args.length)
        figures = report("league", proc.pid, before, senders)
        for s in senders:
            s.close()
        return figures
    finally:
        proc.terminate()
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument(
        "--length", type=int, default=TRANSPORT_LIMIT, help="the declared message length"
    )
    parser.add_argument("--sleep-ms", type=int, default=40, help="the honest bots' think time")
    parser.add_argument("--only", choices=["socket", "league"])
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="intake-bench-"))
    folder.chmod(0o755)
    try:
        figures: dict[str, object] = {"streams": args.streams, "length": args.length}
        if args.only in (None, "socket"):
            figures |= socket_scenario(args, folder)
        if args.only in (None, "league"):
            figures |= league_scenario(args, folder)
        print(" ".join(f"{k}={v}" for k, v in figures.items()))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
