"""A config file's first mistake as one line: the file, the table and key, the value given
and what is allowed, e.g.::

    league.toml: [tournament] mode = 'swiss' is not allowed; allowed: 'round_robin', 'duplicate'

What a key allows is read from the model: an :class:`Allowed` in the key's type says it in
words, else it is worded from the key's JSON Schema (a range, a list of values, a type).
"""

from __future__ import annotations

import functools
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Tag, ValidationError
from pydantic.fields import FieldInfo


class ConfigFileError(ValueError):
    """A config file that cannot be used; the message is one line."""


def read_toml(path: Path, kind: str, error: type[Exception]) -> dict[str, Any]:
    """The table of the TOML file ``path`` (a "bot file", a "tournament file", ...), or
    ``error`` with a one-line reason: not found, unreadable, or not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: {kind} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read the {kind}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None


class Allowed:
    """What a key allows, in words, for its error message (in the key's ``Annotated``)."""

    def __init__(self, words: str) -> None:
        self.words = words


def one_line(
    exc: ValidationError,
    model: type[BaseModel],
    data: Mapping[str, Any],
    where: str,
    flags: Mapping[tuple[str, ...], str],
) -> str:
    """The first error of ``exc`` (validating ``data`` as ``model``) in one line."""
    error = exc.errors(include_url=False)[0]
    loc = error["loc"]
    prefix = where
    tables: list[str] = []  # the table path within the current entry
    keys: list[str] = []  # the key path from the file's top, for ``flags``
    node: type[BaseModel] = model
    value: Any = data
    i = 0
    while i < len(loc):
        part = loc[i]
        field = node.model_fields.get(str(part))
        if field is None:
            if error["type"] == "extra_forbidden":
                return _unknown(prefix, tables, node, str(part))
            break
        keys.append(str(part))
        value = value.get(part) if isinstance(value, Mapping) else None
        inner, i = _descend(field.annotation, loc, i + 1, value)
        if isinstance(inner, tuple):  # a list of tables: ``[[name]]`` entry n
            entry_model, index = inner
            prefix = f"{prefix} [[{part}]] entry {index + 1}"
            tables = []
            node = entry_model
            value = value[index] if isinstance(value, list) and index < len(value) else None
            if i == len(loc):
                return _whole_table(error, prefix, tables, node, part=str(part), entry=True)
            continue
        if inner is not None:  # a table
            tables.append(str(part))
            node = inner
            if i == len(loc):
                return _whole_table(error, prefix, tables, node, part=str(part), entry=False)
            continue
        flag = flags.get(tuple(keys))
        if flag is not None:
            return (
                f"{flag} = {_toml(value)} is not allowed; allowed: {allowed(field, node, keys[-1])}"
            )
        return _key(error, prefix, tables, str(part), value, allowed(field, node, keys[-1]))
    return _whole_table(error, prefix, tables, node, part="", entry=False)


def _head(prefix: str, tables: list[str]) -> str:
    return f"{prefix}: [{'.'.join(tables)}] " if tables else f"{prefix}: "


def _key(error: Any, prefix: str, tables: list[str], key: str, value: Any, words: str) -> str:
    head = _head(prefix, tables)
    if error["type"] == "missing":
        return f"{head}{key} is required; allowed: {words}"
    return f"{head}{key} = {_toml(value)} is not allowed; allowed: {words}"


def _unknown(prefix: str, tables: list[str], node: type[BaseModel], key: str) -> str:
    fields = node.model_fields
    if not tables and all(_table_of(f.annotation) for f in fields.values()):
        names = ", ".join(
            f"[[{n}]]" if typing.get_origin(f.annotation) is list else f"[{n}]"
            for n, f in fields.items()
        )
        return f"{prefix}: unknown table [{key}]; allowed: {names}"
    head = f"{prefix}: [{'.'.join(tables)}] has unknown key" if tables else f"{prefix}: unknown key"
    return f"{head} {key!r}; allowed: {', '.join(fields)}"


def _whole_table(
    error: Any, prefix: str, tables: list[str], node: type[BaseModel], part: str, entry: bool
) -> str:
    """An error about a table as a whole: not a table, or a check across its keys."""
    if error["type"] in ("model_type", "model_attributes_type", "dict_type"):
        what = prefix if entry else f"{prefix}: [{'.'.join(tables)}]"
        return f"{what} must be a table"
    if error["type"] in ("list_type", "too_short"):
        return f"{prefix}: [[{part}]] must be an array of tables"
    if error["type"] == "union_tag_invalid":
        return f"{prefix} must be a table"
    ctx = error.get("ctx") or {}
    reason = str(ctx.get("error", error["msg"]))
    return _head(prefix, tables) + reason


def _strip(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` and without None."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if _is_union(annotation):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _strip(args[0])
    return annotation


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _model(annotation: Any) -> type[BaseModel] | None:
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _tag(annotation: Any) -> str | None:
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if isinstance(meta, Tag):
                return meta.tag
    return None


def _table_of(annotation: Any) -> bool:
    annotation = _strip(annotation)
    if typing.get_origin(annotation) is list:
        annotation = typing.get_args(annotation)[0]
    return _model(annotation) is not None or _is_union(_strip(annotation))


def _descend(annotation: Any, loc: tuple[int | str, ...], i: int, value: Any) -> tuple[Any, int]:
    """What the key of type ``annotation`` holds, with ``loc[i:]`` the rest of the error's
    path: a table's model, ``(model, index)`` for an entry of a list of tables, or None for
    a plain value (whose error is about the key itself)."""
    annotation = _strip(annotation)
    if typing.get_origin(annotation) is list:
        item = typing.get_args(annotation)[0]
        if i < len(loc) and isinstance(loc[i], int) and _table_of(item):
            index = int(loc[i])
            entry, j = _branch(item, loc, i + 1)
            if entry is not None:
                return (entry, index), j
        return None, i
    if _model(annotation) is not None:
        return _model(annotation), i
    if _is_union(annotation):
        entry, j = _branch(annotation, loc, i)
        if entry is not None and isinstance(value, Mapping):
            return entry, j
    return None, i


def _branch(annotation: Any, loc: tuple[int | str, ...], i: int) -> tuple[Any, int]:
    """The table a union's error is about, past the union member's name in ``loc``."""
    if _model(annotation) is not None:
        return _model(annotation), i
    members = typing.get_args(_strip(annotation))
    tables = [m for m in members if _model(m) is not None]
    if i < len(loc):
        for member in tables:
            model = _model(member)
            assert model is not None
            part = loc[i]
            # pydantic names a union member by its tag, or by its type: "SprtTable", or
            # "function-after[_check(), SprtTable]" for a model with a validator.
            if part == _tag(member) or (
                isinstance(part, str) and re.search(rf"\b{model.__name__}\b", part)
            ):
                return model, i + 1
    return (_model(tables[0]), i) if len(tables) == 1 else (None, i)


def allowed(field: FieldInfo, model: type[BaseModel], key: str) -> str:
    """What ``key`` of ``model`` allows, in words."""
    words = _words(field.metadata) or _words_in(field.annotation)
    if words is not None:
        return words
    schema = _schema(model)
    return describe(schema["properties"][key], schema.get("$defs", {}))


def _words(metadata: Any) -> str | None:
    return next((m.words for m in metadata if isinstance(m, Allowed)), None)


def _words_in(annotation: Any) -> str | None:
    """The :class:`Allowed` words of a type, or of the one member of ``X | None``."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _words(typing.get_args(annotation)[1:]) or _words_in(typing.get_args(annotation)[0])
    if _is_union(annotation):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _words_in(args[0])
    return None


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    from referee.config.schema import TomlSchema

    return model.model_json_schema(schema_generator=TomlSchema)


def describe(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """A JSON Schema in words: ``a whole number from 1 to 64``, ``'a', 'b'``, ..."""
    if "$ref" in schema:
        return describe(defs[str(schema["$ref"]).rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(describe(s, defs) for s in schema[key])
    if "const" in schema:
        return _toml(schema["const"])
    if "enum" in schema:
        return ", ".join(_toml(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind in ("integer", "number"):
        noun = "a whole number" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return (
                f"{noun} from {low:g} to {high:g}"
                if kind == "number"
                else f"{noun} from {low} to {high}"
            )
        above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if above is not None and below is not None:
            return f"{noun} above {above:g} and below {below:g}"
        if above is not None:
            return f"{noun} > {above:g}"
        if low is not None:
            return f"{noun} >= {low:g}"
        if high is not None:
            return f"{noun} <= {high:g}"
        return noun
    if kind == "string":
        return "a non-empty string" if schema.get("minLength") else "a string"
    if kind == "boolean":
        return "true, false"
    if kind == "array":
        items = schema.get("items", {})
        if items.get("type") == "string":
            return "a list of strings"
        return "an array of tables" if items else "a list"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra.get("type") == "string":
            return "a table of strings"
        return "a table"
    return "see the schema (referee schema)"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)
