"""Write the config files' JSON Schemas, shipped in referee/config/schemas/, from their
models: ``python tools/gen_schemas.py`` (all of them) or ``python tools/gen_schemas.py KIND``
(print one). tests/test_config_schema.py fails while the shipped files are stale.

The models live beside what uses them (tournament, league and compare files above the
config room, bot files in it), so the list of them is kept here, outside the package.
"""

from __future__ import annotations

import argparse
import sys

from pydantic import BaseModel

from referee.compare.config import CompareFile
from referee.config import KINDS
from referee.config.schema import SCHEMA_DIR, text
from referee.config.tables import BotTable
from referee.league.config import LeagueFile
from referee.tournament.config import TournamentFile

#: Each config file type's model.
MODELS: dict[str, type[BaseModel]] = {
    "tournament": TournamentFile,
    "league": LeagueFile,
    "bot": BotTable,
    "compare": CompareFile,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/gen_schemas.py")
    parser.add_argument("kind", nargs="?", choices=list(KINDS), help="print this one instead")
    args = parser.parse_args(argv)
    if args.kind is not None:
        sys.stdout.write(text(args.kind, MODELS[args.kind]))
        return 0
    SCHEMA_DIR.mkdir(exist_ok=True)
    for kind in KINDS:
        path = SCHEMA_DIR / f"{kind}.schema.json"
        path.write_text(text(kind, MODELS[kind]), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
