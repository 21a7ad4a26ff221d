"""docs/protocol-reference.md: the protoc lines for C++, Go and Java generate the stubs
they promise, run as written on a copy of proto/ (each when its plugin is installed); the
Go recipe (Debian's packages, GOPATH, the page's bot) builds a bot that plays a match.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "protocol-reference.md").read_text(encoding="utf-8")


def _section() -> str:
    section = DOC[DOC.index("\n## Stubs for other languages\n") :]
    return section[: section.index("\n## ", 1)]


def _blocks(lang: str) -> list[str]:
    return [b.strip() for b in re.findall(rf"```{lang}\n(.*?)```", _section(), re.S)]


def _stub_lines() -> list[str]:
    """The protoc lines, one per language."""
    return [b for b in _blocks("sh") if " protoc " in b]


def _out(language: str) -> Path:
    """Where a language's line writes, relative to the folder it runs in."""
    if language == "go":  # a GOPATH workspace, at the import path the M options give
        return Path("go/src/example.com/mybot/sticheln/v1")
    return Path("gen") / language / "sticheln" / "v1"


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
    assert [re.search(r"mkdir -p (?:gen/)?(\w+)", line).group(1) for line in lines] == list(  # type: ignore[union-attr]
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
    (line,) = [x for x in _stub_lines() if f"--{language}_out=" in x]
    shutil.copytree(ROOT / "proto", tmp_path / "proto")
    done = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / _out(language)
    for name in files:
        assert (out / name).is_file(), sorted(p.name for p in out.iterdir())
    if language == "go":
        assert "package v1" in (out / "bot.pb.go").read_text()


GOCODE = Path("/usr/share/gocode/src")


def _go_missing() -> list[str]:
    """What the page's offline Go recipe needs and this machine lacks."""
    missing = [
        t for t in ("go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc") if not shutil.which(t)
    ]
    if not (GOCODE / "google.golang.org/grpc").is_dir():
        missing.append("golang-google-grpc-dev")
    # The 1.5 library has proto/registry.go; 1.3's cannot encode what protoc-gen-go writes.
    if not (GOCODE / "github.com/golang/protobuf/proto/registry.go").is_file():
        missing.append("golang-github-golang-protobuf-1-5-dev")
    return missing


@pytest.mark.timeout(600)
def test_the_go_recipe_builds_a_bot_that_plays_a_match(tmp_path: Path) -> None:
    missing = _go_missing()
    if missing:
        pytest.skip(f"the Go recipe's tools are not installed: {', '.join(missing)}")
    install = next(b for b in _blocks("sh") if b.startswith("sudo apt-get install golang-go"))
    assert "golang-github-golang-protobuf-1-5-dev" in install.split()
    (protoc,) = [x for x in _stub_lines() if "--go_out=" in x]
    (build,) = [b for b in _blocks("sh") if " go build " in b]
    (source,) = _blocks("go")
    shutil.copytree(ROOT / "proto", tmp_path / "proto")
    for line, budget in ((protoc, 60), (None, 0), (build, 540)):
        if line is None:  # the page's bot, where the page says it goes
            (tmp_path / _out("go").parent.parent / "main.go").write_text(source + "\n")
            continue
        done = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=budget
        )
        assert done.returncode == 0, line + "\n" + done.stderr[-3000:]
    # Its own folder, as a bot author enters it: the binary and its bot file.
    folder = tmp_path / "bot"
    folder.mkdir()
    shutil.move(tmp_path / "mybot", folder / "mybot")
    (folder / "go.toml").write_text('name = "minimal-go"\ncommand = ["./mybot"]\n')
    minimal = ROOT / "sample_bots" / "minimal-python.toml"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    played = subprocess.run(
        [
            *(sys.executable, "-m", "referee.cli", "match", "--bot", str(folder / "go.toml")),
            *("--bot", str(minimal), "--bot", str(minimal), "--seed", "3"),
            *("--out", str(tmp_path / "out")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    (record,) = (tmp_path / "out" / "matches").glob("*.jsonl")
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    # Every decision of the Go bot (seat 0) was its own, none a fallback for a fault.
    own = [x for x in lines if x["type"] in ("pain", "play") and x["seat"] == 0]
    assert own and not any(x["fallback"] for x in own), played.stdout
    assert lines[-1]["type"] == "end"
    # The starter passes check-bot in each tier (a native runtime: what its binary loads).
    from referee.jail import gvisor

    for tier in ("bubblewrap", *(() if gvisor.missing() else ("gvisor",))):
        checked = subprocess.run(
            [
                *(sys.executable, "-m", "referee.cli", "check-bot", "--sandbox", tier),
                *("--bot", str(folder / "go.toml"), "--scenario", "players-3", "--rounds", "1"),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
        assert checked.returncode == 0, tier + "\n" + checked.stdout + checked.stderr
        assert checked.stdout.strip().endswith("all 1 scenarios passed"), checked.stdout
