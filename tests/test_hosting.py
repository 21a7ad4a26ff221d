"""Hosted bots end to end, with real processes: a ``referee serve`` league with
``[hosting]`` on (SQLite and PostgreSQL), real ``referee league submit`` uploads of the
Python sample bot (a folder, a .tar.gz, a .zip), a refused broken bot, the daily quota,
every hostile upload refused in one line with nothing stored, and builds run in the jail.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from leaguekit import (
    REFEREE,
    ROOT,
    SAMPLES,
    LeagueDb,
    Serve,
    query,
    serving,
    wait_for,
    write_config,
)
from leaguekit import bots as leaguekit_bots
from test_hosting_archive import HOSTILE_TARS, HOSTILE_ZIPS

from referee.jail import strongest_mode
from referee.league.hosting import hosted_mode
from sticheln.v1 import league_pb2, league_pb2_grpc

PYTHON_BOT = SAMPLES / "python"
#: Validation plays a dozen check-bot matches per submission.
VALIDATED_S = 120


@pytest.fixture
def code_dir() -> Iterator[Path]:
    """A code folder the bots' uids can reach (pytest's own folders are closed to others)."""
    folder = Path(tempfile.mkdtemp(prefix="hosted-code-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder / "code"
    shutil.rmtree(folder, ignore_errors=True)


def league_file(
    tmp_path: Path,
    db: LeagueDb,
    code: Path,
    tier: str = "bubblewrap",
    per_minute: float = 60,
    **hosting: Any,
) -> Path:
    """A hosted league's file. Its hosted code runs in ``tier``: bubblewrap unless a test
    is about the tier (``"strongest"``, the default a league file without ``[sandbox]
    mode`` gets: gVisor here when runsc runs). Every validation start is a sandbox of its
    own, and gVisor's cost ~4x bubblewrap's; tests/test_kits.py's league plays in the
    strongest tier. Its ladder starts ``per_minute`` matches a minute at most (0: as many
    as its tables allow)."""
    path = write_config(
        tmp_path / "hosted.toml",
        # Two ladder matches at a time (a warm bot still serves two seats at once), one
        # started a second at most: the ladder plays on all the while a test waits for
        # builds and validations, and its bots answer at once, so unpaced it played six
        # matches a second, most of such a test's CPU.
        {
            "name": "hosted",
            "table_size": 3,
            "parallel": 2,
            "ladder_matches_per_minute": per_minute,
            **db.table,
        },
        rules={"preset": "sticheln", "rounds": 2},
        # Validation starts each scenario's seats in sandboxes side by side, on a machine
        # that runs other tests at the same time; it plays under the league's clock, as
        # the matches do: a decision a loaded machine may keep waiting for a core.
        clock={"startup_ms": 30000, "decision_ms": 3000},
    )
    table = {"enabled": True, "code_dir": str(code), "workers": 1, **hosting}
    lines = ["[hosting]", *(f"{k} = {json.dumps(v)}" for k, v in table.items())]
    if tier != "strongest":
        lines += ["[sandbox]", f"mode = {json.dumps(tier)}"]
    path.write_text(path.read_text() + "\n".join(lines) + "\n")
    return path


def cli(address: str, *args: str, token: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STICHELN_")}
    if token:
        env["STICHELN_BOT_TOKEN"] = token
    return subprocess.run(
        [*REFEREE, "league", *args, "--address", address],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


#: What ``referee league bots --json`` prints of each entry (the League service's fields).
BOT_FIELDS = (
    "name", "hosted", "status", "submission", "sha256", "matches", "refusal",
    "playing_submission", "version", "active", "connected_streams",
)  # fmt: skip


def bots_json(address: str) -> dict[str, dict[str, Any]]:
    """Each entry as ``referee league bots --json`` prints it, asked over the League
    service in this process: tests poll it every second or so, and a command started
    for each poll cost a fifth of a core's second."""
    with grpc.insecure_channel(address) as channel:
        listed = league_pb2_grpc.LeagueStub(channel).ListBots(
            league_pb2.ListBotsRequest(), timeout=60
        )
    return {b.name: {k: getattr(b, k) for k in BOT_FIELDS} for b in listed.bots}


def bots_cli(address: str) -> dict[str, dict[str, Any]]:
    """The same, from the command an operator runs."""
    done = cli(address, "bots", "--json")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return {r["name"]: r for r in rows}


