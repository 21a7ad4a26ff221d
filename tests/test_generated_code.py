"""The checked-in generated code is current, and the protos follow the style guide.

The generated code under ``sticheln/v1/`` must be exactly what ``tools/gen_proto.py``
produces from ``proto/`` with the pinned grpcio-tools, and the C++ and Node.js starters'
copies of the bot protocol (``sample_bots/*/proto/``) must be proto/'s files. The style checks (a comment on every
element, ``*_UNSPECIFIED = 0``, enum value prefixes) read the protos' source info, so they
run without buf.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PROTOS = sorted(p.relative_to(PROTO_ROOT).as_posix() for p in PROTO_ROOT.rglob("*.proto"))


def test_generated_code_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_proto.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, (
        "the generated code in sticheln/v1/ does not match proto/; "
        "run: python tools/gen_proto.py (and commit the result)\n" + result.stdout + result.stderr
    )


def test_check_lists_stale_missing_and_left_over_files(tmp_path: Path) -> None:
    # A copy of the parts gen_proto.py reads, so the real checkout is never touched.
    starters = [f"sample_bots/{kit}/proto" for kit in ("cpp", "node", "go", "java")]
    for name in ("tools", "proto", "sticheln", *starters):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    generated = tmp_path / "sticheln" / "v1"
    with (generated / "game_pb2.py").open("a") as f:
        f.write("# edited by hand\n")
    (generated / "bot_pb2.pyi").unlink()
    (generated / "old_pb2.py").write_text("# from a removed proto\n")
    # The starters' copies of the protocol: one behind proto/, one missing.
    cpp_copy = tmp_path / "sample_bots/cpp/proto/sticheln/v1/bot.proto"
    cpp_copy.write_text(cpp_copy.read_text().replace("uint64 bot_seed = 9;", ""))
    (tmp_path / "sample_bots/node/proto/sticheln/v1/game.proto").unlink()
    check = [sys.executable, str(tmp_path / "tools" / "gen_proto.py"), "--check"]

    result = subprocess.run(check, capture_output=True, text=True, cwd=tmp_path)

    assert result.returncode == 1
    assert "run: python tools/gen_proto.py" in result.stdout
    listed = {line.strip() for line in result.stdout.splitlines()[1:]}
    assert listed == {
        "sticheln/v1/game_pb2.py",
        "sticheln/v1/bot_pb2.pyi",
        "sticheln/v1/old_pb2.py",
        "sample_bots/cpp/proto/sticheln/v1/bot.proto",
        "sample_bots/node/proto/sticheln/v1/game.proto",
    }

    regenerate = subprocess.run(check[:-1], capture_output=True, text=True, cwd=tmp_path)
    assert regenerate.returncode == 0, regenerate.stderr
    assert not (generated / "old_pb2.py").exists()
    assert cpp_copy.read_bytes() == (ROOT / "proto/sticheln/v1/bot.proto").read_bytes()
    assert subprocess.run(check, capture_output=True, cwd=tmp_path).returncode == 0


def test_generated_code_imports_by_its_proto_path() -> None:
    from sticheln.v1 import bot_pb2, bot_pb2_grpc, game_pb2

    assert game_pb2.DESCRIPTOR.name == "sticheln/v1/game.proto"
    assert bot_pb2.DESCRIPTOR.name == "sticheln/v1/bot.proto"
    assert bot_pb2.DESCRIPTOR.package == "sticheln.v1"
    assert hasattr(bot_pb2_grpc, "RefereeServicer")
    assert hasattr(bot_pb2_grpc, "RefereeStub")


@pytest.fixture(scope="module")
def descriptor_set(tmp_path_factory: pytest.TempPathFactory) -> descriptor_pb2.FileDescriptorSet:
    """The protos compiled with their source info (comments and positions)."""
    out = tmp_path_factory.mktemp("descriptors") / "set.pb"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I.",
            "--include_source_info",
            f"--descriptor_set_out={out}",
            *PROTOS,
        ],
        capture_output=True,
        text=True,
        cwd=PROTO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


# Field numbers of the descriptor protos, for source-info paths.
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE = 4, 5, 6
_MESSAGE_FIELD, _MESSAGE_NESTED, _MESSAGE_ENUM, _MESSAGE_ONEOF = 2, 3, 4, 8
_ENUM_VALUE = 2
_SERVICE_METHOD = 2


def _enum_elements(
    enum: descriptor_pb2.EnumDescriptorProto, path: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], str]]:
    yield path, f"enum {enum.name}"
    for i, value in enumerate(enum.value):
        yield (*path, _ENUM_VALUE, i), f"enum value {enum.name}.{value.name}"


def _message_elements(
    message: descriptor_pb2.DescriptorProto, path: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], str]]:
    yield path, f"message {message.name}"
    for i, field in enumerate(message.field):
        yield (*path, _MESSAGE_FIELD, i), f"field {message.name}.{field.name}"
    for i, oneof in enumerate(message.oneof_decl):
        yield (*path, _MESSAGE_ONEOF, i), f"oneof {message.name}.{oneof.name}"
    for i, nested in enumerate(message.nested_type):
        yield from _message_elements(nested, (*path, _MESSAGE_NESTED, i))
    for i, enum in enumerate(message.enum_type):
        yield from _enum_elements(enum, (*path, _MESSAGE_ENUM, i))


def _elements(
    proto: descriptor_pb2.FileDescriptorProto,
) -> Iterator[tuple[tuple[int, ...], str]]:
    for i, message in enumerate(proto.message_type):
        yield from _message_elements(message, (_FILE_MESSAGE, i))
    for i, enum in enumerate(proto.enum_type):
        yield from _enum_elements(enum, (_FILE_ENUM, i))
    for i, service in enumerate(proto.service):
        yield (_FILE_SERVICE, i), f"service {service.name}"
        for j, method in enumerate(service.method):
            yield (_FILE_SERVICE, i, _SERVICE_METHOD, j), f"rpc {service.name}.{method.name}"


def test_every_message_field_enum_value_and_rpc_has_a_comment(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    missing = []
    for proto in descriptor_set.file:
        commented = {
            tuple(loc.path)
            for loc in proto.source_code_info.location
            if loc.leading_comments.strip() or loc.trailing_comments.strip()
        }
        missing += [
            f"{proto.name}: {what}" for path, what in _elements(proto) if path not in commented
        ]
    assert not missing, "elements without a comment:\n" + "\n".join(missing)


def _all_enums(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> Iterator[descriptor_pb2.EnumDescriptorProto]:
    def nested(
        message: descriptor_pb2.DescriptorProto,
    ) -> Iterator[descriptor_pb2.EnumDescriptorProto]:
        yield from message.enum_type
        for inner in message.nested_type:
            yield from nested(inner)

    for proto in descriptor_set.file:
        yield from proto.enum_type
        for message in proto.message_type:
            yield from nested(message)


def test_enum_values_are_prefixed_and_zero_is_unspecified(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    for enum in _all_enums(descriptor_set):
        prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"
        assert enum.value[0].number == 0
        assert enum.value[0].name == prefix + "UNSPECIFIED", enum.name
        for value in enum.value:
            assert value.name.startswith(prefix), f"{enum.name}.{value.name}"


def test_protos_declare_package_sticheln_v1_in_its_directory(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    for proto in descriptor_set.file:
        assert proto.package == "sticheln.v1"
        assert proto.name.startswith("sticheln/v1/")
