"""structlog imported without rich: imported first by the referee's entry points.

structlog imports rich's traceback and pretty-printer modules at its own import whenever
rich is installed (rich is here for the terminal's tables), to offer coloured tracebacks
in its console renderer. The referee renders its log lines itself (JSON, or plain
``key=value`` on a terminal) and wants plain tracebacks, so those modules are only cost:
about 200 million instructions, a seventh of a short ``referee`` command's whole run
(``benchmarks/startup.py``). Importing this module imports structlog while rich is
hidden from it; rich stays importable for everything else. Where structlog or rich was
imported already, nothing changes.
"""

from __future__ import annotations

import sys


def _structlog_without_rich() -> None:
    if "structlog" in sys.modules or "rich" in sys.modules:
        return
    sys.modules["rich"] = None  # type: ignore[assignment]  # import rich -> ImportError
    try:
        import structlog  # noqa: F401
    finally:
        del sys.modules["rich"]


_structlog_without_rich()
