"""Regenerate the Python code for proto/ into sticheln/v1/, or check that it is current.

    python tools/gen_proto.py           # regenerate the checked-in code
    python tools/gen_proto.py --check   # exit 1 and list the stale files if it would change

It also copies the bot protocol's proto files into the C++, Node.js, Go and Java starters
(sample_bots/{cpp,node,go,java}/proto/), which build from
their own copy so that a starter copied out of the repository still builds; ``--check``
lists a copy that differs.

The generated code must be reproducible, so generation refuses to run with a grpcio-tools
other than the version pinned in pyproject.toml.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
#: Where protoc writes: the repository root, so a file lands where its import path says.
OUT_ROOT = ROOT
#: The generated files, relative to OUT_ROOT.
GENERATED_GLOB = "sticheln/v1/*_pb2*.py*"
#: The starters that carry their own copy of the bot protocol, relative to ROOT.
STARTER_PROTO_DIRS = (
    "sample_bots/cpp/proto",
    "sample_bots/node/proto",
    "sample_bots/go/proto",
    "sample_bots/java/proto",
)
#: The proto files a bot needs (the league's administration protocol is not one of them).
BOT_PROTOS = ("sticheln/v1/bot.proto", "sticheln/v1/game.proto")


def pinned_tools_version() -> str:
    """The grpcio-tools version pinned in pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'"grpcio-tools==([^"]+)"', text)
    if match is None:
        raise SystemExit("gen_proto: pyproject.toml pins no grpcio-tools version")
    return match.group(1)


def check_tools_version() -> None:
    """Refuse to generate with a grpcio-tools other than the pinned one."""
    want = pinned_tools_version()
    try:
        have = importlib.metadata.version("grpcio-tools")
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit(
            f"gen_proto: grpcio-tools is not installed; run: pip install grpcio-tools=={want}"
        ) from None
    if have != want:
        raise SystemExit(
            f"gen_proto: grpcio-tools {have} is installed but {want} is pinned; the generated "
            f"code would differ. Run: pip install grpcio-tools=={want}"
        )


def proto_files() -> list[Path]:
    """The .proto files, relative to the proto root, in a stable order."""
    return sorted(p.relative_to(PROTO_ROOT) for p in PROTO_ROOT.rglob("*.proto"))


def generate(out: Path) -> None:
    """Run protoc for every .proto file, writing the Python code under ``out``."""
    protos = [str(p) for p in proto_files()]
    if not protos:
        raise SystemExit(f"gen_proto: no .proto files under {PROTO_ROOT}")
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        "-I.",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *protos,
    ]
    # Run from the proto root so the paths protoc records are the import paths.
    result = subprocess.run(command, cwd=PROTO_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"gen_proto: protoc failed (exit {result.returncode})")


def generated_files(root: Path) -> set[str]:
    """The generated files under ``root``, as paths relative to it."""
    return {p.relative_to(root).as_posix() for p in root.glob(GENERATED_GLOB)}


def stale_files() -> list[str]:
    """Generated files that are missing, different or left over in the checked-in code."""
    with tempfile.TemporaryDirectory(prefix="gen_proto.") as tmp:
        fresh_root = Path(tmp)
        generate(fresh_root)
        fresh = generated_files(fresh_root)
        checked_in = generated_files(OUT_ROOT)
        stale = [
            name
            for name in sorted(fresh | checked_in)
            if name not in fresh
            or name not in checked_in
            or not filecmp.cmp(fresh_root / name, OUT_ROOT / name, shallow=False)
        ]
    return stale


def starter_copies() -> dict[str, Path]:
    """Every starter's copy of a bot proto file (relative to ROOT) and its source."""
    return {
        f"{folder}/{name}": PROTO_ROOT / name
        for folder in STARTER_PROTO_DIRS
        for name in BOT_PROTOS
    }


def stale_copies() -> list[str]:
    """The starters' proto copies that are missing or differ from proto/, and left-over
    proto files in their proto folders."""
    copies = starter_copies()
    present = {
        p.relative_to(ROOT).as_posix()
        for folder in STARTER_PROTO_DIRS
        for p in (ROOT / folder).rglob("*.proto")
    }
    return [
        name
        for name in sorted(set(copies) | present)
        if name not in copies
        or not (ROOT / name).is_file()
        or not filecmp.cmp(copies[name], ROOT / name, shallow=False)
    ]


def copy_to_starters() -> list[str]:
    """Copy the bot protos into every starter (removing left-over proto files there)."""
    for name in stale_copies():
        if name not in starter_copies():
            (ROOT / name).unlink()
    for name, source in starter_copies().items():
        target = ROOT / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return sorted(starter_copies())


def regenerate() -> list[str]:
    """Regenerate in place (removing left-over generated files); the files written."""
    with tempfile.TemporaryDirectory(prefix="gen_proto.") as tmp:
        fresh_root = Path(tmp)
        generate(fresh_root)
        fresh = generated_files(fresh_root)
        for name in sorted(generated_files(OUT_ROOT) - fresh):
            (OUT_ROOT / name).unlink()
        for name in sorted(fresh):
            target = OUT_ROOT / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fresh_root / name, target)
    return sorted(fresh)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        description="Regenerate the Python code for proto/ into sticheln/v1/."
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 and list the stale files if regeneration would change them",
    )
    args = parser.parse_args(argv)
    check_tools_version()
    if args.check:
        stale = stale_files() + stale_copies()
        if stale:
            print("gen_proto: generated code is stale; run: python tools/gen_proto.py")
            for name in stale:
                print(f"  {name}")
            return 1
        print("gen_proto: generated code is up to date")
        return 0
    for name in regenerate() + copy_to_starters():
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
