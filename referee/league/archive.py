"""Uploaded archives: packed by ``referee league submit``, unpacked by the league, safely.

An upload is the new front door: whatever an archive holds, unpacking it writes regular
files and folders inside one fresh folder and nothing else, or refuses the whole archive
with one line (:class:`ArchiveRefused`) before anything of it is kept. The rules, the same
for ``.tar.gz`` and ``.zip``:

- at most ``max_files`` members, at most ``max_unpacked`` bytes unpacked in all (counted
  as the bytes come out of the decompressor, not as the headers claim), and a compression
  ratio of at most :data:`MAX_RATIO` once more than :data:`RATIO_FLOOR` bytes came out:
  archive bombs stop there;
- names: relative, UTF-8, no ``..`` part, no NUL or backslash, no empty part;
- only regular files and folders: a symbolic or hard link (wherever it points), a device,
  a FIFO is refused; so is a setuid, setgid or sticky bit.

A tar archive is then unpacked by Python's own ``tarfile`` with ``filter="data"`` (which
refuses the same things again, and makes every file readable by others and writable by
its owner only); a zip archive member by member under the same rules. Files are 0644, or
0755 when the archive marks them executable; folders 0755 (the league's bots run as uids
of their own and read them).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Formats an upload may have.
FORMATS = ("tar.gz", "zip")
#: Once this many bytes came out, more than MAX_RATIO times the archive's size is a bomb.
RATIO_FLOOR = 8 << 20
#: Unpacked bytes per archive byte allowed (text compresses 3-10 times; a bomb 1000).
MAX_RATIO = 200
#: The longest member name, in bytes.
MAX_NAME = 1024
_CHUNK = 1 << 16


class ArchiveRefused(ValueError):
    """An archive the league will not unpack; the message says why, in one line."""


@dataclass(frozen=True)
class Bounds:
    """What one archive may unpack to."""

    max_files: int = 10_000
    max_unpacked: int = 256 << 20


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex (an archive's key in the store)."""
    return hashlib.sha256(data).hexdigest()


def format_of(path: Path) -> str:
    """The upload format of an archive file by its name; ArchiveRefused for another."""
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if name.endswith(".zip"):
        return "zip"
    raise ArchiveRefused(f"{path}: not a folder, a .tar.gz or a .zip")


# -- packing (the submitter's side) -------------------------------------------------------


def pack_folder(folder: Path) -> bytes:
    """``folder`` as a .tar.gz, the same bytes for the same files (sorted names, no times,
    owners or groups), so that the same code makes the same hash. Links and other
    non-regular files are refused here already, in one line."""
    folder = folder.resolve()
    buffer = io.BytesIO()
    with (
        gzip_writer(buffer) as raw,
        tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path in _walk(folder):
            rel = path.relative_to(folder).as_posix()
            st = path.lstat()
            info = tarfile.TarInfo(rel)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                info.mode = 0o755 if st.st_mode & 0o111 else 0o644
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                raise ArchiveRefused(
                    f"{path} is {kind}; an upload holds regular files and folders only "
                    "(copy what a link points to into the folder)"
                )
    return buffer.getvalue()


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        base = Path(root)
        entries = sorted([*dirs, *files])
        for name in entries:
            yield base / name


class gzip_writer:
    """A gzip stream without a file name or time in its header (reproducible bytes)."""

    def __init__(self, out: io.BytesIO) -> None:
        import gzip

        self._gz = gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0)

    def __enter__(self) -> io.BufferedIOBase:
        return self._gz  # type: ignore[return-value]

    def __exit__(self, *exc: object) -> None:
        self._gz.close()


# -- unpacking (the league's side) ------------------------------------------------------


def check_name(name: str, raw: bytes | None = None) -> str:
    """``name`` as a safe relative POSIX path (no trailing slash); ArchiveRefused naming
    it otherwise."""
    shown = repr(name)
    if raw is not None:
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ArchiveRefused(f"member name {raw!r} is not valid UTF-8") from None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ArchiveRefused(f"member name {shown} is not valid UTF-8") from None
    if len(name.encode("utf-8")) > MAX_NAME:
        raise ArchiveRefused(f"member name {shown[:80]}... is longer than {MAX_NAME} bytes")
    if "\x00" in name or "\\" in name:
        raise ArchiveRefused(f"member name {shown} holds a NUL or a backslash")
    if name.startswith("/"):
        raise ArchiveRefused(f"member name {shown} is absolute")
    stripped = name.rstrip("/")
    parts = stripped.split("/")
    if not stripped or any(p in ("", "..") for p in parts):
        raise ArchiveRefused(f"member name {shown} has an empty or '..' part")
    parts = [p for p in parts if p != "."]
    if not parts:
        raise ArchiveRefused(f"member name {shown} names the archive's root")
    return "/".join(parts)