def submitted(done: subprocess.CompletedProcess[str], bot: str, number: int) -> str:
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    found = re.fullmatch(rf"{bot}: submission {number}, sha256 ([0-9a-f]{{64}}), validating", line)
    assert found, line
    return found.group(1)


def python_bot_tar(path: Path) -> Path:
    """The Python sample bot as a .tar.gz made by tar itself (not by submit's packer)."""
    with tarfile.open(path, "w:gz") as tar:
        for f in [*sorted(PYTHON_BOT.glob("*.py")), PYTHON_BOT / "bot.toml"]:
            tar.add(f, arcname=f"bot/{f.name}")
    return path


def python_bot_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in [*sorted(PYTHON_BOT.glob("*.py")), PYTHON_BOT / "bot.toml"]:
            z.write(f, f.name)
    return path


def broken_bot(folder: Path) -> Path:
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "broken"\ncommand = ["python3", "-c", '
        "\"import sys; print('boom: the bot cannot find its model'); sys.exit(3)\"]\n"
    )
    return folder


def test_hosted_bots_are_submitted_validated_and_played(
    tmp_path: Path, league_db: LeagueDb, code_dir: Path
) -> None:
    # Bubblewrap, for time: tests/test_kits.py plays a league in the default tier, the
    # strongest this machine has, and checks its records say so.
    tier = "bubblewrap"
    config = league_file(tmp_path, league_db, code_dir, tier, submissions_per_day=2)
    config.write_text(config.read_text().replace("[league]\n", "[league]\nweb_port = 0\n", 1))
    with serving(config, tmp_path / "serve.log") as s:
        web = s.lines.get(timeout=30).rsplit(" ", 1)[1].strip().rstrip("/")
        tokens = {n: s.register(n) for n in ("alpha", "beta", "gamma", "broken")}
        shas = {
            "alpha": submitted(
                cli(s.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml",
                    token=tokens["alpha"]), "alpha", 1),
            "beta": submitted(
                cli(s.address, "submit", str(python_bot_tar(tmp_path / "beta.tar.gz")),
                    "--bot-file", "bot/bot.toml", token=tokens["beta"]), "beta", 1),
            "gamma": submitted(
                cli(s.address, "submit", str(python_bot_zip(tmp_path / "gamma.zip")),
                    "--bot-file", "bot.toml", "--name", "gamma", token=tokens["gamma"]),
                "gamma", 1),
        }  # fmt: skip
        assert len(set(shas.values())) == 3
        assert shas["beta"] == hashlib.sha256((tmp_path / "beta.tar.gz").read_bytes()).hexdigest()
        broken = broken_bot(tmp_path / "broken")
        submitted(
            cli(s.address, "submit", str(broken), "--bot-file", "bot.toml", token=tokens["broken"]),
            "broken",
            1,
        )

        def decided() -> dict[str, dict[str, Any]] | None:
            rows = bots_json(s.address)
            return rows if all(r["status"] != "validating" for r in rows.values()) else None

        rows = wait_for(decided, VALIDATED_S * 2, "the four submissions to be decided", every=1)
        for bot in ("alpha", "beta", "gamma"):
            assert rows[bot]["status"] == "playing", (rows[bot], s.tail())
            assert rows[bot]["hosted"] is True
            assert rows[bot]["sha256"] == shas[bot]
            assert rows[bot]["submission"] == 1
        assert rows["broken"]["status"] == "refused"
        assert rows["broken"]["refusal"].startswith("start check:"), rows["broken"]
        # The operator's command prints the same entries (what changes as they play aside).
        steady = ("name", "hosted", "status", "submission", "sha256", "refusal", "version")
        printed = bots_cli(s.address)
        assert {n: {k: r[k] for k in steady} for n, r in printed.items()} == {
            n: {k: r[k] for k in steady} for n, r in rows.items()
        }
        assert all(set(r) == set(BOT_FIELDS) for r in printed.values())
        assert "\n" not in rows["broken"]["refusal"]

        # The broken bot's owner reads why, with what the bot printed.
        status = cli(s.address, "status", "broken", token=tokens["broken"])
        assert status.returncode == 0, status.stderr
        assert status.stdout.startswith("broken: submission 1, sha256 ")
        assert "refused: start check" in status.stdout
        assert "boom: the bot cannot find its model" in status.stdout
        ok = cli(s.address, "status", "alpha", token=tokens["alpha"])
        assert "start check: started and greeted" in ok.stdout
        assert "PASS preset-sticheln" in ok.stdout
        other = cli(s.address, "status", "alpha", token=tokens["beta"])
        assert other.returncode == 1 and "PERMISSION_DENIED" in other.stderr

        # The web bot page shows the status and the submission history (not the report).
        with urllib.request.urlopen(f"{web}/api/bot?name=broken", timeout=30) as r:
            doc = json.load(r)
        assert doc["entry"]["hosted"] and doc["entry"]["status"] == "refused"
        assert [u["status"] for u in doc["submissions"]] == ["refused"]
        assert doc["submissions"][0]["refusal"] == rows["broken"]["refusal"]
        with urllib.request.urlopen(f"{web}/bot?name=alpha", timeout=30) as r:
            page = r.read().decode()
        assert "hosted: playing" in page and "<h2>Submissions</h2>" in page
        assert shas["alpha"][:12] in page
        assert "boom" not in json.dumps(doc), "the report is its owner's"

        # The three hosted bots play one another, from the league worker's warm pool.
        wait_for(
            lambda: all(
                r["matches"] >= 2 for n, r in bots_json(s.address).items() if n != "broken"
            ),
            120,
            "hosted bots to play two matches",
            every=1,
        )
        queue = query(league_db.target, "SELECT status, attempts FROM match_queue")
        assert queue and all(a <= 1 for _, a in queue), queue  # each match taken once
        assert {st for st, _ in queue} <= {"done", "leased", "queued"}
        started = query(league_db.target, "SELECT COUNT(*) FROM matches WHERE status = 'finished'")[
            0
        ][0]
        assert started >= 2
        # From the league's warm pool: a process (and its log) per process, not per seat.
        logs = tmp_path / "out" / "logs"
        assert list(logs.glob("alpha+*.log")), "alpha's warm process"
        assert not list(logs.glob("hosted-*-seat*-alpha*.log")), "no process per seat"
        # Played in the league's tier: the strongest this machine has, or the one named.
        ids = query(league_db.target, "SELECT match_id FROM matches WHERE status = 'finished'")
        for (match_id,) in ids:
            path = tmp_path / "out" / "matches" / f"{match_id}.jsonl"
            header = json.loads(path.read_text().split("\n", 1)[0])
            assert header["sandbox"] == (strongest_mode() if tier == "strongest" else tier)

        # A second submission replaces the first once it passes; the quota then refuses.
        again = submitted(
            cli(s.address, "submit", str(broken), "--bot-file", "bot.toml", token=tokens["broken"]),
            "broken",
            2,
        )
        assert (
            again
            == query(
                league_db.target,
                "SELECT sha256 FROM league_submissions WHERE bot = 'broken' AND number = 1",
            )[0][0]
        ), "the same code is the same hash"
        third = cli(
            s.address, "submit", str(broken), "--bot-file", "bot.toml", token=tokens["broken"]
        )
        assert third.returncode == 1
        lines = third.stderr.strip().splitlines()
        assert len(lines) == 1 and "RESOURCE_EXHAUSTED" in lines[0]
        assert "submissions_per_day" in lines[0]
        archives = query(league_db.target, "SELECT sha256, size FROM league_archives")
        assert {sha for sha, _ in archives} == {*shas.values(), again}


