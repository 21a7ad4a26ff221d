"""The jail: everything between a started bot and the machine it runs on, in one place.

A bot the referee starts is a stranger's program. The match runner asks the jail for a
process and gets one that is confined and bounded; it never builds a command line, a
sandbox or a limit itself. The one way in is :func:`start`: a declared bot
(:class:`~referee.jail.bots.BotSpec`: command, folder, environment, limits) and a declared
:class:`~referee.jail.sandbox.SandboxPolicy` in, a started, bounded
:class:`~referee.jail.process.BotProcess` out.

The parts, each tested on its own:

- :mod:`~referee.jail.policy`: who may widen a bot's view (its author, the organiser) and
  what no one may (the host's ``/proc``, the output folder, the deal key...), as data;
- :mod:`~referee.jail.sandbox`: the policy turned into a bubblewrap command (namespaces,
  read-only binds, a private ``/tmp``, no network but the referee's socket);
- :mod:`~referee.jail.held`: the bot's folder and read paths, each held by one descriptor
  from its check to its bind (a link swapped in meanwhile is refused, never followed);
- :mod:`~referee.jail.gvisor`: the same policy on an application kernel per bot (``runsc``),
  the stronger tier (:func:`tier_for` says which runs use it by default);
- :mod:`~referee.jail.seccomp`: the system calls a bot may make, compiled into a filter;
- :mod:`~referee.jail.botusers`: a uid of its own for every bot under a root referee;
- :mod:`~referee.jail.cgroups`: memory, processes and CPU bounds for the whole process tree;
- :mod:`~referee.jail.botlog`: the bot's output, piped into its log up to a cap;
- :mod:`~referee.jail.launch`: the small launcher that applies rlimits, joins the cgroup,
  closes inherited descriptors and execs the sandbox;
- :mod:`~referee.jail.watchdog`: kills every bot once the referee is gone, however it went;
- :mod:`~referee.jail.process`: the started process, its end in words, and its stop.

This module imports nothing heavy itself, for whatever imports the jail. The launcher
does not import it: the referee runs ``launch.py`` as a file of its own
(:func:`~referee.jail.launch.command`, ``python -I -S``), with the standard library alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from referee.jail.bots import BotSpec
    from referee.jail.process import BotProcess


#: The runs whose bots use the strongest tier this machine has unless their file says
#: otherwise, by the threat each faces: a duplicate tournament (bots of several authors,
#: whose seatings replay one deal: a mark on the host's kernel state that no call list
#: names would be the hands; the page cache is held in both tiers) and a league
#: (strangers' code, uploaded). A comparison (one author's two versions, against
#: opponents the author chose: no stranger to hide a deal from), a round robin and a
#: single match keep bubblewrap, a third to a tenth of the cost (docs/security.md).
STRONGEST_FOR = ("duplicate", "league")


def tier_for(run: str) -> str:
    """The sandbox mode a ``run`` (``"duplicate"``, ``"round_robin"``, ``"compare"``,
    ``"league"``, ``"match"``) uses when its file names none: ``"strongest"`` (gvisor where
    runsc runs here, else bubblewrap; :class:`~referee.jail.sandbox.Sandbox` resolves it and
    says which) or ``"bubblewrap"``."""
    return "strongest" if run in STRONGEST_FOR else "bubblewrap"


def strongest_mode() -> str:
    """The strongest tier this machine has, ``"gvisor"`` or ``"bubblewrap"`` (see
    :func:`referee.jail.sandbox.strongest_mode`)."""
    from referee.jail.sandbox import strongest_mode as strongest

    return strongest()


async def start(
    spec: BotSpec,
    address: str,
    token: str,
    log_path: Path,
    extra_env: dict[str, str] | None = None,
    **options: Any,
) -> BotProcess:
    """Start ``spec`` confined and bounded: see :meth:`referee.jail.process.BotProcess.start`
    for ``options`` (``policy``, ``tls_ca``, ``on_exit``)."""
    from referee.jail.process import BotProcess

    return await BotProcess.start(spec, address, token, log_path, extra_env, **options)
