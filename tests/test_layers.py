"""The package's rooms stay layered: a module imports only from its own room or the rooms
below it (docs/architecture.md draws them). An import upward, even inside a function or
under TYPE_CHECKING, fails here with the module, the line and the room it reached into."""

from __future__ import annotations

import ast
from pathlib import Path

import referee

PACKAGE = Path(referee.__file__).parent

#: Rooms from the bottom up; a room may import from any room before it, and itself.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("referee.rules",),
    ("referee.runtime",),
    ("referee.convert",),
    ("referee.jail",),
    ("referee.match",),
    ("referee.config",),
    ("referee.results",),
    ("referee.fairplay",),
    ("referee.tournament",),
    ("referee.compare", "referee.league"),
    ("referee.web",),
    ("referee.cli",),
)


def room(module: str) -> int | None:
    for level, rooms in enumerate(LAYERS):
        if any(module == r or module.startswith(r + ".") for r in rooms):
            return level
    return None


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path))
    return out


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # ``from referee import logs`` imports the module referee.runtime.logs
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name.startswith("referee")]


def test_every_module_is_in_a_room() -> None:
    homeless = [name for name, _ in modules() if room(name) is None and name not in ("referee",)]
    assert homeless == [], f"modules in no room of LAYERS: {homeless}"


def test_no_module_imports_a_room_above_its_own() -> None:
    upward = []
    for name, path in modules():
        level = room(name)
        if level is None:
            continue
        for line, target in imports(path):
            other = room(target)
            if other is not None and other > level:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert upward == [], "imports upward:\n" + "\n".join(upward)


def test_the_engine_imports_nothing_of_the_referee_but_itself() -> None:
    outside = [
        f"{path.name}:{line} {target}"
        for name, path in modules()
        if room(name) == 0
        for line, target in imports(path)
        if not target.startswith("referee.rules")
    ]
    assert outside == []
