"""The ready-to-upload kits of sample_bots/ and the hosted league example, used as a
newcomer would (docs/hosting.md): start ``referee serve`` on a copy of
examples/hosted-league.toml, register an entry per kit with ``referee league register``,
upload each kit's folder as it is with ``referee league submit``, wait for ``playing``
and see every kit play. The league plays them in bubblewrap: the kits' runtimes in the
gVisor tier are tests/test_check_bot.py's (each kit through check-bot there), and gVisor's
sandboxes on this machine's ptrace platform made this test the suite's most costly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from leaguekit import ADMIN_TOKEN, REFEREE, ROOT, SAMPLES, query, serving, wait_for

from referee.config.bots import load_bot
from referee.league.archive import pack_folder
from referee.league.config import load_league_config

EXAMPLE = ROOT / "examples" / "hosted-league.toml"
GOCODE = Path("/usr/share/gocode/src")
JARS = Path("/usr/share/java")


def _missing(kit: str) -> str:
    """What this machine lacks to build and run ``kit`` ("" when nothing)."""
    needs = {
        "python": [],
        "node": ["node"],
        "cpp": ["cmake", "g++", "protoc", "grpc_cpp_plugin"],
        "go": ["go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc"],
        "java": ["java", "javac", "protoc", "grpc_java_plugin"],
    }[kit]
    lacking = [tool for tool in needs if shutil.which(tool) is None]
    if kit == "node" and not (SAMPLES / "node" / "node_modules").is_dir():
        lacking.append("sample_bots/node/node_modules (npm ci)")
    if kit == "go" and not (GOCODE / "google.golang.org" / "grpc").is_dir():
        lacking.append("golang-google-grpc-dev")
    if kit == "java" and not (JARS / "grpc-netty.jar").is_file():
        lacking.append("libgrpc-java")
    return ", ".join(lacking)


KITS = ("python", "node", "cpp", "go", "java")


@pytest.mark.parametrize("kit", KITS)
def test_each_kit_is_a_folder_with_its_bot_file_ready_to_upload(kit: str) -> None:
    folder = SAMPLES / kit
    bot_file = folder / "bot.toml"
    first = bot_file.read_text().splitlines()[0]
    schema = (bot_file.parent / first.removeprefix("#:schema ")).resolve()
    assert schema == ROOT / "referee" / "config" / "schemas" / "bot.schema.json"
    validator = jsonschema.Draft7Validator(json.loads(schema.read_text()))
    assert [e.message for e in validator.iter_errors(tomllib.loads(bot_file.read_text()))] == []
    spec = load_bot(bot_file)
    assert spec.workdir == folder and spec.command
    build = tomllib.loads(bot_file.read_text()).get("build")
    # What runs is the league's interpreter or node, or what the build makes in the folder.
    program = spec.command[0]
    if build is None:
        assert program in ("python3", "node"), spec.command
        assert (folder / spec.command[1]).is_file()
    elif kit == "java":
        # The league machine's java (the jvm runtime) on the classes and jars build.sh
        # leaves in the folder: the jail shows a bot its runtime, not /usr/share/java.
        assert spec.runtime == "jvm" and program == "java", spec
        assert "classes:lib/*" in spec.command
    else:
        assert program.startswith(("build/", "./")), spec.command  # what the build makes
    if kit == "node" and (folder / "node_modules").is_dir():
        # npm ci with the kit's .npmrc leaves no link: the folder packs as it is.
        links = [p for p in (folder / "node_modules").rglob("*") if p.is_symlink()]
        assert links == [], f"links in node_modules (npm ci again: .npmrc): {links[:3]}"
    if kit == "cpp":
        # The local build folder scripts/test.sh makes is left out of nothing: the kit's
        # build starts afresh (CMake refuses a cache made for another source folder).
        assert str(build).startswith("rm -rf build && cmake -S . -B build")
    data = pack_folder(folder)  # refuses a link or a special file, as submit does
    assert len(data) < 64 << 20  # max_archive_mb's default


def test_the_node_kit_installs_without_links(tmp_path: Path) -> None:
    """``npm ci`` in a copy of the kit (as its author would) leaves no link to refuse."""
    if shutil.which("npm") is None:
        pytest.skip("npm is needed")
    kit = tmp_path / "node"
    kit.mkdir()
    for name in ("package.json", "package-lock.json", ".npmrc"):
        shutil.copy2(SAMPLES / "node" / name, kit / name)
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline"],
        cwd=kit,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (kit / "node_modules" / "@grpc" / "grpc-js").is_dir()
    assert [p for p in kit.rglob("*") if p.is_symlink()] == []
    # Without the .npmrc, npm makes the link an upload refuses.
    (kit / ".npmrc").unlink()
    shutil.rmtree(kit / "node_modules")
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline"],
        cwd=kit,
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert [p for p in kit.rglob("*") if p.is_symlink()] != []


def test_the_hosted_league_example_is_an_embedded_local_league() -> None:
    config = load_league_config(EXAMPLE, {"STICHELN_ADMIN_TOKEN": "x" * 32})
    assert config.hosting.enabled and config.hosting.workers >= 1
    assert config.database == config.out / "league.db"  # SQLite, beside the records
    assert config.host == config.web_host == "127.0.0.1"
    assert config.hosting.code_dir == config.out.with_name(config.out.name + "-code")
    assert config.out == (ROOT / "results" / "hosted-league").resolve()


@pytest.fixture
def league_home() -> Iterator[Path]:
    """A folder for the example's copy that a root league's bot uids may walk (pytest's
    own folders are closed to others)."""
    folder = Path(tempfile.mkdtemp(prefix="sticheln-kits-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _example_copy(home: Path) -> Path:
    """examples/hosted-league.toml as a newcomer's copy: ports the machine has free,
    (on a loaded test machine) a longer clock, and the bubblewrap tier (see above);
    everything else as shipped."""
    text = EXAMPLE.read_text()
    text = re.sub(r"(?m)^port = 50051", "port = 0", text)
    text = re.sub(r"(?m)^web_port = 8080", "web_port = 0", text)
    # The clock of a machine that runs other tests beside this one (their sandboxes
    # each take their share): a decision may wait for a core longer than 1 s.
    text = re.sub(r"(?m)^startup_ms = \d+", "startup_ms = 30000", text)
    text = re.sub(r"(?m)^decision_ms = \d+", "decision_ms = 3000", text)
    text = re.sub(r"(?m)^time_bank_ms = \d+", "time_bank_ms = 6000", text)
    assert text.count("= 0 ") >= 2 and "startup_ms = 30000" in text
    assert "decision_ms = 3000" in text and "time_bank_ms = 6000" in text
    # The ladder plays on while the slow builds run (three kits are enough for a table),
    # paced as the example's comment shows: a match every 10 s is all the test needs (one
    # of every kit), and leaves the CPU to the builds. At the example's 60 a minute its
    # full-length matches took a core while the builds ran: 138 CPU s for this test
    # against 115 at 6 (alone on a quiet machine, STICHELN_TEST_COSTS).
    text = text.replace("# ladder_matches_per_minute = 60", "ladder_matches_per_minute = 6")
    assert "\nladder_matches_per_minute = 6 " in text
    # The tier the example leaves to the machine (strongest), named as its comment shows.
    text = text.replace('# [sandbox]\n# mode = "bubblewrap"', '[sandbox]\nmode = "bubblewrap"')
    assert '\n[sandbox]\nmode = "bubblewrap"' in text
    path = home / "examples" / "hosted-league.toml"
    path.parent.mkdir()
    path.write_text(text)
    return path


def _league(address: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STICHELN_")}
    return subprocess.run(
        [*REFEREE, "league", *args, "--address", address],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **env},
        cwd=ROOT,
    )


def _bots(address: str) -> dict[str, dict[str, Any]]:
    # A league busy building and validating may answer slowly (issue of its own): the
    # poll gives it a minute rather than the command's default 10 s.
    done = _league(address, "bots", "--json", "--timeout", "60")
    assert done.returncode == 0, done.stderr
    return {r["name"]: r for r in map(json.loads, done.stdout.splitlines())}


# Not in the serial phase: its builds and validations take minutes of one core each, and
# the other tests run beside them (it is scheduled first, its timeout being the longest).
@pytest.mark.timeout(1500)
def test_every_kit_is_submitted_validated_and_played(league_home: Path) -> None:
    kits = [k for k in KITS if not _missing(k)]
    if len(kits) < len(KITS):
        lacking = {k: _missing(k) for k in KITS if k not in kits}
        if os.environ.get("CI"):
            pytest.fail(f"the kits' toolchains are missing: {lacking}")
        pytest.skip(f"missing: {lacking}")
    config = _example_copy(league_home)
    with serving(config, league_home / "serve.log") as s:
        tokens = {}
        for kit in kits:
            done = _league(
                s.address, "register", kit, "--owner", f"{kit}-author",
                STICHELN_ADMIN_TOKEN=ADMIN_TOKEN,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            tokens[kit] = done.stdout.strip()
        for kit in kits:
            done = _league(
                s.address, "submit", str(SAMPLES / kit), "--bot-file", "bot.toml",
                STICHELN_BOT_TOKEN=tokens[kit],
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert re.fullmatch(
                rf"{kit}: submission 1, sha256 [0-9a-f]{{64}}, validating\n", done.stdout
            )
        rows = wait_for(
            lambda: (r := _bots(s.address)) and all(x["status"] != "validating" for x in r.values()) and r,
            1200,
            "every kit to be built and validated (the C++ and Go builds take minutes)",
            every=2,
        )  # fmt: skip
        statuses = {k: r["status"] for k, r in rows.items()}
        if statuses != dict.fromkeys(kits, "playing"):
            reports = {
                k: _league(s.address, "status", k, STICHELN_BOT_TOKEN=tokens[k]).stdout[-2000:]
                for k, st in statuses.items()
                if st != "playing"
            }
            pytest.fail(f"{statuses}: {reports}")
        # The build's output is in the owner's report, and stored by its hash: the bot's
        # folder from now on, with what the build made in it.
        report = _league(s.address, "status", "cpp", STICHELN_BOT_TOKEN=tokens["cpp"]).stdout
        assert "build: done, output " in report, report
        db = league_home / "results" / "hosted-league" / "league.db"
        ((built,),) = query(db, "SELECT build_sha256 FROM league_submissions WHERE bot = 'cpp'")
        code_dir = league_home / "results" / "hosted-league-code"  # the example's default
        assert built and (code_dir / built / "build" / "sticheln-bot").is_file(), built
        wait_for(
            lambda: all(r["matches"] >= 1 for r in _bots(s.address).values()),
            300,
            "a match of every kit",
            every=1,
        )
        # The league said at start which tier its hosted code runs in.
        said = (league_home / "serve.log").read_text()
        assert "hosted code: sandbox: bubblewrap (" in said
        assert query(db, "SELECT bot, reason FROM faults") == []
        (path,) = query(db, "SELECT record_path FROM matches WHERE status = 'finished' LIMIT 1")[0]
        header = json.loads(Path(path).read_text().split("\n", 1)[0])
        assert header["sandbox"] == "bubblewrap"
