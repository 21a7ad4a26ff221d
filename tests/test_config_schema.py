"""Config files: the shipped JSON Schemas, the files that name them, and the one-line errors
of each file type (tournament, league, bot, comparison)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import jsonschema
import pytest

from referee.compare.config import CompareConfigError, Overrides, load_compare
from referee.config import KINDS, schema, tables
from referee.config.bots import load_bot
from referee.jail.bots import BotConfigError
from referee.jail.sandbox import MODES as SANDBOX_MODES
from referee.jail.sandbox import STRONGEST
from referee.league.config import load_league_config
from referee.rules import PRESETS
from referee.tournament.config import MODES, ConfigError, load_config

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from gen_schemas import MODELS  # noqa: E402  (tools/ is no package)

TOKEN = {"STICHELN_ADMIN_TOKEN": "x" * 32}
#: Every complete config file of the repository that an editor may open.
CONFIG_FILES = sorted(
    [
        *ROOT.glob("examples/*.toml"),
        *ROOT.glob("sample_bots/*.toml"),
        *ROOT.glob("deploy/**/*.toml"),
        *ROOT.glob("benchmarks/bots/*.toml"),
    ]
)


def _schema_line(path: Path) -> Path:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("#:schema "), f"{path}: the first line is not a #:schema line"
    return (path.parent / first.removeprefix("#:schema ")).resolve()


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_shipped_schemas_are_made_from_the_models(kind: str) -> None:
    assert schema.shipped(kind) == schema.text(kind, MODELS[kind]), (
        "stale schema: run .venv/bin/python tools/gen_schemas.py"
    )
    jsonschema.Draft7Validator.check_schema(json.loads(schema.shipped(kind)))


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_file_names_its_schema_and_passes_it(path: Path) -> None:
    target = _schema_line(path)
    assert target.parent == ROOT / "referee" / "config" / "schemas"
    assert target.exists(), f"{path}: #:schema names a missing file {target}"
    validator = jsonschema.Draft7Validator(json.loads(target.read_text(encoding="utf-8")))
    errors = [e.message for e in validator.iter_errors(tomllib.loads(path.read_text()))]
    assert errors == []


def test_the_examples_and_sample_bots_are_all_covered() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in CONFIG_FILES}
    assert {"examples/league.toml", "examples/compare.toml", "sample_bots/random.toml"} <= names
    kinds = {_schema_line(p).name.removesuffix(".schema.json") for p in CONFIG_FILES}
    assert kinds == set(KINDS)


def test_referee_schema_prints_the_shipped_schema() -> None:
    for kind in KINDS:
        proc = subprocess.run(
            [sys.executable, "-m", "referee.cli", "schema", kind],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == schema.shipped(kind)
        assert json.loads(proc.stdout)["title"] == KINDS[kind]
    bad = subprocess.run(
        [sys.executable, "-m", "referee.cli", "schema", "game"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "invalid choice: 'game'" in bad.stderr


def test_the_schema_refuses_what_the_loader_refuses() -> None:
    validator = jsonschema.Draft7Validator(json.loads(schema.shipped("tournament")))
    good = tomllib.loads((ROOT / "examples" / "league.toml").read_text())
    assert validator.is_valid(good)
    for change in (
        {"tournament": {"seats": 3}},
        {"tournament": {"mode": "swiss"}},
        {"tournament": {"parallel": 0}},
        {"clock": {"decision_ms": "1s"}},
        {"rules": {"deck": "tarot"}},
        {"sandbox": {"mode": "docker"}},
        {"bots": [{"file": "a.toml", "name": "a"}]},
        {"bots": [{"name": "a", "command": "x", "seats": 65}]},
    ):
        assert not validator.is_valid({**good, **change}), change


def test_the_models_name_the_same_values_as_the_code_they_feed() -> None:
    assert typing.get_args(tables.Preset) == tuple(PRESETS)
    assert typing.get_args(tables.SandboxMode) == (*SANDBOX_MODES, STRONGEST)
    tournament = schema.generate("tournament", MODELS["tournament"])["definitions"][
        "TournamentTable"
    ]
    assert tuple(tournament["properties"]["mode"]["enum"]) == MODES


# -- one-line errors, a file type at a time ------------------------------------------------

BOTS = "".join(f'[[bots]]\nname = "b{i}"\ncommand = ["python3", "bot.py"]\n' for i in range(4))


def _refused(error: type[Exception], load: typing.Callable[[Path], object], path: Path) -> str:
    with pytest.raises(error) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ") or message.startswith(f"{path} [[bots]]")
    return message.removeprefix(f"{path}")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[tournament]\nsize = 3\n", ": [tournament] has unknown key 'size'; allowed: name, seed,"),
        (
            "[tournaments]\n",
            ": unknown table [tournaments]; allowed: [tournament], [rules], "
            "[clock], [sandbox], [[bots]]",
        ),
        (
            '[tournament]\nseed = "7"\n',
            ": [tournament] seed = '7' is not allowed; allowed: a whole number from 0 to "
            "18446744073709551615",
        ),
        (
            "[tournament]\nparallel = 65\n",
            ": [tournament] parallel = 65 is not allowed; allowed: a whole number from 1 to 64",
        ),
        (
            "[tournament]\nparallel = true\n",
            ": [tournament] parallel = true is not allowed; allowed: a whole number from 1 to 64",
        ),
        (
            '[tournament]\nname = "my league"\n',
            ": [tournament] name = 'my league' is not allowed; allowed: letters, digits, '-', '_', '.'",
        ),
        (
            '[rules]\ntrump_rule = "lowest"\n',
            ": [rules] trump_rule = 'lowest' is not allowed; allowed: 'highest', 'last_suit'",
        ),
        (
            "[rules]\nrounds = 0\n",
            ": [rules] rounds = 0 is not allowed; allowed: 'players' or a whole number >= 1",
        ),
        (
            "[rules]\nlong_hands_3p = true\n",
            ": [rules] long_hands_3p: true is not allowed with deck 'suits_per_player'; "
            "allowed only with deck 'french_zero_ace'",
        ),
        (
            "[clock]\ntime_bank_ms = -1\n",
            ": [clock] time_bank_ms = -1 is not allowed; allowed: a whole number of milliseconds >= 0",
        ),
        ('sandbox = "none"\n', ": [sandbox] must be a table"),
        (
            "[tournament]\ndatabase = 5\n",
            ": [tournament] database = 5 is not allowed; allowed: a path (relative to this "
            "file's folder) or a postgresql:// URL",
        ),
        (
            '[[bots]]\nfile = "x.toml"\nname = "x"\n',
            " [[bots]] entry 1: give either 'file' or an inline bot, not both",
        ),
        (
            '[[bots]]\nname = "x"\ncommand = "x"\n[bots.limits]\nmemory_mb = 0\n',
            " [[bots]] entry 1: [limits] memory_mb = 0 is not allowed; allowed: a whole number >= 1",
        ),
    ],
)
def test_a_broken_tournament_file_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(text + BOTS)
    message = _refused(ConfigError, load_config, path)
    assert message.startswith(says), message


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[league]\nprot = 1\n", ": [league] has unknown key 'prot'; allowed: name, seed,"),
        (
            "[league]\nport = 65536\n",
            ": [league] port = 65536 is not allowed; allowed: a whole number from 0 to 65535",
        ),
        (
            '[league]\nweb_port = "8080"\n',
            ": [league] web_port = '8080' is not allowed; allowed: a whole number from 0 to 65535",
        ),
        (
            "[league]\nhandshake_timeout_s = 0\n",
            ": [league] handshake_timeout_s = 0 is not allowed; allowed: a number >= 0.1",
        ),
        (
            '[league]\nfairplay = "off"\n',
            ": [league] fairplay = 'off' is not allowed; allowed: true, false",
        ),
        (
            '[league]\ntls_key = "k.pem"\n',
            ": [league] tls_cert and tls_key go together; give both or neither",
        ),
        (
            '[sandbox]\nmode = "docker"\n',
            ": [sandbox] mode = 'docker' is not allowed; allowed: 'bubblewrap', 'gvisor', 'none', 'strongest'",
        ),
        (
            "[[bots]]\n",
            ": unknown table [bots]; allowed: [league], [rules], [clock], [sandbox], [seating]",
        ),
    ],
)
def test_a_broken_league_file_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "l.toml"
    path.write_text(text)
    message = _refused(ConfigError, lambda p: load_league_config(p, TOKEN), path)
    assert message.startswith(says), message


def test_a_league_database_is_a_path_from_the_files_folder_or_a_url(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "l.toml"
    path.parent.mkdir()
    path.write_text('[league]\ndatabase = "../data/league.db"\n')
    assert load_league_config(path, TOKEN).database == tmp_path / "data" / "league.db"
    url = "postgresql://league@127.0.0.1:5432/sticheln"
    path.write_text(f'[league]\ndatabase = "{url}"\n')
    assert load_league_config(path, TOKEN).database == url
    path.write_text('[league]\ndatabase = "postgres://h/db"\n')
    assert load_league_config(path, TOKEN).database == "postgres://h/db"
    path.write_text("[league]\n")
    assert (
        load_league_config(path, TOKEN).database
        == tmp_path / "conf" / "results" / "l" / "league.db"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            'name = "b"\ncommand = "x"\ncomand = "y"\n',
            ": unknown key 'comand'; allowed: name, command, workdir, env, token, owner, limits, "
            "seats, sandbox",
        ),
        ('command = "x"\n', ": name is required; allowed: a non-empty string of printable"),
        (
            # An escape sequence in a name would rewrite the organiser's terminal.
            'name = "ok\\u001b[2K\\rwinner"\ncommand = "x"\n',
            ": name = 'ok\\x1b[2K\\rwinner' is not allowed; allowed: a non-empty string of "
            "printable characters",
        ),
        (
            'name = "b"\ncommand = 3\n',
            ": command = 3 is not allowed; allowed: a string or a list of strings",
        ),
        (
            'name = "b"\ncommand = "x"\nseats = 65\n',
            ": seats = 65 is not allowed; allowed: a whole number from 1 to 64",
        ),
        (
            'name = "b"\ncommand = "x"\n[env]\nDEBUG = 1\n',
            ": env = {'DEBUG': 1} is not allowed; allowed: a table of strings",
        ),
        (
            'name = "b"\ncommand = "x"\n[limits]\ncpu = 5\n',
            ": [limits] has unknown key 'cpu'; allowed: cpu_seconds, memory_mb",
        ),
        ('name = "b"\ncommand = "x"\n[sandbox]\nread = ["missing"]\n', ": [sandbox] read = '"),
        ('name = "b"\n', ": give a 'command' to start, or a 'token' for an external bot"),
        (
            'name = "b"\ncommand = "x"\n[env]\nSTICHELN_SEATS = "9"\n',
            ": [env] STICHELN_SEATS is not allowed: the STICHELN_* variables are the referee's",
        ),
    ],
)
def test_a_broken_bot_file_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "b.toml"
    path.write_text(text)
    message = _refused(BotConfigError, load_bot, path)
    assert message.startswith(says), message
    if "missing" in text:
        assert message.endswith(f"{tmp_path / 'missing'}' does not exist")


def test_a_bots_paths_are_read_from_its_files_folder(tmp_path: Path) -> None:
    (tmp_path / "bots" / "jdk").mkdir(parents=True)
    path = tmp_path / "bots" / "b.toml"
    path.write_text(
        'name = "b"\ncommand = "x"\nworkdir = "sub/../run"\n[sandbox]\nread = ["jdk"]\n'
    )
    bot = load_bot(path)
    assert bot.workdir == tmp_path / "bots" / "run" and bot.read == (tmp_path / "bots" / "jdk",)


RANDOM = str(ROOT / "sample_bots" / "random.toml")


@pytest.mark.parametrize(
    ("text", "flags", "says"),
    [
        ("[compare]\nmatchs = 10\n", {}, ": [compare] has unknown key 'matchs'; allowed: name,"),
        (
            "[compare]\nmatches = 1\n",
            {},
            ": [compare] matches = 1 is not allowed; allowed: a whole number from 2 to 10000000",
        ),
        (
            "[compare]\nopponents = 'random.toml'\n",
            {},
            ": [compare] opponents = 'random.toml' is not allowed; allowed: a list of strings",
        ),
        (
            "[compare.sprt]\nalpha = 0.5\n",
            {},
            ": [compare.sprt] alpha = 0.5 is not allowed; allowed: a number above 0 and below 0.5",
        ),
        (
            "[compare.sprt]\nelo0 = 0\nupper = 3\n",
            {},
            ": [compare.sprt] give the bounds either as lower/upper (points per match) or as "
            "elo0/elo1 (Elo), not both",
        ),
        (
            "[compare]\nsprt = true\n",
            {},
            ": [compare] sprt = true is not allowed; allowed: a table or false",
        ),
        (
            "[rules]\npreset = 'bridge'\n",
            {},
            ": [rules] preset = 'bridge' is not allowed; allowed: 'sticheln', 'amigo', "
            "'sore-spot', 'french-2-14', 'stick-em-secret'",
        ),
    ],
)
def test_a_broken_comparison_file_is_one_line(
    tmp_path: Path, text: str, flags: dict[str, object], says: str
) -> None:
    path = tmp_path / "c.toml"
    bots = f'candidate = "{RANDOM}"\nbaseline = "{RANDOM}"\n'
    if "[compare]" in text:
        path.write_text(text.replace("[compare]\n", "[compare]\n" + bots, 1))
    else:
        path.write_text(f'[compare]\n{bots}opponents = ["{RANDOM}"]\n{text}')
    message = _refused(CompareConfigError, lambda p: load_compare(p, Overrides(**flags)), path)  # type: ignore[arg-type]
    assert message.startswith(says), message


def test_a_flag_that_breaks_the_rules_is_named_by_its_flag(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[compare]\ncandidate = "{RANDOM}"\nbaseline = "{RANDOM}"\n')
    for flags, says in (
        (
            Overrides(parallel=0),
            "--parallel = 0 is not allowed; allowed: a whole number from 1 to 64",
        ),
        (Overrides(rules="bridge"), "--rules = 'bridge' is not allowed; allowed: 'sticheln',"),
        (
            Overrides(sprt=["alpha=0.9"]),
            "--sprt alpha = 0.9 is not allowed; allowed: a number above 0",
        ),
        (Overrides(startup_ms=0), "--startup-ms = 0 is not allowed; allowed: a whole number of"),
    ):
        with pytest.raises(CompareConfigError) as info:
            load_compare(path, flags)
        assert str(info.value).startswith(says), str(info.value)
