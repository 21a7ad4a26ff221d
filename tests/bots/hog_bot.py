"""A bot that plays the lowest cards while its children take what they can, as ``HOG`` says
(several modes joined by ``+``):

- ``forkbomb``: a child forks children that sleep, up to ``FORKS`` (default 2000), until
  the kernel refuses ``REFUSALS`` (default 50) forks in a row (it says how many it had
  at each first refusal);
- ``memory``: ``CHILDREN`` (default 4) children write ``HOLD_MB`` (default 300) MiB each
  and hold it;
- ``cpu``: ``SPINNERS`` (default 64) children spin, from the first decision request on
  (after the handshake, so that the seat is in the match while they spin);
- ``flood``: a child writes ``FLOOD_MB`` (default 300) MiB to stdout as fast as it can;
- ``fallocate``: reserves 2 GiB on its stdout, then in a file in ``/tmp``.

The other hogs start before the bot imports gRPC, so that what stops them is the bot's
bound as a whole, not a limit of one large process; with ``HOG_AT=decision`` all of them
start at the first decision request instead (the bot is then in the match while they
run). What they got goes to the file ``HOG_REPORT`` (through the log, see botlib): ``forked N``, ``held PID MiB``, ``fallocate WHERE: RESULT``.
With ``THINK_CPU_MS``, every decision first spends that much CPU time (an honest bot that
searches, and needs its share of the machine to answer in time). Command-line arguments
are ignored (tests put a marker there).
"""

import os
import select
import sys
import time

HOG = [m for m in os.environ.get("HOG", "").split("+") if m]
REPORT = os.environ.get("HOG_REPORT", "")


def say(text: str) -> None:
    """Tell the test (the same line botlib.tell writes)."""
    if REPORT:
        os.write(1, f"@a {REPORT} {text}\n".encode())


def child(work: object) -> None:
    """Run ``work()`` in a child process that never returns here."""
    try:
        pid = os.fork()
    except OSError as exc:
        say(f"fork refused: {exc.strerror}")
        return
    if pid == 0:
        try:
            work()  # type: ignore[operator]
        finally:
            os._exit(0)


def forkbomb(told: int) -> None:
    """Fork until refused; say how many at the first refusal, then write a byte to ``told``."""
    forked = refused = 0
    limit = int(os.environ.get("FORKS", "2000"))
    while forked < limit and refused < int(os.environ.get("REFUSALS", "50")):
        try:
            pid = os.fork()
        except OSError:
            if not refused:
                say(f"forked {forked}")  # at the first refusal: the bot may end soon
                os.write(told, b"f")
            refused += 1
            time.sleep(0.001)
            continue
        if pid == 0:
            while True:
                time.sleep(3600)
        forked += 1
        refused = 0
    if forked == limit:
        say(f"forked {forked}")
        os.write(told, b"f")
    while True:
        time.sleep(3600)


def bomb() -> None:
    """The fork bomb, in a child; the bot goes on once the bomb has said how far it got (or
    after 60 s): the bot's own threads, started next, find no process left either, and a
    bot that dies of it takes its whole sandbox with it, the bomb and its word too."""
    said, told = os.pipe()
    child(lambda: forkbomb(told))
    os.close(told)
    wait_for_bytes(said, 1)


def hold(done: int) -> None:
    chunks = []
    for _ in range(int(os.environ.get("HOLD_MB", "300")) // 10):
        chunks.append(b"\x01" * (10 << 20))  # written, so really held
    say(f"held {os.getpid()} {len(chunks) * 10}")
    os.write(done, b"h")
    while True:
        time.sleep(3600)


def holders() -> None:
    """``CHILDREN`` children that each hold ``HOLD_MB``; the bot goes on only once they all
    hold it (or after 60 s), so that the match cannot end before its bound has acted."""
    count = int(os.environ.get("CHILDREN", "4"))
    ready, done = os.pipe()
    for _ in range(count):
        child(lambda: hold(done))
    os.close(done)
    wait_for_bytes(ready, count)


def wait_for_bytes(ready: int, count: int) -> None:
    """Read ``count`` bytes from the pipe ``ready``, one per child that has done its part,
    for 60 s at most or until every writer has ended; then close it."""
    deadline = time.monotonic() + 60
    got = 0
    while got < count and time.monotonic() < deadline:
        if not select.select([ready], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        chunk = os.read(ready, count)
        if not chunk:
            break  # every writer has ended
        got += len(chunk)
    os.close(ready)


def spin() -> None:
    while True:
        pass


def spinners() -> None:
    for _ in range(int(os.environ.get("SPINNERS", "64"))):
        child(spin)


def flood() -> None:
    block = b"x" * 65535 + b"\n"
    for _ in range(int(os.environ.get("FLOOD_MB", "300")) * 16):
        os.write(1, block)


def fallocate() -> None:
    for where, fd in (("stdout", 1), ("tmp", os.open("/tmp/big", os.O_CREAT | os.O_RDWR, 0o600))):
        try:
            os.posix_fallocate(fd, 0, 2 << 30)
            result = "reserved"
        except OSError as exc:
            result = f"refused ({exc.strerror})"
        say(f"fallocate {where}: {result}")


def hogs(at: str) -> None:
    """Start the hogs due ``at`` "start" (before gRPC) or at the first "decision"."""
    late = os.environ.get("HOG_AT", "start") == "decision"
    # The spinners first: a fork bomb started with them would take their places.
    starts = {
        "cpu": spinners,
        "forkbomb": bomb,
        "memory": holders,
        "flood": lambda: child(flood),
        "fallocate": fallocate,
    }
    for mode, start in starts.items():
        due = "decision" if late or mode == "cpu" else "start"
        if mode in HOG and due == at:
            start()


# The hogs due at the first decision are started by a child forked now, before gRPC has
# threads (forking a threaded process is unsafe): it waits for a byte on a pipe.
_go_read, _go_write = os.pipe()
if os.fork() == 0:
    os.close(_go_write)
    if os.read(_go_read, 1):
        hogs("decision")
    while True:
        time.sleep(3600)
os.close(_go_read)
hogs("start")

sys.stdout.flush()
import botlib  # noqa: E402 - after the hogs have started, see the docstring

THINK_CPU_MS = int(os.environ.get("THINK_CPU_MS", "0"))


async def think_then_lowest(stream: botlib.Stream, request: object, n: int) -> None:
    """Spend ``THINK_CPU_MS`` of CPU time (a bot that searches), then the lowest card(s);
    the spinners start at the first request."""
    if n == 1:
        os.write(_go_write, b"!")
    end = time.process_time() + THINK_CPU_MS / 1000
    while time.process_time() < end:
        pass
    await botlib.answer_lowest(stream, request, n)  # type: ignore[arg-type]


botlib.run(think_then_lowest, name="hog")