def raw_submit(
    s: Serve,
    token: str,
    data: bytes,
    *,
    fmt: str = "tar.gz",
    bot_file: str = "bot.toml",
    size: int | None = None,
    sha256: str = "",
    bot: str = "",
) -> grpc.RpcError | league_pb2.SubmitResponse:
    header = league_pb2.SubmitHeader(
        bot=bot, format=fmt, size=len(data) if size is None else size, sha256=sha256,
        bot_file=bot_file,
    )  # fmt: skip

    def requests() -> Iterator[league_pb2.SubmitRequest]:
        yield league_pb2.SubmitRequest(header=header)
        for at in range(0, len(data), 32 << 10):
            yield league_pb2.SubmitRequest(chunk=data[at : at + (32 << 10)])

    metadata = [("authorization", f"Bearer {token}")] if token else []
    try:
        reply: league_pb2.SubmitResponse = s.league.Submit(
            requests(), metadata=metadata, timeout=60
        )
    except grpc.RpcError as exc:
        return exc
    return reply


def refusal(result: Any, code: grpc.StatusCode, words: str) -> str:
    assert isinstance(result, grpc.RpcError), f"accepted: {result}"
    assert result.code() == code, (result.code(), result.details())
    details = str(result.details())
    assert words in details, details
    assert "\n" not in details
    return details


