"""The ``referee`` command: one module per command (or pair of related commands), each
adding its parser with ``add_parsers`` and running with the function it sets as ``func``.

To add a command, write a module here with an ``add_parsers(sub)`` function and list it
in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

# First, so that the commands' modules find structlog imported without rich.
from referee.runtime import lean  # noqa: F401

# isort: split
from referee.cli import (
    check_bot,
    compare,
    deals,
    demo,
    fairplay,
    league,
    match,
    replay,
    schema,
    tournament,
    web,
)
from referee.cli.common import UsageError, take_deal_key_from_environment
from referee.runtime import descriptors, logs

#: The command modules, in the order ``referee --help`` lists their commands.
COMMANDS = (
    demo,
    match,
    tournament,
    deals,
    compare,
    league,
    check_bot,
    web,
    replay,
    fairplay,
    schema,
)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser with every subcommand."""
    parser = _Parser(prog="referee", description="Tournament referee for the card game Sticheln.")
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="print the referee's version and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parsers(sub)
    return parser


class _Parser(argparse.ArgumentParser):
    """A parser whose errors name the likely meaning of a mistyped word: the flag meant
    when an unknown one comes with a missing argument (``referee --verison``, ``referee
    match --bto a.toml``: argparse reports only what is missing), the choice meant for an
    invalid one (``referee tournamnet``). Subcommands' parsers are of this class too."""

    #: The words of the command line, set by :func:`main` before parsing.
    typed: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        invalid = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if invalid:
            choices = re.findall(r"'([^']*)'", invalid.group(2))
            close = difflib.get_close_matches(invalid.group(1), choices, n=1, cutoff=0.6)
            message += "".join(f"; did you mean {c}?" for c in close)
        elif message.startswith("the following arguments are required"):
            known = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            # Words after "--" are no flags (check-bot's bot command).
            flags = self.typed[: self.typed.index("--")] if "--" in self.typed else self.typed
            unknown = [w for w in dict.fromkeys(flags) if _flag(w) and _flag(w) not in known]
            if unknown:
                message += "; unrecognized arguments: " + " ".join(unknown)
            hints: list[str] = []
            for word in unknown:
                hints += difflib.get_close_matches(_flag(word), known, n=1, cutoff=0.6)
            message += "".join(f"; did you mean {h}?" for h in dict.fromkeys(hints))
        super().error(message)


def _flag(word: str) -> str:
    """The flag a command-line word gives (``--port=8080``: ``--port``), else ''."""
    return word.split("=", 1)[0] if word.startswith("--") else ""


def _version() -> str:
    import importlib.metadata  # only here: a seventh of a short command's start

    try:
        return importlib.metadata.version("sticheln-referee")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        print(f"referee {_version()}")
        parser.exit()


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub)command parser that ``args`` went through."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None and sub.dest else None
        if sub is None or name not in sub.choices:
            return parser
        parser = sub.choices[name]


def _refuse_unknown(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]
) -> None:
    """Exit with the usage of the command the unknown arguments were given to, and the
    flag that was probably meant (argparse would print the top-level usage instead)."""
    command = _chosen(parser, args)
    known = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for extra in extras:
        if extra.startswith("--"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1, cutoff=0.6)
            hints += [f"did you mean {close[0]}?"] if close else []
    command.error(" ".join(["unrecognized arguments:", *extras]) + "".join(f"; {h}" for h in hints))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``referee`` console script."""
    # Records, bot logs and databases are the organiser's alone (0600 in 0700 folders),
    # whoever creates them; and the deal key never reaches a child process.
    os.umask(0o077)
    take_deal_key_from_environment()
    # Viewers and bots both cost descriptors: the most the host allows (the soft limit is
    # often 1024 under a far higher hard one).
    descriptors.raise_limit()
    parser = build_parser()
    _Parser.typed = tuple(sys.argv[1:] if argv is None else argv)
    args, extras = parser.parse_known_args(argv)
    if extras:
        _refuse_unknown(parser, args, extras)
    # Until a command sets its own log level: warnings only, and on stderr, so that a
    # command's output on stdout is only its own (a store's reconnect warning included).
    logs.configure("warning", cache=False)
    if getattr(args, "tls_cert", None) and not getattr(args, "tls_key", None):
        parser.error("--tls-cert needs --tls-key")
    try:
        result: int = args.func(args)
        sys.stdout.flush()
    except UsageError as exc:
        for line in str(exc).splitlines() or [""]:
            print(f"referee {args.command}: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of stdout went away (``referee replay ... | head``): stop quietly, as
        # a program killed by SIGPIPE would, and keep the interpreter's last flush from
        # failing too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        # Ctrl-C before the command's event loop took over its signals (while starting).
        print(f"referee {args.command}: interrupted", file=sys.stderr)
        return 130
    return result