def _is_root(name: str) -> bool:
    """``name`` is the archive's folder itself ("./", ".")."""
    return all(part in ("", ".") for part in name.split("/"))


def _mode_bits(mode: int, name: str) -> None:
    if mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX):
        raise ArchiveRefused(f"member {name!r} has a setuid, setgid or sticky bit")


class _Counter:
    def __init__(self, bounds: Bounds, archive_size: int) -> None:
        self.bounds = bounds
        self.archive_size = max(1, archive_size)
        self.files = 0
        self.bytes = 0

    def member(self) -> None:
        self.files += 1
        if self.files > self.bounds.max_files:
            raise ArchiveRefused(
                f"more than {self.bounds.max_files} files (max_files in [hosting])"
            )

    def out(self, count: int) -> None:
        self.bytes += count
        if self.bytes > self.bounds.max_unpacked:
            raise ArchiveRefused(
                f"unpacks to more than {self.bounds.max_unpacked >> 20} MiB "
                "(max_unpacked_mb in [hosting])"
            )
        if self.bytes > RATIO_FLOOR and self.bytes > MAX_RATIO * self.archive_size:
            raise ArchiveRefused(
                f"unpacks to more than {MAX_RATIO} times its size ({self.archive_size} bytes): "
                "an archive bomb"
            )