def test_hosted_code_runs_in_the_strongest_tier_unless_the_league_names_one() -> None:
    assert hosted_mode("strongest") == "strongest"  # resolved by Sandbox: gvisor here
    assert hosted_mode("gvisor") == "gvisor"
    assert hosted_mode("bubblewrap") == "bubblewrap"
    assert hosted_mode("none") == "strongest", "never unconfined (and refused at start)"


def test_every_hostile_upload_is_refused_in_one_line_and_stores_nothing(
    tmp_path: Path, league_db: LeagueDb, code_dir: Path
) -> None:
    config = league_file(
        tmp_path,
        league_db,
        code_dir,
        max_archive_mb=1,
        max_files=50,
        max_unpacked_mb=16,
        upload_timeout_s=2,
        submissions_per_day=40,
    )
    good = io.BytesIO()
    with tarfile.open(fileobj=good, mode="w:gz") as tar:
        info = tarfile.TarInfo("bot.toml")
        text = b'name = "x"\ncommand = ["python3", "bot.py"]\n'
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    data = good.getvalue()
    with serving(config, tmp_path / "serve.log") as s:
        alpha, beta, gone = s.register("alpha"), s.register("beta"), s.register("gone")
        s.league.RevokeToken(
            league_pb2.RevokeTokenRequest(name="gone"),
            metadata=(("authorization", "Bearer test-admin-token-0123456789"),),
            timeout=10,
        )
        unauthenticated = grpc.StatusCode.UNAUTHENTICATED
        denied = grpc.StatusCode.PERMISSION_DENIED
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        refusal(raw_submit(s, "", data), unauthenticated, "needs the entry's bot token")
        refusal(raw_submit(s, "stb_not-a-token", data), unauthenticated, "not valid")
        refusal(raw_submit(s, gone, data), unauthenticated, "revoked")
        refusal(raw_submit(s, alpha, data, bot="beta"), denied, "belongs to bot 'alpha'")
        refusal(raw_submit(s, alpha, data, size=2 << 20), invalid, "max_archive_mb = 1")
        refusal(raw_submit(s, alpha, data, size=len(data) + 10), invalid, "ended after")
        refusal(raw_submit(s, alpha, data, size=len(data) - 10), invalid, "more than the")
        refusal(raw_submit(s, alpha, data, sha256="0" * 64), invalid, "SHA-256")
        refusal(raw_submit(s, alpha, data, fmt="rar"), invalid, "format 'rar'")
        refusal(
            raw_submit(s, alpha, data, bot_file="../bot.toml"), invalid, "not inside the archive"
        )
        refusal(raw_submit(s, alpha, data, bot_file="other.toml"), invalid, "not in the archive")
        for name, (make, words) in sorted(HOSTILE_TARS.items()):
            if name == "size":  # larger than this league's 1 MiB uploads
                continue
            refusal(raw_submit(s, beta, make()), invalid, words)
        for name, (make, words) in sorted(HOSTILE_ZIPS.items()):
            if name == "size":
                continue
            refusal(raw_submit(s, beta, make(), fmt="zip"), invalid, words)
        # A bot file that dials in instead of being started is no hosted bot.
        external = io.BytesIO()
        with zipfile.ZipFile(external, "w") as z:
            z.writestr("bot.toml", 'name = "x"\ntoken = "t"\n')
        refusal(raw_submit(s, beta, external.getvalue(), fmt="zip"), invalid, "no 'command'")
        # Refused uploads count toward the daily quota: each costs the league an unpacking.
        gamma = s.register("gamma")
        for _ in range(40):
            refusal(raw_submit(s, gamma, data, bot_file="x.toml"), invalid, "not in the archive")
        refusal(
            raw_submit(s, gamma, data),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "made 40 submissions in the last 24 hours",
        )
        # An upload that stalls holds its entry's one upload slot until upload_timeout_s.
        gate = threading.Event()
        stalled: list[Any] = []

        def stall() -> Iterator[league_pb2.SubmitRequest]:
            yield league_pb2.SubmitRequest(
                header=league_pb2.SubmitHeader(format="tar.gz", size=len(data), bot_file="bot.toml")
            )
            gate.wait(30)

        def first_upload() -> None:
            try:
                s.league.Submit(
                    stall(), metadata=[("authorization", f"Bearer {alpha}")], timeout=30
                )
            except grpc.RpcError as exc:
                stalled.append(exc)

        thread = threading.Thread(target=first_upload)
        thread.start()
        try:
            second = wait_for(
                lambda: (
                    (r := raw_submit(s, alpha, data, sha256="1" * 64)).code()
                    == grpc.StatusCode.RESOURCE_EXHAUSTED
                    and r
                ),
                10,
                "a second upload of alpha refused while the first is under way",
            )
            refusal(second, grpc.StatusCode.RESOURCE_EXHAUSTED, "under way; one at a time")
            thread.join(20)
        finally:
            gate.set()
            thread.join(30)
        refusal(stalled[0], grpc.StatusCode.DEADLINE_EXCEEDED, "upload_timeout_s = 2 s")
        # Nothing was stored, nothing left in the code folder, and the league serves on.
        assert query(league_db.target, "SELECT COUNT(*) FROM league_archives")[0][0] == 0
        assert query(league_db.target, "SELECT COUNT(*) FROM league_submissions")[0][0] == 0
        assert [p.name for p in code_dir.iterdir()] == []
        names = [b.name for b in s.league.ListBots(league_pb2.ListBotsRequest(), timeout=10).bots]
        assert names == ["alpha", "beta", "gone", "gamma"]
        # The command line says a refusal in one line, with a non-zero exit.
        link = tmp_path / "linked"
        link.mkdir()
        (link / "bot.toml").write_text('name = "x"\ncommand = ["true"]\n')
        (link / "passwd").symlink_to("/etc/passwd")
        done = cli(s.address, "submit", str(link), "--bot-file", "bot.toml", token=alpha)
        assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
        assert "symbolic link" in done.stderr
        tar = tmp_path / "abs.tar.gz"
        tar.write_bytes(HOSTILE_TARS["absolute"][0]())
        done = cli(s.address, "submit", str(tar), "--bot-file", "bot.toml", token=alpha)
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
        assert "INVALID_ARGUMENT" in done.stderr and "absolute" in done.stderr


