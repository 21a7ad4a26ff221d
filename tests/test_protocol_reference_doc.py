"""docs/protocol-reference.md: the protoc lines for C++, Go and Java generate the stubs
they promise, run as written on a copy of proto/ (each when its plugin is installed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "protocol-reference.md").read_text(encoding="utf-8")


def _stub_lines() -> list[str]:
    section = DOC[DOC.index("\n## Stubs for other languages\n") :]
    section = section[: section.index("\n## ", 1)]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", section, re.S)]


#: The line's output folder, the plugins it needs (any of each group), the files it writes.
LANGUAGES = {
    "cpp": (
        [("grpc_cpp_plugin",)],
        ["bot.pb.h", "bot.pb.cc", "bot.grpc.pb.h", "bot.grpc.pb.cc", "game.pb.cc"],
    ),
    "go": (
        [("protoc-gen-go",), ("protoc-gen-go-grpc",)],
        ["bot.pb.go", "bot_grpc.pb.go", "game.pb.go"],
    ),
    "java": (
        [("protoc-gen-grpc-java", "grpc_java_plugin")],
        ["Bot.java", "Game.java", "RefereeGrpc.java"],
    ),
}


def test_the_page_has_one_line_per_language() -> None:
    lines = _stub_lines()
    assert [re.search(r"mkdir -p gen/(\w+)", line).group(1) for line in lines] == list(  # type: ignore[union-attr]
        LANGUAGES
    )
    assert all("\n" not in line for line in lines)  # one line each, ready to paste


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_the_protoc_line_generates_the_stubs(language: str, tmp_path: Path) -> None:
    plugins, files = LANGUAGES[language]
    if shutil.which("protoc") is None:
        pytest.skip("protoc is not installed")
    missing = [group[0] for group in plugins if not any(shutil.which(p) for p in group)]
    if missing:
        pytest.skip(f"the {language} plugin is not installed: {', '.join(missing)}")
    (line,) = [x for x in _stub_lines() if f"gen/{language}" in x]
    shutil.copytree(ROOT / "proto", tmp_path / "proto")
    done = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "gen" / language / "sticheln" / "v1"
    for name in files:
        assert (out / name).is_file(), sorted(p.name for p in out.iterdir())
    if language == "go":
        assert "package v1" in (out / "bot.pb.go").read_text()
