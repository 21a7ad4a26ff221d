"""A bot file cannot widen its own sandbox: what it reads beyond its folder, and how far
its limits go, is the organiser's to grant; some paths no one may grant.

Refusals are one line, given before any bot starts (no record, no log, no process).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bots.harness import (
    BOTS_DIR,
    READ_BOTS,
    assert_no_processes,
    new_marker,
    processes_with,
    run,
)

from referee import jail
from referee.config.bots import load_bot
from referee.jail import launch
from referee.jail.bots import BotConfigError, BotSpec
from referee.jail.policy import (
    SOCKET_ROOT_PREFIX,
    Grants,
    MaxLimits,
    never_readable,
    why_never,
)
from referee.jail.sandbox import Sandbox
from referee.jail.seccomp import program_fd
from referee.results.store import describe_changes
from referee.tournament.config import ConfigError, load_config

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    assert_no_processes(mark)


def referee(*args: str | Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def bot_file(folder: Path, name: str, marker: str, **keys: object) -> Path:
    """A bot file in ``folder`` for ``tests/bots/lowest_bot.py`` (run in that folder),
    with more top-level keys and ``[sandbox] read`` / ``[limits]`` tables."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = {k: keys.pop(k) for k in ("sandbox", "limits", "env") if k in keys}
    top = {
        "name": name,
        "command": [sys.executable, str(BOTS_DIR / "lowest_bot.py"), f"--marker={marker}"],
        "workdir": str(BOTS_DIR),
        **keys,
    }
    lines = [f"{k} = {json.dumps(v)}" for k, v in top.items()]
    for table, values in tables.items():
        assert isinstance(values, dict)
        lines += [f"[{table}]", *(f"{k} = {json.dumps(v)}" for k, v in values.items())]
    path = folder / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def refused_in_one_line(result: subprocess.CompletedProcess[str], out: Path, marker: str) -> str:
    """The one line of a refusal before anything started."""
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert not out.exists(), "nothing was started or written"
    assert not processes_with(marker)
    return lines[0]