def build_bot(folder: Path, build: str, command: str = '["python3", "generated_bot.py"]') -> Path:
    """The Python sample bot with a bot file whose build makes the file it runs."""
    shutil.copytree(PYTHON_BOT, folder, ignore=shutil.ignore_patterns("bot.toml", "__pycache__"))
    (folder / "bot.toml").write_text(
        f'name = "built"\ncommand = {command}\nbuild = {json.dumps(build)}\n'
    )
    return folder


def test_a_build_runs_once_in_the_jail_and_its_output_plays(tmp_path: Path, code_dir: Path) -> None:
    db = LeagueDb("sqlite", tmp_path / "out" / "league.db")
    config = league_file(tmp_path, db, code_dir, build_timeout_s=4, max_unpacked_mb=16, workers=0)
    with serving(config, tmp_path / "serve.log") as s:
        port = s.address.rsplit(":", 1)[1]
        builds = {
            "built": "cp heuristic_bot.py generated_bot.py && echo built >&2",
            "slow": "sleep 60",
            "filling": "dd if=/dev/zero of=big bs=1M count=64",
            "online": f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\"",
            "forking": "python3 -c 'import os\nwhile True: os.fork()'",
            "escaping": "cp heuristic_bot.py generated_bot.py && touch ../../escaped",
        }
        for name, build in builds.items():
            token = s.register(name)
            folder = build_bot(tmp_path / name, build)
            submitted(
                cli(s.address, "submit", str(folder), "--bot-file", "bot.toml", token=token),
                name,
                1,
            )

        def decided() -> dict[str, dict[str, Any]] | None:
            rows = bots_json(s.address)
            return rows if all(r["status"] != "validating" for r in rows.values()) else None

        rows = wait_for(decided, VALIDATED_S * 2, "the builds to be decided", every=1)
        assert rows["built"]["status"] == "playing", rows["built"]
        why = {name: rows[name]["refusal"] for name in builds if name != "built"}
        assert "ran past build_timeout_s = 4 s" in why["slow"], why
        for name in ("filling", "online"):
            assert why[name].startswith("the build failed"), why
        # A fork bomb stops at the build's process bound; it fails, or spins till its time.
        assert why["forking"].startswith("the build"), why
        assert rows["escaping"]["status"] == "refused", why
        report = cli(s.address, "status", "filling", token="").stdout
        assert report == "" or "No space left" in report
        admin = subprocess.run(
            [*REFEREE, "league", "status", "filling", "--address", s.address],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
            env={**os.environ, "STICHELN_ADMIN_TOKEN": "test-admin-token-0123456789"},
        )  # fmt: skip
        assert "No space left on device" in admin.stdout, admin.stdout
        online = subprocess.run(
            [*REFEREE, "league", "status", "online", "--address", s.address],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
            env={**os.environ, "STICHELN_ADMIN_TOKEN": "test-admin-token-0123456789"},
        ).stdout  # fmt: skip
        assert "Network is unreachable" in online or "Connection refused" in online, online
        assert not Path("/escaped").exists() and not (tmp_path / "escaped").exists()
        # The build's output is stored by hash and is the bot's folder from now on.
        sha, build_sha = query(
            db.target,
            "SELECT sha256, build_sha256 FROM league_submissions WHERE bot = 'built'",
        )[0]
        assert build_sha and build_sha != sha
        stored = query(db.target, "SELECT sha256 FROM league_archives")
        assert (build_sha,) in stored
        assert (code_dir / build_sha / "generated_bot.py").is_file()
        assert not (code_dir / sha / "generated_bot.py").exists(), "the upload stays as it came"
        # No upload reads another's code: a bot looking for the built bot's finds nothing.
        snoop = tmp_path / "snoop"
        snoop.mkdir()
        look = (
            "import os, sys; "
            f"print('other code:', os.path.exists({str(code_dir / build_sha)!r}), "
            f"len(os.listdir({str(code_dir)!r}))); sys.exit(3)"
        )
        (snoop / "bot.toml").write_text(
            f'name = "snoop"\ncommand = ["python3", "-c", {json.dumps(look)}]\n'
        )
        submitted(
            cli(
                s.address, "submit", str(snoop), "--bot-file", "bot.toml", token=s.register("snoop")
            ),
            "snoop",
            1,
        )
        wait_for(lambda: bots_json(s.address)["snoop"]["status"] == "refused", VALIDATED_S, "snoop")
        report = subprocess.run(
            [*REFEREE, "league", "status", "snoop", "--address", s.address],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
            env={**os.environ, "STICHELN_ADMIN_TOKEN": "test-admin-token-0123456789"},
        ).stdout  # fmt: skip
        # Of the code folder it sees its own upload's folder alone (bound read-only).
        assert "other code: False 1" in report, report


