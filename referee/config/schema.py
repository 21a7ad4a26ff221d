"""JSON Schemas of the config files, generated from their models and shipped in the package.

``referee schema tournament|league|bot|compare`` prints one; an editor with a TOML language
server (Taplo, VS Code's "Even Better TOML") reads the ``#:schema`` line at the top of a
file and completes and checks its keys with it. The shipped copies in ``schemas/`` are
made by ``python -m referee.config.schema --write`` and checked by
tests/test_config_schema.py, which fails when they are stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from referee.config import KINDS

SCHEMA_DIR = Path(__file__).with_name("schemas")


class TomlSchema(GenerateJsonSchema):
    """JSON Schema for a TOML file: TOML has no null, so a key that may be None is one that
    may be left out; and keys have descriptions, not titles."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        out = super().default_schema(schema)
        if out.get("default", 0) is None:
            del out["default"]
        return out

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _models() -> dict[str, Callable[[], type[BaseModel]]]:
    def tournament() -> type[BaseModel]:
        from referee.tournament.config import TournamentFile

        return TournamentFile

    def league() -> type[BaseModel]:
        from referee.league.config import LeagueFile

        return LeagueFile

    def bot() -> type[BaseModel]:
        from referee.config.tables import BotTable

        return BotTable

    def compare() -> type[BaseModel]:
        from referee.compare.config import CompareFile

        return CompareFile

    return {"tournament": tournament, "league": league, "bot": bot, "compare": compare}


def generate(kind: str) -> dict[str, Any]:
    """The JSON Schema of a file type, made from its model."""
    model = _models()[kind]()
    # Draft 7, the draft editors' TOML language servers support most widely: its shared
    # parts live under "definitions".
    body = model.model_json_schema(
        schema_generator=TomlSchema, ref_template="#/definitions/{model}"
    )
    definitions = body.pop("$defs", None)
    head = {"$schema": "http://json-schema.org/draft-07/schema#", "title": KINDS[kind]}
    if definitions is not None:
        head["definitions"] = definitions
    return {**head, **{k: v for k, v in body.items() if k != "title"}}


def text(kind: str) -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(generate(kind), indent=2, ensure_ascii=False) + "\n"


def shipped(kind: str) -> str:
    """The schema shipped in the package (what ``referee schema KIND`` prints)."""
    return (resources.files("referee.config") / "schemas" / f"{kind}.schema.json").read_text(
        encoding="utf-8"
    )


def write() -> list[Path]:
    """Make the shipped schemas anew from the models."""
    SCHEMA_DIR.mkdir(exist_ok=True)
    paths = []
    for kind in KINDS:
        path = SCHEMA_DIR / f"{kind}.schema.json"
        path.write_text(text(kind), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    """``python -m referee.config.schema --write``: regenerate the shipped schemas."""
    parser = argparse.ArgumentParser(prog="python -m referee.config.schema")
    parser.add_argument("--write", action="store_true", help="rewrite referee/config/schemas/")
    parser.add_argument("kind", nargs="?", choices=list(KINDS))
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(path)
        return 0
    if args.kind is None:
        parser.error("give a KIND or --write")
    sys.stdout.write(text(args.kind))
    return 0


def command(args: argparse.Namespace) -> int:
    """``referee schema KIND``: print the shipped schema."""
    sys.stdout.write(shipped(args.kind))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
