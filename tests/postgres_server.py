"""A throwaway PostgreSQL server on loopback for the tests (Debian's ``postgresql`` package).

:class:`PostgresServer` runs ``initdb`` in a temporary directory and starts ``postgres``
listening on 127.0.0.1 only, on a free port, with trust authentication for local
connections; :meth:`PostgresServer.create_database` gives each test its own database.
Running as root, the server runs as the ``postgres`` user (PostgreSQL refuses root).

The server has a session of its own (a Ctrl-C on the terminal does not reach it), and a
guardian: a small process, also in a session of its own, that waits for its pipe from the
test process to close. The kernel closes it however the test process ends, Ctrl-C, or a
SIGKILL from pytest-xdist when a worker's teardown takes longer than xdist waits; the
guardian then stops the server (immediate shutdown) and removes its folder, so that an
interrupted test run leaves no cluster behind. :meth:`PostgresServer.stop` does the same
at once and lets the guardian go.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import psycopg


class PostgresMissing(RuntimeError):
    """The server binaries are not installed."""


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PostgresMissing(
        "PostgreSQL's initdb is not installed: install Debian's postgresql package "
        "(scripts/test.sh does)"
    )


#: The guardian's whole program (``python -I -S -c``: it imports nothing of the tests).
#: Arguments: the server's folder, then the command that stops it.
GUARDIAN = """
import os, shutil, signal, subprocess, sys
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
sys.stdin.buffer.read()
root, stop = sys.argv[1], sys.argv[2:]
pidfile = os.path.join(root, "data", "postmaster.pid")
if os.path.exists(pidfile):
    try:
        subprocess.run(stop, capture_output=True, timeout=60, cwd=root)
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open(pidfile) as f:
            os.kill(int(f.readline()), signal.SIGKILL)
    except (OSError, ValueError):
        pass
shutil.rmtree(root, ignore_errors=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One server; ``start()`` then ``stop()`` (or use it as a context manager)."""

    def __init__(self) -> None:
        self.bindir = _bindir()
        self.root = Path(tempfile.mkdtemp(prefix="sticheln-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        stop = [*self._as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "stop", "-m"]
        self.guardian = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", GUARDIAN, str(self.root), *stop, "immediate"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _run(self, *cmd: str) -> None:
        subprocess.run(
            [*self._as, *cmd], check=True, capture_output=True, timeout=120, cwd=self.root
        )

    def start(self) -> PostgresServer:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "--encoding=UTF8",
        )
        log = open(self.root / "server.log", "wb")  # noqa: SIM115 - the server's lifetime
        self.proc = subprocess.Popen(
            [
                *self._as,
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                str(self.root),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=100",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return self
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    text = (self.root / "server.log").read_text(errors="replace")
                    self.stop()
                    raise RuntimeError(f"PostgreSQL did not start:\n{text}") from None
                time.sleep(0.1)  # polling for the server to accept connections

    def url(self, database: str) -> str:
        """The URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new, empty database; its URL."""
        with psycopg.connect(self.url("postgres"), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:  # fast shutdown: clients are disconnected
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "stop", "-m", "fast")
                self.proc.wait(timeout=30)
            except (subprocess.SubprocessError, OSError):
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)
        if self.guardian.stdin is not None and not self.guardian.stdin.closed:
            self.guardian.stdin.close()  # nothing is left for it to do
            self.guardian.wait(timeout=60)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def with_password(url: str, password: str) -> str:
    """``url`` with ``password`` (the test server trusts loopback: any password works), to
    check that no message or log shows it."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.replace("postgres@", f"postgres:{password}@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def database_of(url: str) -> str:
    """The database's name in ``url``."""
    return urllib.parse.urlsplit(url).path.lstrip("/")


def end_sessions(con: psycopg.Connection, url: str) -> int:
    """End every session on ``url``'s database but ``con``'s, waiting until each is gone;
    how many were ended (a session that ends by itself meanwhile is not counted)."""
    rows = con.execute(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
        "WHERE pid <> pg_backend_pid() AND datname = %s",
        (database_of(url),),
    ).fetchall()
    return sum(1 for (ok,) in rows if ok)