def test_a_killed_league_resumes_with_its_hosted_bots(tmp_path: Path, code_dir: Path) -> None:
    db = LeagueDb("sqlite", tmp_path / "out" / "league.db")
    # Unpaced: the kill must find a match in flight.
    config = league_file(tmp_path, db, code_dir, per_minute=0)
    first = Serve(config, tmp_path / "serve.log")
    try:
        tokens = {n: first.register(n) for n in ("alpha", "beta", "gamma", "delta")}
        for name in ("alpha", "beta", "gamma"):
            submitted(
                cli(first.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml",
                    token=tokens[name]), name, 1,
            )  # fmt: skip
        wait_for(
            lambda: first.recent().running and first.recent().matches,
            VALIDATED_S * 3,
            "a hosted match to finish and another to run",
            every=0.2,
        )
        # delta's submission is being validated when the league is killed.
        submitted(
            cli(first.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml",
                token=tokens["delta"]), "delta", 1,
        )  # fmt: skip
    finally:
        first.proc.kill()
        first.proc.wait(30)
        first.channel.close()
    before = query(db.target, "SELECT COUNT(*) FROM matches WHERE status = 'finished'")[0][0]
    leased = query(db.target, "SELECT idx FROM match_queue WHERE status = 'leased'")
    assert leased, "a match was being played when the league was killed"
    with serving(config, tmp_path / "serve2.log") as s:
        rows = wait_for(
            lambda: (r := bots_json(s.address))["delta"]["status"] != "validating" and r,
            VALIDATED_S,
            "delta's validation, begun again",
            every=1,
        )
        assert {rows[n]["status"] for n in ("alpha", "beta", "gamma", "delta")} == {"playing"}
        wait_for(
            lambda: (
                query(db.target, "SELECT COUNT(*) FROM matches WHERE status = 'finished'")[0][0]
                >= before + 2
            ),
            120,
            "the resumed league to play on with its hosted bots",
            every=0.5,
        )
        # The match the killed league's worker held is void in the queue and played again
        # (same index, a new deal) by the new worker.
        (idx,) = leased[0]
        assert query(db.target, "SELECT status FROM matches WHERE idx = ?", (idx,))[0][0] in (
            "finished", "running", "planned",
        )  # fmt: skip
        wait_for(
            lambda: (
                query(db.target, "SELECT status FROM matches WHERE idx = ?", (idx,))[0][0]
                == "finished"
            ),
            120,
            "the interrupted match to be played again",
            every=0.5,
        )
        assert len(bots_json(s.address)) == 4


