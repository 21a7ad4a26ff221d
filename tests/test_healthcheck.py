"""``python -m referee.runtime.healthcheck``, the containers' HEALTHCHECK, against a real server."""

from __future__ import annotations

import asyncio
import socket
import sys

import pytest
from bots.harness import cancel_twice

from referee.match.server import SERVICE_NAME, RefereeServer
from referee.runtime.healthcheck import check

pytestmark = pytest.mark.timeout(60)


async def _healthcheck(*args: str) -> tuple[int, str, str]:
    """Run the module as the image's HEALTHCHECK does: exit status, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "referee.runtime.healthcheck",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _with_server(test: object) -> None:
    async def main() -> None:
        server = RefereeServer()
        await server.start("127.0.0.1", 0)
        try:
            await test(server)  # type: ignore[operator]
        finally:
            await server.stop(0)

    asyncio.run(main())


def test_exits_0_on_a_serving_referee() -> None:
    async def body(server: RefereeServer) -> None:
        status, out, err = await _healthcheck(server.address)
        assert (status, err) == (0, "")
        assert out.strip() == f"{server.address}: the server is SERVING"
        status, out, _ = await _healthcheck(server.address, "--service", SERVICE_NAME)
        assert status == 0
        assert "'sticheln.v1.Referee' is SERVING" in out

    _with_server(body)


def test_exits_1_with_one_line_when_a_service_is_not_serving() -> None:
    async def body(server: RefereeServer) -> None:
        await server.set_serving(SERVICE_NAME, False)
        status, out, err = await _healthcheck(server.address, "--service", SERVICE_NAME)
        assert (status, out) == (1, "")
        assert err.strip() == f"{server.address}: service 'sticheln.v1.Referee' is NOT_SERVING"
        # The whole server still serves.
        status, _, _ = await _healthcheck(server.address)
        assert status == 0

    _with_server(body)


def test_an_unknown_service_is_not_healthy() -> None:
    async def body(server: RefereeServer) -> None:
        status, _, err = await _healthcheck(server.address, "--service", "no.such.Service")
        assert status == 1
        assert "NOT_FOUND" in err and len(err.strip().splitlines()) == 1

    _with_server(body)


def test_nothing_listening_fails_within_the_timeout() -> None:
    with socket.socket() as s:  # a port that was free a moment ago and is closed now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serving, line = check(f"127.0.0.1:{port}", timeout=2)
    assert not serving
    assert line.startswith(f"127.0.0.1:{port}: health check failed: ")
    assert any(code in line for code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"))


def test_a_bad_timeout_is_a_usage_error() -> None:
    async def body(server: RefereeServer) -> None:
        status, _, err = await _healthcheck(server.address, "--timeout", "0")
        assert status == 2
        assert "--timeout: 0.0 is not allowed" in err

    _with_server(body)


def test_a_start_cancelled_at_any_point_leaves_nothing_listening() -> None:
    # SIGTERM as a server starts (a tournament's linger, just after the exports) once left
    # a gRPC server running that nobody stopped: the process hung at exit.
    async def main() -> int:
        cut = 0
        for steps in range(12):
            server = RefereeServer()
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            finished, _ = await cancel_twice(server.start("127.0.0.1", port), steps)
            if finished:
                await server.stop(0)
            else:
                cut += steps > 0  # at 0 it had not begun
            with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
                probe.connect(("127.0.0.1", port))
        return cut

    assert asyncio.run(main()) >= 2  # the sweep cut at least two starts half-way
