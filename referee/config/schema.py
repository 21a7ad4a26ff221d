"""JSON Schemas of the config files, generated from their models and shipped in the package.

``referee schema tournament|league|bot|compare`` prints one; an editor with a TOML language
server (Taplo, VS Code's "Even Better TOML") reads the ``#:schema`` line at the top of a
file and completes and checks its keys with it. The shipped copies in ``schemas/`` are
made by ``python tools/gen_schemas.py`` (which knows every file type's model) and checked by
tests/test_config_schema.py, which fails when they are stale.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import json
import sys
import textwrap
import typing
from collections.abc import Iterator
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
        elif isinstance(out.get("default"), dict):  # a table's defaults: its unset keys left out
            out["default"] = _without_none(out["default"])
        return out

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _without_none(value: Any) -> Any:
    """``value`` with the None values of its tables left out, at every depth."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def _docstrings(cls: type) -> dict[str, str]:
    """The docstrings of ``cls``'s annotated attributes: a string right under a field."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    found: dict[str, str] = {}
    if isinstance(body, ast.ClassDef):
        for field, doc in itertools.pairwise(body.body):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
            ):
                found[field.target.id] = inspect.cleandoc(doc.value.value)
    return found


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def documented(model: type[BaseModel], done: set[type[BaseModel]] | None = None) -> None:
    """Give the fields of ``model``, and of every model it holds, their docstrings as
    descriptions (those the JSON Schema carries), the held models first."""
    done = set() if done is None else done
    if model in done:
        return
    done.add(model)
    for field in model.model_fields.values():
        for held in _models_in(field.annotation):
            documented(held, done)
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if issubclass(cls, BaseModel) and cls is not BaseModel:
            docs.update(_docstrings(cls))
    for name, field in model.model_fields.items():
        if field.description is None and name in docs:
            field.description = docs[name]
    model.model_rebuild(force=True)  # its schema anew, with the held models' descriptions


def generate(kind: str, model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of the file type ``kind``, made from its model."""
    documented(model)
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


def text(kind: str, model: type[BaseModel]) -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(generate(kind, model), indent=2, ensure_ascii=False) + "\n"


def shipped(kind: str) -> str:
    """The schema shipped in the package (what ``referee schema KIND`` prints)."""
    return (resources.files("referee.config") / "schemas" / f"{kind}.schema.json").read_text(
        encoding="utf-8"
    )


def command(args: argparse.Namespace) -> int:
    """``referee schema KIND``: print the shipped schema."""
    sys.stdout.write(shipped(args.kind))
    return 0