def match(bots: list[Path], out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return referee(
        "match",
        *(x for b in bots for x in ("--bot", str(b))),
        *("--out", str(out), "--rules", "sticheln", "--startup-ms", "30000"),
        *flags,
    )


# -- a bot file asks ----------------------------------------------------------------------


def test_a_bot_file_asking_for_proc_is_refused_and_nothing_starts(
    tmp_path: Path, marker: str
) -> None:
    """The host's /proc would show every seat's STICHELN_TOKEN: the bot could play them
    all. Refused, whoever grants the rest."""
    hostile = bot_file(tmp_path / "hostile", "hostile", marker, sandbox={"read": ["/proc"]})
    honest = bot_file(tmp_path / "honest", "honest", marker)
    out = tmp_path / "out"
    line = refused_in_one_line(match([hostile, honest, honest], out, *READ_BOTS), out, marker)
    assert line.startswith(f"referee match: {hostile}: [sandbox] read = '/proc' can never")
    assert "the host's /proc" in line
    # Granted by the organiser too, /proc stays refused, and the grant is named.
    line = refused_in_one_line(
        match([hostile, honest, honest], out, *READ_BOTS, "--read", "/proc"), out, marker
    )
    assert line.startswith("referee match: --read '/proc' can never be given to a bot")
    # The same bot file in a tournament: refused before its first match.
    config = tmp_path / "t.toml"
    config.write_text(
        f'[tournament]\nname = "t"\n[sandbox]\nread = ["{BOTS_DIR}"]\n'
        f'[[bots]]\nfile = "{hostile}"\n[[bots]]\nfile = "{honest}"\n'
        f'[[bots]]\nfile = "{honest}"\n'
    )
    ran = referee("tournament", config)
    assert ran.returncode == 2 and not (tmp_path / "results").exists()
    assert ran.stderr.strip() == (
        f"referee tournament: {hostile}: [sandbox] read = '/proc' can never be given to a bot: "
        "it is the host's /proc (every process, the other seats' tokens)"
    )


@pytest.mark.parametrize("path", ["/proc/1", "/sys/kernel", "/dev/shm", "/run", "/"])
def test_no_one_may_grant_the_hosts_system_folders(path: str, tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    config.write_text(f'[sandbox]\nread = ["{path}"]\n[[bots]]\nname = "a"\ncommand = "x"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    message = str(refused.value)
    assert message.startswith(f"{config}: [sandbox] read = '{path}' can never be given to a bot")
    assert "\n" not in message


def test_a_bot_file_asking_for_tmp_is_refused_and_so_is_the_organisers_grant(
    tmp_path: Path, marker: str
) -> None:
    bots = tmp_path / "bots"
    asks = bot_file(bots, "asks", marker, sandbox={"read": ["/tmp"]})
    honest = bot_file(bots, "honest", marker)
    out = tmp_path / "out"
    line = refused_in_one_line(match([asks, honest, honest], out, *READ_BOTS), out, marker)
    assert line == (
        f"referee match: {asks}: [sandbox] read = '/tmp' can never be given to a bot: it holds "
        f"the referee's private socket folders (/tmp/{SOCKET_ROOT_PREFIX}*)"
    )
    # A folder of the machine's that no rule protects is outside the bot's folder: the
    # organiser's to grant, and said so.
    asks = bot_file(bots, "asks", marker, sandbox={"read": ["/etc"]})
    line = refused_in_one_line(match([asks, honest, honest], out, *READ_BOTS), out, marker)
    assert line.startswith(f"referee match: {asks}: [sandbox] read = '/etc' is outside the bot's")
    assert "--read for referee match" in line  # where the organiser would grant it
    asks = bot_file(bots, "asks", marker, sandbox={"read": ["/tmp"]})
    # /tmp holds the referee's private socket folders (and often the output folder).
    line = refused_in_one_line(
        match([asks, honest, honest], out, *READ_BOTS, "--read", "/tmp"), out, marker
    )
    assert line.startswith("referee match: --read '/tmp' can never be given to a bot: it holds")


def test_a_bot_file_asking_for_a_folder_above_the_output_is_refused(
    tmp_path: Path, marker: str
) -> None:
    """The output folder holds the records and logs (and a tournament's database and deal
    key): a bot file may not reach it by ``..``, nor may the organiser grant a folder
    holding it."""
    above = tmp_path / "event"
    out = above / "results"
    asks = bot_file(above / "bots" / "a", "asks", marker, sandbox={"read": ["../.."]})
    honest = bot_file(above / "bots" / "b", "honest", marker)
    line = refused_in_one_line(match([asks, honest, honest], out, *READ_BOTS), out, marker)
    assert f"[sandbox] read = '../..' ({above}) is outside the bot's folder" in line
    line = refused_in_one_line(
        match([honest, honest, honest], out, *READ_BOTS, "--read", str(above)), out, marker
    )
    assert line == (
        f"referee match: --read '{above}' can never be given to a bot: it holds the output "
        f"folder {out}"
    )
    # A bot's own folder holding the output folder is refused as well.
    inside = bot_file(above, "inside", marker, workdir=".")
    line = refused_in_one_line(match([inside, honest, honest], out, *READ_BOTS), out, marker)
    assert line.startswith(f"referee match: {inside}: workdir = '{above}' can never be given")


def test_a_symlink_in_the_bots_folder_pointing_outside_is_refused(
    tmp_path: Path, marker: str
) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (folder / "data").symlink_to(secret)
    asks = bot_file(folder, "asks", marker, sandbox={"read": ["data"]})
    honest = bot_file(tmp_path / "honest", "honest", marker)
    out = tmp_path / "out"
    line = refused_in_one_line(match([asks, honest, honest], out, *READ_BOTS), out, marker)
    assert f"[sandbox] read = 'data' ({secret}) is outside the bot's folder {folder}" in line
    # Without the link the same name is the bot's own.
    (folder / "data").unlink()
    (folder / "data").mkdir()
    assert load_bot(asks, Grants(read=(BOTS_DIR,))).read == (folder / "data", BOTS_DIR)


def test_a_bot_files_own_folder_and_paths_inside_it_need_no_grant(tmp_path: Path) -> None:
    (tmp_path / "book").mkdir()
    path = tmp_path / "b.toml"
    path.write_text('name = "b"\ncommand = "x"\n[sandbox]\nread = ["book", "./book/../book"]\n')
    assert load_bot(path).read == (tmp_path / "book",) * 2
    # Its folder, named through a link to it, is still its folder.
    link = tmp_path.parent / f"{tmp_path.name}-link"
    link.symlink_to(tmp_path)
    try:
        assert load_bot(link / "b.toml").workdir == tmp_path
    finally:
        link.unlink()


# -- the organiser grants -----------------------------------------------------------------


def test_the_organisers_grant_lets_a_bot_run_from_a_folder_outside_its_files(
    tmp_path: Path, marker: str
) -> None:
    """A bot file whose code is in another folder: refused alone, played with the grant
    (the bot's sandbox shows it the granted folder)."""
    bots = [bot_file(tmp_path / "files", n, marker) for n in ("ann", "ben", "cy")]
    out = tmp_path / "out"
    line = refused_in_one_line(match(bots, out), out, marker)
    assert line.startswith(f"referee match: {bots[0]}: workdir = '{BOTS_DIR}' is outside the bot")
    played = match(bots, out, "--read", str(BOTS_DIR))
    assert played.returncode == 0, played.stderr
    assert "sandbox: bubblewrap" in played.stderr
    (record,) = (out / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "completed"
    assert not [x for x in lines if x.get("type") == "fault"]


def test_a_tournament_grants_paths_to_every_bot_or_to_one_entry(tmp_path: Path) -> None:
    files = tmp_path / "files"
    (tmp_path / "shared").mkdir()
    (tmp_path / "book").mkdir()
    for name in ("a", "b", "c"):
        bot_file(
            files, name, "m", sandbox={"read": [str(tmp_path / "book")]} if name == "a" else {}
        )
    base = (
        '[tournament]\nname = "t"\ntable_size = 3\n'
        f'[sandbox]\nread = ["{BOTS_DIR}", "shared"]\n'
        '[[bots]]\nfile = "files/a.toml"\n'
    )
    rest = '[[bots]]\nfile = "files/b.toml"\n[[bots]]\nfile = "files/c.toml"\n'
    path = tmp_path / "t.toml"
    path.write_text(base + rest)
    with pytest.raises(ConfigError, match=r"files/a\.toml: \[sandbox\] read = '.*book' is outside"):
        load_config(path)
    path.write_text(base + '[bots.sandbox]\nread = ["book"]\n' + rest)
    config = load_config(path)
    a, b, _ = config.bots
    assert set(a.read) == {tmp_path / "book", BOTS_DIR, tmp_path / "shared"}
    assert set(b.read) == {BOTS_DIR, tmp_path / "shared"}  # the entry's grant is a's alone
    # What a bot may read decides its results: a changed grant refuses a resume.
    path.write_text(base.replace(', "shared"', "") + '[bots.sandbox]\nread = ["book"]\n' + rest)
    changed = load_config(path)
    assert changed.fingerprint_hash() != config.fingerprint_hash()
    changes = describe_changes(config.fingerprint(), changed.fingerprint())
    assert any(c.startswith("bots[a].read") for c in changes), changes


def test_a_tournament_may_not_grant_its_database_or_deal_key(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    key = tmp_path / "keys" / "deal.key"
    key.parent.mkdir()
    key.write_text("00" * 32)
    body = (
        '[tournament]\nname = "t"\ntable_size = 3\nout = "out"\ndatabase = "data/t.db"\n'
        '[[bots]]\nname = "a"\ncommand = "x"\nworkdir = "bots"\n[bots.sandbox]\nread = ["{}"]\n'
        '[[bots]]\nname = "b"\ncommand = "x"\nworkdir = "bots"\n'
        '[[bots]]\nname = "c"\ncommand = "x"\nworkdir = "bots"\n'
    )
    path = tmp_path / "t.toml"
    path.write_text(body.format("data"))
    with pytest.raises(
        ConfigError,
        match=r"read = '.*/data' can never be given to a bot: it holds the database",
    ):
        load_config(path)
    path.write_text(body.format("keys"))
    config = load_config(path)  # the key file is known only on the command line
    dry = referee("tournament", path, "--deal-key-file", key, "--dry-run")
    assert dry.returncode == 2
    assert (
        f"[sandbox] read = '{key.parent}' can never be given to a bot: it holds the deal key file {key}"
        in dry.stderr
    )
    assert config.bots[0].read == (key.parent,)


def test_a_league_or_comparison_file_may_not_grant_proc(tmp_path: Path) -> None:
    from referee.compare.config import CompareConfigError, Overrides, load_compare
    from referee.league.config import league_from_table

    with pytest.raises(ConfigError, match=r"\[sandbox\] read = '/proc' can never be given"):
        league_from_table(
            {"league": {"name": "l"}, "sandbox": {"read": ["/proc"]}},
            tmp_path,
            tmp_path / "l.toml",
            {"STICHELN_ADMIN_TOKEN": "x" * 32},
        )
    compare = tmp_path / "c.toml"
    compare.write_text('[sandbox]\nread = ["/proc/1"]\n')
    with pytest.raises(CompareConfigError, match=r"\[sandbox\] read = '/proc/1' can never"):
        load_compare(compare, Overrides())


def test_an_output_folder_inside_what_every_bot_reads_is_refused(
    tmp_path: Path, marker: str
) -> None:
    # The referee's interpreter is bound into every sandbox: records and the database there
    # would be every bot's to read during play (a non-root referee's bots share its uid).
    honest = bot_file(tmp_path / "h", "honest", marker)
    out = Path(sys.prefix).resolve() / f"results-{marker}"
    line = refused_in_one_line(match([honest] * 3, out, *READ_BOTS), out, marker)
    assert line == (
        f"referee match: the output folder {out} lies inside {Path(sys.prefix).resolve()}, "
        "which every started bot may read (the system, or the referee's interpreter and "
        "packages); put it elsewhere"
    )
    # The same bots with their output elsewhere play.
    played = match([honest] * 3, tmp_path / "out", *READ_BOTS)
    assert played.returncode == 0, played.stderr


# -- limits -------------------------------------------------------------------------------


def test_a_cpu_quota_of_the_organiser_holds_bots_that_ask_for_none(
    tmp_path: Path, marker: str
) -> None:
    # cpus = 0 is no quota: more than any maximum, so under an organiser's quota a bot file
    # that says nothing gets that quota, and one that asks for none is refused.
    quiet = bot_file(tmp_path / "q", "quiet", marker)
    unbound = bot_file(tmp_path / "u", "unbound", marker, limits={"cpus": 0})
    modest = bot_file(tmp_path / "m", "modest", marker, limits={"cpus": 0.5})
    capped = Grants(read=(BOTS_DIR,), max_limits=MaxLimits(cpus=1.0))
    assert load_bot(quiet, Grants(read=(BOTS_DIR,))).limits.cpus == 0
    assert load_bot(quiet, capped).limits.cpus == 1.0
    assert load_bot(modest, capped).limits.cpus == 0.5
    with pytest.raises(BotConfigError) as refused:
        load_bot(unbound, capped)
    assert "[limits] cpus = 0.0 (no quota) is over the organiser's maximum of 1.0" in str(
        refused.value
    )
    assert load_bot(unbound, Grants(read=(BOTS_DIR,))).limits.cpus == 0


def test_a_bot_files_limits_are_held_to_the_organisers_maxima(tmp_path: Path, marker: str) -> None:
    greedy = bot_file(tmp_path / "g", "greedy", marker, limits={"memory_mb": 8192})
    honest = bot_file(tmp_path / "h", "honest", marker)
    out = tmp_path / "out"
    line = refused_in_one_line(match([greedy, honest, honest], out, *READ_BOTS), out, marker)
    assert line == (
        f"referee match: {greedy}: [limits] memory_mb = 8192 is over the organiser's maximum "
        "of 4096 (--max-limit KEY=N); ask for at most 4096, or have the organiser raise it"
    )
    spec = load_bot(greedy, Grants(read=(BOTS_DIR,), max_limits=MaxLimits(memory_mb=8192)))
    assert spec.limits.memory_mb == 8192
    bad = match([greedy, honest, honest], out, *READ_BOTS, "--max-limit", "memory=1")
    assert bad.returncode == 2 and "--max-limit: unknown key 'memory'" in bad.stderr
    config = tmp_path / "t.toml"
    config.write_text(
        '[tournament]\nname = "t"\n[sandbox]\n'
        f'read = ["{BOTS_DIR}"]\n[sandbox.max_limits]\ncpu_seconds = 60\n'
        '[[bots]]\nfile = "g/greedy.toml"\n[[bots]]\nfile = "h/honest.toml"\n'
        '[[bots]]\nfile = "h/honest.toml"\n'
    )
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert "memory_mb = 8192 is over the organiser's maximum of 4096" in str(refused.value)
    assert f"[sandbox.max_limits] in {config}" in str(refused.value)


# -- the policy as data -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/proc", "it is the host's /proc"),
        ("/proc/1/environ", "it is inside the host's /proc"),
        ("/", "it holds the host's /proc"),
        ("/srv/event", "it holds the output folder /srv/event/out"),
        ("/srv/event/out/logs", "it is inside the output folder"),
        ("/srv/db", "it holds the database /srv/db/t.db"),
        ("/srv/db/t.db-wal", "it is inside the database's folder /srv/db"),
        ("/srv/db/t.db", "it is the database /srv/db/t.db"),
        ("/srv/keys/deal.key", "it is the deal key file"),
        ("/srv/event/bots", ""),
        ("/srv/keys", "it holds the deal key file"),
        ("/usr/lib", ""),
    ],
)
def test_what_no_bot_may_read(path: str, why: str) -> None:
    rules = never_readable(Path("/srv/event/out"), "/srv/db/t.db", Path("/srv/keys/deal.key"))
    reason = why_never(Path(path), rules)
    assert reason.startswith(why) if why else reason == ""


def test_the_referees_socket_folders_are_never_readable() -> None:
    tmp = Path(os.environ.get("TMPDIR", "/tmp")).resolve()
    rules = never_readable()
    assert why_never(tmp / "sticheln-sockets-abc" / "1", rules).startswith("it is inside")
    assert why_never(tmp, rules).startswith("it holds the referee's private socket folders")
    assert why_never(tmp / "my-bot", rules) == ""
    # A URL database has no folder to protect.
    assert len(never_readable(database="postgresql://h/db")) == len(rules)


def test_an_external_bot_file_is_not_held_to_folder_rules(tmp_path: Path) -> None:
    path = tmp_path / "remote.toml"
    path.write_text('name = "remote"\ntoken = "t" \nworkdir = "/"\n')
    assert load_bot(path).external
    with pytest.raises(BotConfigError, match="can never be given to a bot"):
        path.write_text('name = "x"\ncommand = "x"\nworkdir = "/"\n')
        load_bot(path)


# -- what starts the bot outside its sandbox ----------------------------------------------


def test_a_bot_file_may_not_set_what_the_dynamic_loader_reads(tmp_path: Path) -> None:
    """The bot's environment is also that of setpriv, which drops a root referee's rights
    to the bot's inside the sandbox: an LD_PRELOAD would load the author's library there,
    as root, before the drop."""
    path = tmp_path / "b.toml"
    for name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "GCONV_PATH", "GLIBC_TUNABLES"):
        path.write_text(f'name = "b"\ncommand = "./bot"\n[env]\n{name} = "x"\n')
        with pytest.raises(BotConfigError) as refused:
            load_bot(path)
        assert str(refused.value) == (
            f"{path}: [env] {name} is not allowed: the program that starts the bot in its "
            "sandbox (as root) would read it too; set it in the command instead, e.g. "
            f'command = ["env", "{name}=...", "./bot"]'
        )
    # Trusted bots without a sandbox may; so may the bot's own variables.
    path.write_text('name = "b"\ncommand = "./bot"\n[env]\nLD_PRELOAD = "x"\nMINE = "1"\n')
    assert load_bot(path, Grants(sandboxed=False)).env["LD_PRELOAD"] == "x"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("TZ", "/some/path"),
        ("TZ", ":/dev/kmsg"),
        ("TZ", "../../../dev/kmsg"),
        ("TZ", "Europe/../../../../dev/kmsg"),
        ("LANG", "/tmp/locale"),
        ("LC_ALL", "./my-locale/C"),
        ("LANGUAGE", "de:../../../tmp/x"),
    ],
)
def test_a_bot_files_time_zone_and_locale_are_names_not_paths(
    tmp_path: Path, key: str, value: str
) -> None:
    """The C library opens the file a ``TZ`` or a locale names, in whatever process reads
    it (bubblewrap and setpriv start the bot as root): a bot file gives a name."""
    path = tmp_path / "b.toml"
    path.write_text(f'name = "b"\ncommand = "./bot"\n[env]\n{key} = {json.dumps(value)}\n')
    with pytest.raises(BotConfigError) as refused:
        load_bot(path)
    assert str(refused.value) == (
        f"{path}: [env] {key} = {value!r} is a path; a time zone or locale is a name the "
        'system resolves (TZ = "Europe/Berlin", LANG = "C.UTF-8")'
    )
    assert load_bot(path, Grants(sandboxed=False)).env[key] == value, "trusted bots may"


