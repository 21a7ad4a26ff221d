"""A hostile bot: it plays legally (the lowest card), and first tries every route it knows
to what its seat must not learn or reach. It prints one line per route to stdout (its log):

    ROUTE <name> blocked|OPEN <what it got>

and ``SEEN <text>`` lines with whatever it read, so that the test can also look for secrets
in its log. Environment (besides the referee's):

- ``HOSTILE_PATHS``: ``label=path`` items to try to list or read (the output folder, a
  record, a log, the database, another bot's folder), separated by ``:``;
- ``HOSTILE_NO_WRITE``: write nowhere (for a run without a sandbox);
- ``HOSTILE_PORTS``: TCP ports to try on 127.0.0.1 and ::1 (the referee's, a listener).

The test holds the table of routes (tests/test_hostile.py); a route added here is added
there too.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time

import botlib

#: Names a secret of the referee might hide under.
SECRET_NAMES = ("STICHELN_ADMIN_TOKEN", "PGPASSWORD", "DATABASE_URL", "GRPC_")
#: The fixed port and abstract socket every instance listens on, to find the others.
MEET_PORT = 47_613
MEET_NAME = b"\0sticheln-hostile-meeting"
MEMORY = "sticheln-hostile-memory"


def route(name: str, opened: bool, what: str) -> None:
    """Report one route."""
    print(f"ROUTE {name} {'OPEN' if opened else 'blocked'} {what[:300]!r}", flush=True)


def seen(text: str) -> None:
    """Put what was read into the log, for the test to search."""
    print(f"SEEN {text[:2000]!r}", flush=True)


def read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 16)
    except OSError:
        return None


def other_pids() -> list[int]:
    """Visible processes other than this one and the sandbox's init (pid 1)."""
    me = os.getpid()
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    return [p for p in pids if p not in (me, 1)]


def try_processes(token: str) -> None:
    pids = other_pids()
    route("list_other_pids", bool(pids), f"visible: {pids}")
    found = []
    for pid in [1, *pids, os.getppid()]:
        data = read(f"/proc/{pid}/environ")
        if data is None:
            continue
        seen(data.decode(errors="replace"))
        for item in data.split(b"\0"):
            key, _, value = item.decode(errors="replace").partition("=")
            if (key == "STICHELN_TOKEN" and value != token) or key.startswith(SECRET_NAMES):
                found.append(f"{pid}:{key}")
    route("other_environ", bool(found), f"found: {found}")
    found = []
    for pid in [1, *pids, os.getppid()]:
        data = read(f"/proc/{pid}/cmdline")
        if data is None:
            continue
        text = data.replace(b"\0", b" ").decode(errors="replace")
        seen(text)
        if "referee" in text.split("--", 1)[0] or any(n in text for n in SECRET_NAMES):
            found.append(f"{pid}:{text[:80]}")
    route("other_cmdline", bool(found), f"found: {found}")


def try_paths() -> None:
    targets = [p.partition("=") for p in os.environ.get("HOSTILE_PATHS", "").split(":") if p]
    for label, _, path in targets:
        got = None
        try:
            if os.path.isdir(path):
                got = "listed " + ",".join(sorted(os.listdir(path)))
            else:
                data = read(path)
                got = None if data is None else f"read {len(data)} bytes"
                if data is not None:
                    seen(data.decode(errors="replace"))
        except OSError as exc:
            got = None
            what = str(exc)
        else:
            what = got or "no access"
        route(f"path:{label}", got is not None, what)
    if os.environ.get("HOSTILE_NO_WRITE"):
        return
    wrote = []
    for folder in (os.getcwd(), *(path for _, _, path in targets)):
        try:
            with open(os.path.join(folder, "hostile-was-here"), "w") as f:
                f.write("x")
            wrote.append(folder)
        except OSError:
            pass
    route("write_outside_tmp", bool(wrote), f"wrote in: {wrote}")


def try_network() -> None:
    ports = [int(p) for p in os.environ.get("HOSTILE_PORTS", "").split(":") if p]
    reached = []
    for host, family in (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)):
        for port in ports:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                try:
                    s.connect((host, port))
                    reached.append(f"{host}:{port}")
                except OSError:
                    pass
    route("loopback_ports", bool(reached), f"reached: {reached}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        try:
            s.connect(("192.0.2.1", 80))  # TEST-NET-1: no answer is expected anywhere
            outside = True
        except OSError:
            outside = False
    route("outside_network", outside, "")


def _answer_with_my_id(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.sendall(botlib.PROCESS.encode())


def meet_others() -> None:
    """Listen where every instance listens (and keep listening), then look for an answer
    from another instance for a while: each answers with its process id."""
    addresses = ((socket.AF_INET, ("127.0.0.1", MEET_PORT)), (socket.AF_UNIX, MEET_NAME))
    taken = []
    for family, address in addresses:
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.bind(address)
            listener.listen(8)
        except OSError:
            listener.close()  # taken: another instance shares this network namespace
            taken.append(repr(address))
            continue
        threading.Thread(target=_answer_with_my_id, args=(listener,), daemon=True).start()
    met: set[str] = set()
    deadline = time.monotonic() + 2.0
    while not met and time.monotonic() < deadline:
        for family, address in addresses:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                try:
                    s.connect(address)
                    other = s.recv(64).decode()
                except OSError:
                    continue
                if other and other != botlib.PROCESS:
                    met.add(repr(address))
        time.sleep(0.1)
    route("other_bot", bool(met or taken), f"met: {sorted(met)}; taken: {taken}")


def try_memory() -> None:
    """Duplicate mode: look for what an earlier instance left, then leave something."""
    places = ["/tmp", os.environ.get("HOME", "/tmp"), os.getcwd(), "/dev/shm", "/var/tmp"]
    found = []
    for place in places:
        data = read(os.path.join(place, MEMORY))
        if data is not None and data.decode() != botlib.PROCESS:
            found.append(f"{place}: {data.decode()}")
    route("remember_between_instances", bool(found), f"found: {found}")
    if os.environ.get("HOSTILE_NO_WRITE"):
        return
    for place in places:
        with contextlib.suppress(OSError), open(os.path.join(place, MEMORY), "w") as f:
            f.write(botlib.PROCESS)


def try_environment() -> None:
    env = dict(os.environ)
    seen(repr(env))
    leaked = sorted(k for k in env if k.startswith(SECRET_NAMES))
    route("own_environment", bool(leaked), f"keys: {sorted(env)}")


def main() -> None:
    token = os.environ.get("STICHELN_TOKEN", "")
    print(f"ENV {sorted(os.environ)}", flush=True)
    for attempt in (try_environment, lambda: try_processes(token), try_paths, try_network):
        attempt()
    meet_others()
    try_memory()
    print("ROUTES DONE", flush=True)
    botlib.run(name="hostile")


if __name__ == "__main__":
    sys.exit(main())
