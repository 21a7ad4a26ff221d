"""Uploaded archives: every hostile archive of issue 33 is refused with one line and writes
nothing; honest ones unpack with modes the bots' uids can read."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.league.archive import (
    ArchiveRefused,
    Bounds,
    bot_file_in,
    pack_folder,
    unpack,
)

BOUNDS = Bounds(max_files=50, max_unpacked=16 << 20)


def tar_gz(*members: tuple[tarfile.TarInfo, bytes | None], fmt: int = tarfile.GNU_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(
        fileobj=buffer, mode="w:gz", format=fmt, encoding="utf-8", errors="surrogateescape"
    ) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, **extra: object):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def zipped(*members: tuple[zipfile.ZipInfo | str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in members:
            z.writestr(info, data)
    return buffer.getvalue()


def zinfo(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def refused(tmp_path: Path, data: bytes, fmt: str, bounds: Bounds = BOUNDS) -> str:
    dest = tmp_path / "dest"
    with pytest.raises(ArchiveRefused) as caught:
        unpack(data, fmt, dest, bounds)
    assert not dest.exists(), "a refused archive leaves nothing behind"
    line = str(caught.value)
    assert "\n" not in line
    return line


HOSTILE_TARS: dict[str, tuple[Callable[[], bytes], str]] = {
    "absolute": (lambda: tar_gz((member("/etc/cron.d/x"), b"x")), "absolute"),
    "dotdot": (lambda: tar_gz((member("a/../../x"), b"x")), "'..'"),
    "symlink-inside": (
        lambda: tar_gz((member("a", tarfile.SYMTYPE, linkname="b"), None)),
        "symbolic link",
    ),
    "symlink-out": (
        lambda: tar_gz((member("etc", tarfile.SYMTYPE, linkname="/etc"), None)),
        "symbolic link",
    ),
    "hardlink": (
        lambda: tar_gz((member("f"), b"x"), (member("g", tarfile.LNKTYPE, linkname="f"), None)),
        "hard link",
    ),
    "device": (
        lambda: tar_gz((member("null", tarfile.CHRTYPE, devmajor=1, devminor=3), None)),
        "device",
    ),
    "fifo": (lambda: tar_gz((member("p", tarfile.FIFOTYPE), None)), "device, FIFO"),
    "setuid": (lambda: tar_gz((member("run", mode=0o4755), b"#!/bin/sh\n")), "setuid"),
    "non-utf8": (lambda: tar_gz((member("bad\udcff.txt"), b"x")), "UTF-8"),
    "count": (
        lambda: tar_gz(*((member(f"f{i}"), b"") for i in range(51))),
        "more than 50 files",
    ),
    "size": (lambda: tar_gz((member("big"), os.urandom(17 << 20))), "more than 16 MiB"),
    "ratio": (
        lambda: tar_gz((member("zeros"), b"\x00" * (15 << 20))),
        "archive bomb",
    ),
    "cut": (lambda: tar_gz((member("f"), b"hello" * 1000))[:-40], "cut upload"),
    # gzip's magic, then a compression method gzip does not have: garbage whatever the
    # random bytes (with method 8 they may inflate into a stream that ends early).
    "garbage": (lambda: b"\x1f\x8b\x07" + os.urandom(200), "not a readable tar.gz"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TARS))
def test_a_hostile_tar_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    make, words = HOSTILE_TARS[name]
    line = refused(tmp_path, make(), "tar.gz")
    assert words in line, line


HOSTILE_ZIPS: dict[str, tuple[Callable[[], bytes], str]] = {
    "absolute": (lambda: zipped(("/abs", b"x")), "absolute"),
    "dotdot": (lambda: zipped(("../x", b"x")), "'..'"),
    "backslash": (lambda: zipped(("a\\..\\x", b"x")), "backslash"),
    "symlink": (lambda: zipped((zinfo("l", stat.S_IFLNK | 0o777), b"/etc/passwd")), "symbolic"),
    "device": (lambda: zipped((zinfo("d", stat.S_IFCHR | 0o644), b"")), "device"),
    "setuid": (lambda: zipped((zinfo("s", stat.S_IFREG | 0o4755), b"x")), "setuid"),
    "count": (lambda: zipped(*((f"f{i}", b"") for i in range(51))), "more than 50 files"),
    "ratio": (lambda: zipped(("zeros", b"\x00" * (15 << 20))), "archive bomb"),
    "size": (lambda: zipped(("big", os.urandom(1 << 20) * 17)), "more than 16 MiB"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ZIPS))
def test_a_hostile_zip_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    make, words = HOSTILE_ZIPS[name]
    line = refused(tmp_path, make(), "zip")
    assert words in line, line


def test_a_zip_name_in_a_local_code_page_is_refused(tmp_path: Path) -> None:
    data = bytearray(zipped(("bad-X.txt", b"x")))
    # The name's bytes as a local code page writes them: 0xff, no UTF-8 flag.
    for at in [i for i in range(len(data)) if data[i : i + 9] == b"bad-X.txt"]:
        data[at + 4] = 0xFF
    line = refused(tmp_path, bytes(data), "zip")
    assert "not valid UTF-8" in line


def test_a_zip_member_that_lies_about_its_size_is_refused(tmp_path: Path) -> None:
    data = bytearray(zipped(("f", b"a" * 1000)))
    # The central directory's uncompressed size says 10 bytes; 1000 come out.
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    line = refused(tmp_path, bytes(data), "zip")
    assert "more than it declares" in line or "not a readable zip" in line


def test_an_honest_archive_unpacks_readable_by_others(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "lib" / "deep").mkdir(parents=True)
    (src / "bot.toml").write_text('name = "x"\ncommand = ["./run"]\n')
    (src / "run").write_text("#!/bin/sh\n")
    (src / "run").chmod(0o700)
    (src / "lib" / "deep" / "data.txt").write_text("d")
    data = pack_folder(src)
    assert pack_folder(src) == data, "the same files pack to the same bytes (and hash)"
    old = os.umask(0o077)  # as the referee runs
    try:
        names = unpack(data, "tar.gz", tmp_path / "out", BOUNDS)
    finally:
        os.umask(old)
    out = tmp_path / "out"
    assert bot_file_in(names, "./bot.toml") == "bot.toml"
    assert stat.S_IMODE((out / "run").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "bot.toml").stat().st_mode) == 0o644
    assert stat.S_IMODE((out / "lib" / "deep").stat().st_mode) == 0o755
    with pytest.raises(ArchiveRefused, match="not inside the archive"):
        bot_file_in(names, "../bot.toml")
    with pytest.raises(ArchiveRefused, match="not in the archive"):
        bot_file_in(names, "other.toml")
    zdata = zipped(("bot.toml", b"x"), (zinfo("bin/run", stat.S_IFREG | 0o755), b"#!"))
    unpack(zdata, "zip", tmp_path / "zout", BOUNDS)
    assert stat.S_IMODE((tmp_path / "zout" / "bin" / "run").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "zout" / "bin").stat().st_mode) == 0o755


def test_packing_refuses_a_link_in_the_folder(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "secret").symlink_to("/etc/passwd")
    with pytest.raises(ArchiveRefused, match="symbolic link"):
        pack_folder(tmp_path / "bot")