def test_time_zone_and_locale_names_pass(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    for key, value in (
        ("TZ", ":Europe/Berlin"),
        ("TZ", "Europe/Berlin"),
        ("TZ", "CET-1CEST,M3.5.0,M10.5.0/3"),
        ("TZ", "UTC"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "de_DE.UTF-8@euro"),
        ("LANGUAGE", "de:en"),
    ):
        path.write_text(f'name = "b"\ncommand = "./bot"\n[env]\n{key} = {json.dumps(value)}\n')
        assert load_bot(path).env[key] == value


def test_the_launcher_reads_nothing_the_bots_environment_names(tmp_path: Path) -> None:
    """The launcher runs as the referee's user (root) outside the jail: it starts with an
    environment of its own, so a ``TZ`` naming a FIFO (Python's start opens it) holds
    nothing up; bubblewrap, which it becomes, starts with a fixed one too, and the bot
    still gets its whole environment. Built without the bot-file loader, whose check
    would refuse it, as a bug there would let it through."""
    folder = tmp_path / "bot"
    folder.mkdir()
    folder.chmod(0o755)
    tmp_path.chmod(0o755)
    fifo = tmp_path / "tz"  # outside the bot's folder: the bot's own Python would wait too
    os.mkfifo(fifo)
    log = tmp_path / "tz.log"
    spec = BotSpec(
        name="tz",
        command=(
            sys.executable,
            "-c",
            "import os, time\n"
            "print('TZ', os.environ['TZ'], os.environ['MINE'], flush=True)\n"
            "time.sleep(60)  # alive until stopped, for its sandbox to be looked at",
        ),
        workdir=folder,
        env={"TZ": str(fifo), "LANG": str(folder), "MINE": "kept"},
    )

    async def main() -> tuple[str, bytes]:
        sandbox = Sandbox()
        user = sandbox.lease_user()
        try:
            policy = sandbox.policy(folder, (), None, user.ids if user else None)
            process = await jail.start(spec, "unix:/nowhere", "t", log, policy=policy)
            try:
                deadline = time.monotonic() + 30
                # The whole line: the bot's print may reach its log in pieces.
                while "\n" not in (log.read_text() if log.exists() else "").partition("TZ ")[2]:
                    assert process.returncode is None, process.describe_exit()
                    assert time.monotonic() < deadline, "the bot did not start"
                    await asyncio.sleep(0.05)
                # The launcher's process is bubblewrap now, started as the launcher says.
                environ = Path(f"/proc/{process.proc.pid}/environ").read_bytes()
            finally:
                await process.stop(grace=0)
            return log.read_text(), environ
        finally:
            if user is not None:
                user.release()

    said, environ = run(main())
    assert f"TZ {fifo} kept" in said
    assert environ == launch.environment_bytes(launch.ENVIRONMENT)


def test_the_launcher_hands_on_the_environment_it_is_given_on_a_descriptor() -> None:
    env = {"A": "1", "TZ": "Europe/Berlin", "EMPTY": "", "EQUALS": "x=y", "UNICODE": "é"}
    fd = program_fd(launch.environment_bytes(env))
    try:
        done = subprocess.run(
            [
                *launch.command(),
                "--cpu-seconds=10",
                "--memory-mb=512",
                f"--referee-pid={os.getpid()}",
                f"--env-fd={fd}",
                "--",
                "/usr/bin/env",
                "-0",
            ],
            env={**launch.ENVIRONMENT, "NOT_PASSED": "1"},
            pass_fds=(fd,),
            capture_output=True,
            timeout=30,
            check=True,
        )
    finally:
        os.close(fd)
    assert launch.read_environment(program_fd(done.stdout)) == env


#: The launcher's required arguments.
_LAUNCH_NEEDS = ["--cpu-seconds=1", "--memory-mb=1", "--env-fd=0", "--referee-pid=1"]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--cpu-seconds=ten"], "unknown option or not a number: '--cpu-seconds=ten'"),
        (["--memory-mb=512", "--env-fd=0", "--referee-pid=1"], "missing --cpu-seconds"),
        (_LAUNCH_NEEDS, "no bot command"),
        ([*_LAUNCH_NEEDS, "--pass-fd=x", "--", "true"], "--pass-fd takes a descriptor number"),
        (["cpu"], "unexpected argument 'cpu'"),
    ],
)
def test_the_launcher_refuses_arguments_it_does_not_know_in_one_line(
    arguments: list[str], said: str
) -> None:
    done = subprocess.run(
        [*launch.command(), *arguments], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    first = done.stderr.splitlines()[0]
    assert first.startswith("referee.jail.launch: ") and said in first, done.stderr


def test_the_launcher_starts_with_the_standard_library_alone() -> None:
    """Started as the referee starts it before every bot: neither ``site`` (the
    virtualenv's path hooks) nor the referee package is imported, only its own file."""
    probe = (
        "import sys; print(sorted(m for m in sys.modules if m in ('site', 'referee', 'argparse')))"
    )
    boot = launch.command()
    done = subprocess.run(
        [*boot[:-1], boot[-1].replace("launch.main()", probe)],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_a_referee_package_in_the_bots_folder_is_not_run_by_its_launcher(
    tmp_path: Path, marker: str
) -> None:
    """The launcher runs in the bot's folder before the sandbox exists; ``python -m``
    would import a ``referee`` package from there first, as the referee's user."""
    folder = tmp_path / "bot"
    (folder / "referee" / "match").mkdir(parents=True)
    escaped = tmp_path / "escaped"
    (folder / "referee" / "__init__.py").write_text(
        f"open({str(escaped)!r}, 'w').write('ran outside the sandbox')\n"
    )
    (folder / "referee" / "match" / "__init__.py").write_text("")
    sly = bot_file(folder, "sly", marker, workdir=".", env={"PYTHONPATH": str(folder)})
    honest = bot_file(tmp_path / "honest", "honest", marker)
    out = tmp_path / "out"
    played = match([sly, honest, honest], out, *READ_BOTS)
    assert played.returncode == 0, played.stderr
    assert not escaped.exists(), "the bot folder's code ran outside the sandbox"
    (record,) = (out / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert lines[-1]["reason"] == "completed"
    assert not [x for x in lines if x.get("type") == "fault"]


def test_a_path_swapped_for_a_link_after_the_check_is_not_bound(tmp_path: Path) -> None:
    """bubblewrap follows links when it binds: a folder the bot file named, replaced by a
    link to the host's /proc between the check and the start, is refused at the start."""
    from referee.match.pool import moved_path

    (tmp_path / "data").mkdir()
    path = tmp_path / "b.toml"
    path.write_text('name = "b"\ncommand = "./bot"\n[sandbox]\nread = ["data"]\n')
    spec = load_bot(path)
    assert moved_path(spec) == ""
    (tmp_path / "data").rmdir()
    (tmp_path / "data").symlink_to("/proc")
    assert moved_path(spec) == (
        f"{tmp_path / 'data'} now leads to /proc: a bot's folder and the paths it reads may "
        "not be replaced by links while the referee runs"
    )
