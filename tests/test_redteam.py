"""Routes tried beyond issue 32's list (docs/security.md, "What was tried beyond the
reported routes"), each in both tiers where it applies: a bot that hoards connections to
its referee socket loses its socket, not the referee its descriptors.

Routes a single bot tries on its own (a POSIX message queue, a file's access time, the
host's free blocks through ``statfs``, the socket folder's name, the page cache's read
timing) are in the hostile bot (tests/test_hostile.py); the channels that remain are
measured by ``benchmarks/covert.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bots.harness import BOTS_DIR, READ_BOTS

from referee.jail import gvisor
from referee.match.server import Intake, unix_connections

pytestmark = pytest.mark.timeout(180)

TIERS = [
    "bubblewrap",
    pytest.param(
        "gvisor",
        marks=pytest.mark.skipif(bool(gvisor.missing()), reason=gvisor.missing() or "-"),
    ),
]


def _bot_file(folder: Path, name: str, script: str, env: dict[str, str]) -> Path:
    path = folder / f"{name}.toml"
    lines = [
        f"name = {json.dumps(name)}",
        f"command = {json.dumps([sys.executable, script])}",
        f"workdir = {json.dumps(str(BOTS_DIR))}",
        "[env]",
        *(f"{k} = {json.dumps(v)}" for k, v in env.items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("tier", TIERS)
def test_a_bot_hoarding_connections_to_its_socket_loses_the_socket(
    tmp_path: Path, tier: str
) -> None:
    """Each connection to a bot's socket costs the referee a descriptor, and gRPC accepts
    them without bound: a bot that held 19,800 took every descriptor the referee had
    (every other seat's start then failed). The referee closes the socket of a bot that
    holds more than its bound: the hoarder's connections and streams end, the other seats
    play the match to its end."""
    hoard = _bot_file(
        tmp_path, "hoard", "hoard_bot.py", {"HOARD": "400", "HOARD_DELAY": "0.5", "SLEEP_MS": "150"}
    )
    lowest = _bot_file(tmp_path, "lowest", "lowest_bot.py", {})
    out = tmp_path / "out"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "referee.cli", "match", "--sandbox", tier),
            *("--rules", "sticheln", "--out", str(out), *READ_BOTS),
            *("--bot", str(hoard), "--bot", str(lowest), "--bot", str(lowest)),
        ],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (log,) = (out / "logs").glob("*-hoard.log")
    text = log.read_text()
    opened = re.search(r"^HOARD opened (\d+)$", text, re.MULTILINE)
    assert opened, text[-2000:]
    assert int(opened.group(1)) > Intake().socket_connections, "the bot could not even try"
    # The referee's word (the bot is stopped once its stream has ended, often before it
    # sees its connections closed; if it did, none was left).
    assert "connections to its socket (at most" in text, text[-2000:]
    assert not re.search(r"^HOARD alive [1-9]", text, re.MULTILINE), text[-2000:]
    (record,) = (out / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert lines[-1]["type"] == "end"
    faulted = {x.get("seat") for x in lines if x.get("type") == "fault"}
    assert faulted <= {0}, "only the hoarder's seat may fault"


def test_connections_are_counted_per_listening_socket(tmp_path: Path) -> None:
    """The connections this process accepted on each socket count; the listener itself,
    connections still waiting to be accepted and another socket's do not."""
    import socket

    paths = [str(tmp_path / "a.sock"), str(tmp_path / "b.sock")]
    listeners, clients = [], []
    try:
        for path, n in zip(paths, (5, 2), strict=True):
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(path)
            listener.listen(16)
            listeners.append(listener)
            for _ in range(n):
                client = socket.socket(socket.AF_UNIX)
                client.connect(path)
                clients.append(client)
        for listener, n in zip(listeners, (3, 2), strict=True):
            clients += [listener.accept()[0] for _ in range(n)]  # a's last two wait
        assert unix_connections(set(paths)) == {paths[0]: 3, paths[1]: 2}
        assert unix_connections({str(tmp_path / "none.sock")}) == {str(tmp_path / "none.sock"): 0}
    finally:
        for s in (*listeners, *clients):
            s.close()


# The cut counts messages between two requests: how many the flooder gets in depends on
# its speed against the referee's, which other tests' (or other work's) load would change.
@pytest.mark.serial
@pytest.mark.quiet
def test_a_bot_flooding_late_answers_is_disconnected_and_the_others_play_on(
    tmp_path: Path,
) -> None:
    """A late answer to a request that timed out costs its bot no strike, and every
    message costs the referee a parse and a fault on the loop all seats share: a bot that
    sent one late answer again and again made an honest seat (100 ms a decision, 300 ms
    allowed) time out three times and forfeit. More than 16 messages that answer no
    request between two requests now end the stream (nothing more of it is read): the
    flooder is disconnected, the others play the match to its end without a fault."""
    stale = _bot_file(tmp_path, "stale", "stale_bot.py", {"STALE_WAIT_MS": "1500"})
    lowest = _bot_file(tmp_path, "lowest", "lowest_bot.py", {})
    out = tmp_path / "out"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "referee.cli", "match", "--rules", "sticheln"),
            *("--out", str(out), *READ_BOTS, "--decision-ms", "1000"),
            *("--bot", str(stale), "--bot", str(lowest), "--bot", str(lowest)),
        ],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (record,) = (out / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "completed"
    faults = [x for x in lines if x.get("type") == "fault"]
    assert {x["seat"] for x in faults} == {0}, "only the flooder faults"
    cut = [x for x in faults if "answering no request" in x["detail"]]
    assert cut and cut[0]["forfeited"], [x["detail"] for x in faults]