def test_external_workers_play_and_a_killed_one_leaves_a_void_match_played_again(
    tmp_path: Path, postgres_url: str, code_dir: Path
) -> None:
    db = LeagueDb("postgresql", postgres_url, {"database": postgres_url})
    config = league_file(tmp_path, db, code_dir, workers=0)

    def worker(name: str) -> subprocess.Popen[str]:
        # Its own folder and a relative --out, as on another machine: the league cannot
        # read the records it writes there, only the copies it keeps in the database.
        where = tmp_path / name
        where.mkdir()
        return subprocess.Popen(
            [*REFEREE, "league", "worker", "--database", postgres_url, "--name", name,
             "--lease-s", "3", "--sandbox", "bubblewrap", "--out", "out", "--code-dir", str(code_dir.parent / name)],
            cwd=where, stdout=subprocess.PIPE, stderr=(where / "worker.log").open("wb"),
            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip

    def finished() -> int:
        return int(
            query(postgres_url, "SELECT COUNT(*) FROM matches WHERE status = 'finished'")[0][0]
        )

    with serving(config, tmp_path / "serve.log") as s:
        tokens = {n: s.register(n) for n in ("alpha", "beta", "gamma")}
        for name, token in tokens.items():
            submitted(
                cli(s.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml", token=token),
                name,
                1,
            )
        wait_for(
            lambda: all(r["status"] == "playing" for r in bots_json(s.address).values()),
            VALIDATED_S * 3,
            "three hosted bots playing",
            every=1,
        )
        wait_for(lambda: query(postgres_url, "SELECT 1 FROM match_queue WHERE status = 'queued'"),
                 30, "a queued match, with no worker yet")  # fmt: skip
        assert finished() == 0
        first = worker("worker-a")
        try:
            assert first.stdout is not None
            assert first.stdout.readline().startswith("worker worker-a playing league hosted")
            wait_for(lambda: finished() >= 1, 120, "the worker to play a match", every=0.5)
            leased = wait_for(
                lambda: query(postgres_url, "SELECT idx FROM match_queue WHERE status = 'leased' "
                              "AND worker = 'worker-a'"),
                60, "worker-a to hold a match", every=0.05,
            )  # fmt: skip
        finally:
            first.kill()
            first.wait(30)
        (idx,) = leased[0]
        # Its lease runs out: the match is void, queued again with a new deal.
        wait_for(
            lambda: (
                query(postgres_url, "SELECT status FROM match_queue WHERE idx = ?", (idx,))
                == [("queued",)]
            ),
            60,
            "the killed worker's match to be void and queued again",
            every=0.2,
        )
        before = finished()
        second = worker("worker-b")
        try:
            wait_for(
                lambda: (
                    query(postgres_url, "SELECT status FROM matches WHERE idx = ?", (idx,))
                    == [("finished",)]
                ),
                120,
                "the void match to be played again",
                every=0.5,
            )
            wait_for(lambda: finished() >= before + 2, 120, "worker-b to play on", every=0.5)
        finally:
            second.terminate()
            assert second.wait(60) == 0
        # The league takes the workers' matches in (it looks once a second): ratings,
        # recent matches, records.
        recent = wait_for(
            lambda: (r := s.recent()).matches and len(r.matches) >= 3 and r,
            30,
            "the league to take in the workers' matches",
            every=0.2,
        )
        record = s.league.GetMatchRecord(
            league_pb2.GetMatchRecordRequest(match_id=recent.matches[0].match_id), timeout=10
        )
        assert record.record_jsonl.count("\n") > 10
        # Played in the tier the worker was given (--sandbox), as the league file names.
        assert json.loads(record.record_jsonl.split("\n", 1)[0])["sandbox"] == "bubblewrap"
        copied = tmp_path / "out" / "matches" / f"{recent.matches[0].match_id}.jsonl"
        assert copied.read_text() == record.record_jsonl, "copied from the database"
        stored = query(postgres_url, "SELECT COUNT(*) FROM league_records")[0][0]
        assert stored >= 3
        workers = {w for (w,) in query(postgres_url, "SELECT DISTINCT worker FROM match_queue")}
        assert {"worker-a", "worker-b"} <= workers | {""}


def test_with_no_worker_hosted_matches_queue_and_dial_in_bots_play_on(
    tmp_path: Path, code_dir: Path
) -> None:
    db = LeagueDb("sqlite", tmp_path / "out" / "league.db")
    config = league_file(tmp_path, db, code_dir, workers=0)
    text = (
        config.read_text()
        .replace("parallel = 2\n", "parallel = 1\n", 1)
        .replace("[league]\n", "[league]\nmetrics_port = 0\nweb_port = 0\n", 1)
    )
    config.write_text(text)
    with serving(config, tmp_path / "serve.log") as s, leaguekit_bots(s.address, tmp_path) as b:
        web = s.lines.get(timeout=30).rsplit(" ", 1)[1].strip().rstrip("/")
        for name in ("hosted-a", "hosted-b", "hosted-c"):
            submitted(
                cli(s.address, "submit", str(PYTHON_BOT), "--bot-file", "bot.toml",
                    token=s.register(name)), name, 1,
            )  # fmt: skip
        wait_for(
            lambda: all(r["status"] == "playing" for r in bots_json(s.address).values()),
            VALIDATED_S * 3,
            "three hosted bots playing",
            every=1,
        )

        def info() -> dict[str, Any]:
            with urllib.request.urlopen(f"{web}/api/info", timeout=30) as r:
                found: dict[str, Any] = json.load(r)
                return found

        wait_for(lambda: info().get("queued_matches") == 1, 30, "a hosted match queued")
        # The queued match waits for a worker; it does not hold the league's one table.
        for name in ("dial-a", "dial-b", "dial-c"):
            b.start("random", name, s.register(name))
        wait_for(
            lambda: (
                sum(r["matches"] for n, r in bots_json(s.address).items() if n.startswith("dial"))
                >= 6
            ),
            120,
            "the dial-in bots to play two matches while the hosted one waits",
            every=0.5,
        )
        rows = bots_json(s.address)
        assert all(rows[n]["matches"] == 0 for n in ("hosted-a", "hosted-b", "hosted-c"))
        assert info()["queued_matches"] == 1
        assert query(db.target, "SELECT status FROM match_queue") == [("queued",)]


def test_validation_gives_every_check_the_leagues_start_up_time_and_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The start check and check-bot's scenarios start the bot within the league's
    # [clock] startup_ms; the scenarios once kept check-bot's own 10 s. Every scenario is
    # played under the league's decision time and time bank (once check-bot's own 1 s,
    # which refused a bot the league's clock gives 3 s), and none with a clock of its own.
    import asyncio

    import referee.league.hosting as hosting_module
    from referee.jail.sandbox import Sandbox
    from referee.league.config import HostingConfig
    from referee.league.submissions import Submission
    from referee.match.checkbot import scenarios
    from referee.match.runner import Clock

    code_dir = tmp_path / "code"
    folder = code_dir / ("0" * 64)  # an upload already unpacked under its hash
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text('name = "slowstart"\ncommand = ["python3", "bot.py"]\n')
    (folder / "bot.py").write_text("")
    given: dict[str, Any] = {}

    async def start_check(specs: Any, sandbox: Any, startup_s: float, logs: Any) -> list[Any]:
        given["start check"] = startup_s
        return []

    async def check_bot(spec: Any, chosen: Any, **kwargs: Any) -> list[Any]:
        given["check-bot"] = kwargs.get("startup_ms")
        given["scenarios"] = [s.name for s in chosen]
        given["clocks"] = {s.clock for s in chosen}
        return []

    monkeypatch.setattr(hosting_module, "check_starts_on_own_server", start_check)
    monkeypatch.setattr(hosting_module, "check_bot", check_bot)
    hosting = hosting_module.Hosting(
        HostingConfig(enabled=True, code_dir=code_dir),
        None,  # type: ignore[arg-type]  # the upload is unpacked already: no store needed
        Sandbox(),
        tmp_path / "validation",
        startup_s=42.5,
        clock=Clock(decision_ms=3000, time_bank_ms=500),
    )
    submission = Submission(
        "slowstart", 1, "0" * 64, "tar.gz", "bot.toml", "validating", "", "", "", 0.0, None
    )
    report, _ = asyncio.run(hosting.check(submission))
    assert "start check: started and greeted" in report
    assert given.pop("clocks") == {Clock(decision_ms=3000, time_bank_ms=500)}
    left_out = {s.name for s in scenarios()} - set(given.pop("scenarios"))
    assert left_out == {"short-clock"}
    assert given == {"start check": 42.5, "check-bot": 42500}
