"""The mypyc-compiled engine modules, when present, are built from the current source."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

COMPILED = ["cards", "deck", "trick", "round", "match"]


@pytest.mark.parametrize("name", COMPILED)
def test_compiled_module_is_not_older_than_its_source(name: str) -> None:
    module = importlib.import_module(f"referee.rules.{name}")
    loaded = Path(module.__file__ or "")
    if loaded.suffix == ".py":
        pytest.skip("pure-Python engine in use")
    source = loaded.with_name(f"{name}.py")
    assert os.path.getmtime(loaded) >= os.path.getmtime(source), (
        f"{loaded.name} is older than {source.name}: rebuild with `pip install -e .` "
        "(scripts/test.sh does it) or delete the .so files to run the pure-Python engine"
    )
