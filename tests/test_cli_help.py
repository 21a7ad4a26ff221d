"""Every ``referee`` command and flag says what it is for in ``--help``."""

from __future__ import annotations

import argparse
import importlib.metadata

import pytest

from referee.cli import build_parser, main


def _subparsers(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _walk(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    sub = _subparsers(parser)
    if sub is not None:
        for name, child in sub.choices.items():
            found += _walk(child, f"{path} {name}")
    return found


def undocumented(parser: argparse.ArgumentParser) -> list[str]:
    """Each command without a help line or description, each flag or argument without help."""
    missing = []
    for path, command in _walk(parser, "referee"):
        sub = _subparsers(command)
        if sub is not None:
            helps = {a.dest: a.help for a in sub._choices_actions}
            for name, child in sub.choices.items():
                if not helps.get(name) or not child.description:
                    missing.append(f"{path} {name}: no help line and description")
        for action in command._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                what = "/".join(action.option_strings) or action.dest
                missing.append(f"{path} {what}: no help")
    return missing


def test_every_command_and_flag_has_help() -> None:
    assert undocumented(build_parser()) == []


def test_the_walk_finds_a_flag_without_help() -> None:
    parser = argparse.ArgumentParser(prog="referee")
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("thing", help="do a thing", description="Do a thing.")
    child.add_argument("--quiet", action="store_true")
    bare = sub.add_parser("bare")
    bare.add_argument("file", help="a file")
    assert undocumented(parser) == [
        "referee bare: no help line and description",
        "referee thing --quiet: no help",
    ]


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert (
        capsys.readouterr().out.strip()
        == f"referee {importlib.metadata.version('sticheln-referee')}"
    )


def test_an_unknown_flag_prints_the_commands_usage_and_the_likely_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["tournament", "--paralel=2", "t.toml"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: referee tournament ")
    assert "{demo," not in err  # not the list of every command
    assert err.rstrip().endswith("unrecognized arguments: --paralel=2; did you mean --parallel?")


def test_an_unknown_flag_far_from_any_says_only_that_it_is_unknown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "x.jsonl", "--zzzz"])
    err = capsys.readouterr().err
    assert err.startswith("usage: referee replay ")
    assert err.rstrip().endswith("referee replay: error: unrecognized arguments: --zzzz")


@pytest.mark.parametrize(
    ("argv", "ending"),
    [
        # An unknown flag besides a missing argument: argparse names only what is missing.
        (["--verison"], "required: command; unrecognized arguments: --verison; "
         "did you mean --version?"),
        (["match", "--bto", "a.toml", "--bto", "b.toml"], "referee match: error: the "
         "following arguments are required: --bot; unrecognized arguments: --bto; "
         "did you mean --bot?"),
        (["league", "--zzzz"], "required: action; unrecognized arguments: --zzzz"),
        (["match", "--", "--zzzz"], "referee match: error: the following arguments are "
         "required: --bot"),  # after "--", no flags
        # A mistyped command or choice.
        (["tournamnet", "t.toml"], "'schema'); did you mean tournament?"),
        (["tournament", "t.toml", "--log-level", "warn"], "did you mean warning?"),
    ],
)  # fmt: skip
def test_a_mistyped_word_is_named_with_the_likely_one(
    capsys: pytest.CaptureFixture[str], argv: list[str], ending: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(ending)