def _gunzip_bounded(
    data: bytes, counter: _Counter, spool: tempfile.SpooledTemporaryFile[bytes]
) -> None:
    """Decompress a gzip stream into ``spool``, counting every byte that comes out (a
    tar's headers and padding included), so a bomb stops at the bounds, not at the disk."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    view = memoryview(data)
    pos = 0
    while True:
        if inflater.unconsumed_tail:
            chunk = inflater.decompress(inflater.unconsumed_tail, _CHUNK)
        elif pos < len(view):
            chunk = inflater.decompress(view[pos : pos + _CHUNK], _CHUNK)
            pos += _CHUNK
        else:
            break
        counter.out(len(chunk))
        spool.write(chunk)
        if inflater.eof:
            break
    if not inflater.eof:
        raise ArchiveRefused("the gzip stream ends early (a cut upload?)")


def unpack(data: bytes, fmt: str, dest: Path, bounds: Bounds) -> list[str]:
    """Unpack archive ``data`` of format ``fmt`` into the new folder ``dest`` (which must
    not exist); the member names kept. Raises :class:`ArchiveRefused` (and leaves no
    ``dest``) for anything the rules refuse or a malformed archive."""
    if fmt not in FORMATS:
        raise ArchiveRefused(f"format {fmt!r} is not allowed; allowed: {', '.join(FORMATS)}")
    dest.mkdir()
    # Modes are set, not asked of mkdir: the referee runs with umask 077.
    os.chmod(dest, 0o755)
    try:
        names = _unzip(data, dest, bounds) if fmt == "zip" else _untar(data, dest, bounds)
        # Folders the archive did not list were made by tarfile under the umask.
        for root, dirs, _ in os.walk(dest):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        return names
    except ArchiveRefused:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise ArchiveRefused(f"not a readable {fmt} archive: {_line(exc)}") from None
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _untar(data: bytes, dest: Path, bounds: Bounds) -> list[str]:
    counter = _Counter(bounds, len(data))
    with tempfile.SpooledTemporaryFile(max_size=32 << 20) as spool:
        _gunzip_bounded(data, counter, spool)
        spool.seek(0)
        with tarfile.open(
            fileobj=spool, mode="r:", encoding="utf-8", errors="surrogateescape"
        ) as tar:
            members = []
            names = []
            for member in tar:
                counter.member()
                if member.isdir() and _is_root(member.name):
                    continue  # "./": the folder itself (tar -c . writes it)
                name = check_name(member.name)
                if member.issym() or member.islnk():
                    raise ArchiveRefused(
                        f"member {name!r} is a {'symbolic' if member.issym() else 'hard'} link "
                        f"(to {member.linkname!r}); an upload holds regular files and folders only"
                    )
                if not (member.isreg() or member.isdir()):
                    raise ArchiveRefused(
                        f"member {name!r} is a device, FIFO or other special file; an upload "
                        "holds regular files and folders only"
                    )
                _mode_bits(member.mode, name)
                member.name = name
                members.append(member)
                names.append(name)
            # Python's own rules on top of these (they refuse the same things again, and
            # set the modes): nothing of a member that slipped through is written.
            tar.extractall(dest, members=members, filter=_data_filter)
    return names


def _data_filter(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
    member = tarfile.data_filter(member, path)
    # Readable by the bots' uids: files 0644 or 0755, folders 0755.
    mode = 0o755 if member.isdir() or (member.mode or 0) & 0o100 else 0o644
    # No owner taken from the archive (None: the extracting user's, as the data filter's
    # documentation says for untrusted archives).
    return member.replace(mode=mode, uid=None, gid=None, uname=None, gname=None, deep=False)  # type: ignore[arg-type]


def _unzip(data: bytes, dest: Path, bounds: Bounds) -> list[str]:
    counter = _Counter(bounds, len(data))
    names: list[str] = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        for info in infos:
            counter.member()
            raw = None if info.flag_bits & 0x800 else _cp437_raw(info.orig_filename)
            if raw is not None and any(b >= 0x80 for b in raw):
                # No UTF-8 flag and bytes beyond ASCII: a name in some local code page.
                raise ArchiveRefused(
                    f"member name {raw!r} is not valid UTF-8 (the zip does not mark it UTF-8)"
                )
            if info.is_dir() and _is_root(info.filename):
                continue
            name = check_name(info.filename)
            unix = info.external_attr >> 16
            kind = stat.S_IFMT(unix)
            is_dir = info.is_dir()
            if info.create_system == 3 and kind:
                if stat.S_ISLNK(kind):
                    raise ArchiveRefused(
                        f"member {name!r} is a symbolic link; an upload holds regular files "
                        "and folders only"
                    )
                if not (stat.S_ISREG(kind) or stat.S_ISDIR(kind)):
                    raise ArchiveRefused(
                        f"member {name!r} is a device, FIFO or other special file; an upload "
                        "holds regular files and folders only"
                    )
                is_dir = is_dir or stat.S_ISDIR(kind)
                _mode_bits(unix, name)
            if info.flag_bits & 0x1:
                raise ArchiveRefused(f"member {name!r} is encrypted")
            target = dest / name
            if not target.resolve().is_relative_to(dest.resolve()):
                raise ArchiveRefused(
                    f"member {name!r} would be written outside the archive's folder"
                )
            names.append(name)
            if is_dir:
                _make_parents(target / "x", dest)
                continue
            _make_parents(target, dest)
            if target.exists():
                raise ArchiveRefused(f"member {name!r} appears twice")
            executable = bool(unix & 0o100) if info.create_system == 3 else False
            written = 0
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out, z.open(info) as src:
                while True:
                    chunk = src.read(_CHUNK)
                    if not chunk:
                        break
                    written += len(chunk)
                    counter.out(len(chunk))
                    if written > info.file_size:
                        raise ArchiveRefused(f"member {name!r} unpacks to more than it declares")
                    out.write(chunk)
            os.chmod(target, 0o755 if executable else 0o644)
    return names


def _make_parents(target: Path, dest: Path) -> None:
    parent = target.parent
    missing = []
    while parent != dest and not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        folder.mkdir()
        os.chmod(folder, 0o755)
    if parent != dest and (parent.is_symlink() or not parent.is_dir()):
        raise ArchiveRefused(f"member {target.relative_to(dest)!s} lies under a file")


def _cp437_raw(name: str) -> bytes:
    try:
        return name.encode("cp437")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape")


def bot_file_in(members: list[str], bot_file: str) -> str:
    """The bot file's normalised path, which must be a member; ArchiveRefused otherwise."""
    try:
        name = check_name(bot_file)
    except ArchiveRefused as exc:
        raise ArchiveRefused(
            f"the bot file {bot_file!r} is not inside the archive: {exc}"
        ) from None
    if name not in members:
        raise ArchiveRefused(f"the bot file {bot_file!r} is not in the archive")
    return name
