"""What a sandboxed bot may read of the host: its runtime, a finite list of files.

A bot reads its own folder, what its bot file declares under ``[sandbox] read``, a few
files of ``/etc``, and the *runtime* it runs on: the interpreter and the libraries it
loads, resolved here to files the referee can name and size, the way a Flatpak runtime
or a distroless image is a named set of files. Nothing else of the host: not all of
``/usr``, whose gigabytes of rarely read files would be a mailbox from one sandbox to a
later one (a seat reads chosen pages of them, a later seat times its reads of the same
pages; docs/security.md). What the sandbox may read, the referee keeps resident
(:mod:`referee.jail.resident`), so that no read carries a bit.

A bot file names its runtime (``runtime = "python3"``, ``"node"``, ``"native"`` or
``"jvm"``), or the referee infers it from the command (:func:`infer`):

- ``python3``: the referee's own interpreter: its executable, its standard library (not
  its tests, IDLE, its static build files or its ``site-packages``), the packages the
  referee installs with it (grpcio, protobuf and everything the ``referee`` package
  requires, read from the installed distributions' own file lists), the generated
  ``sticheln`` stubs and the ``referee`` package (the rules engine a bot may simulate
  with), and the shared libraries all of these load;
- ``node``: the ``node`` executable and the libraries it loads (a Node bot brings its
  modules in its folder, ``node_modules``);
- ``jvm``: the Java installation ``java`` belongs to (its home folder) and the libraries
  its executables and shared objects load;
- ``native``: the libraries the bot's executable loads (a static binary needs none); a
  script's ``#!`` line names its interpreter, which is read like a command.

Libraries are found as the dynamic loader finds them (``DT_NEEDED`` of each ELF file, its
run paths, ``/etc/ld.so.cache``), by reading the files, never by running them. A runtime's
list depends on the host alone, so it is made once per process (:func:`read_set`).
Build steps of hosted uploads run with the whole system (``/usr``), their own policy.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import struct
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The runtimes a bot file may name.
RUNTIMES = ("python3", "node", "native", "jvm")

#: Parts of the standard library's folder a bot never needs, shown empty in the sandbox.
STDLIB_HIDDEN = ("site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo")
#: The distributions of the ``python3`` runtime's packages (with what they require).
PYTHON_DISTRIBUTIONS = ("sticheln-referee", "grpcio", "protobuf")
#: Folders the dynamic loader searches after the cache.
DEFAULT_LIBRARY_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)


class RuntimeUnavailable(RuntimeError):
    """A bot's runtime cannot be made here; the message says why, in one line."""


@dataclass(frozen=True)
class ReadSet:
    """What of the host a runtime lets a sandboxed bot read."""

    #: The runtime's name (:data:`RUNTIMES`).
    runtime: str
    #: Files and folders bound read-only at their place.
    binds: tuple[Path, ...] = ()
    #: Folders inside a bound folder shown empty (a tmpfs over them).
    hidden: tuple[Path, ...] = ()
    #: Symbolic links made in the sandbox on the way to a bound file: (link, target).
    links: tuple[tuple[Path, str], ...] = ()
    #: (files, bytes) of what it binds, counted once.
    size: tuple[int, int] = field(default=(0, 0), compare=False)

    def describe(self) -> str:
        files, size = self.size
        return f"runtime {self.runtime} ({files:,} files, {size / (1 << 20):,.1f} MiB)"


def walk(
    paths: Iterable[Path], hidden: Sequence[Path] = (), sizes: bool = False
) -> Iterator[tuple[str, bool, int]]:
    """Every file and folder under ``paths`` (links not followed, ``hidden`` left out):
    (path, is a folder, the file's size when ``sizes``, else 0). Paths are text: a
    runtime has thousands of files, and a :class:`~pathlib.Path` for each cost most of
    the time."""
    skip = {str(p) for p in hidden}
    for root in paths:
        if root.is_symlink():  # a bound link shows what it leads to
            root = root.resolve()
        if not root.is_dir():
            if root.exists():
                yield str(root), False, root.lstat().st_size if sizes else 0
            continue
        stack = [str(root)]
        while stack:
            folder = stack.pop()
            yield folder, True, 0
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue
            for entry in entries:
                if entry.path in skip:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size if sizes else 0
                    yield entry.path, False, size


def measure(paths: Iterable[Path], hidden: Sequence[Path] = ()) -> tuple[int, int]:
    """(files, bytes) under ``paths``."""
    files = size = 0
    for _, folder, bytes_ in walk(paths, hidden, sizes=True):
        if not folder:
            files += 1
            size += bytes_
    return files, size


# -- ELF: the libraries a file loads, read from the file --------------------------------

_PT_DYNAMIC, _PT_INTERP, _PT_LOAD = 2, 3, 1
_DT_NEEDED, _DT_STRTAB, _DT_RPATH, _DT_RUNPATH = 1, 5, 15, 29


@dataclass(frozen=True)
class Elf:
    interpreter: str
    needed: tuple[str, ...]
    runpath: tuple[str, ...]


def read_elf(path: Path) -> Elf | None:
    """The loader, ``DT_NEEDED`` names and run paths of a 64-bit little-endian ELF file;
    None for anything else."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff, phentsize, phnum = (
                struct.unpack_from("<Q", head, 32)[0],
                *struct.unpack_from("<HH", head, 54),
            )
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            loads: list[tuple[int, int, int]] = []
            interpreter, dynamic = "", (0, 0)
            for i in range(phnum):
                kind, _, offset, vaddr, _, filesz = struct.unpack_from(
                    "<IIQQQQ", table, i * phentsize
                )
                if kind == _PT_LOAD:
                    loads.append((vaddr, offset, filesz))
                elif kind == _PT_INTERP:
                    f.seek(offset)
                    interpreter = f.read(filesz).rstrip(b"\0").decode(errors="replace")
                elif kind == _PT_DYNAMIC:
                    dynamic = (offset, filesz)
            if not dynamic[1]:
                return Elf(interpreter, (), ())
            f.seek(dynamic[0])
            raw = f.read(dynamic[1])
            entries = [struct.unpack_from("<qQ", raw, i) for i in range(0, len(raw) - 15, 16)]
            strtab = next((v for t, v in entries if t == _DT_STRTAB), None)
            if strtab is None:
                return Elf(interpreter, (), ())
            base = next((o + strtab - va for va, o, n in loads if va <= strtab < va + n), None)
            if base is None:
                return Elf(interpreter, (), ())

            def string(at: int) -> str:
                f.seek(base + at)
                data = f.read(4096)
                return data[: data.find(b"\0")].decode(errors="replace")

            needed = tuple(string(v) for t, v in entries if t == _DT_NEEDED)
            runpath = [string(v) for t, v in entries if t == _DT_RUNPATH]
            if not runpath:
                runpath = [string(v) for t, v in entries if t == _DT_RPATH]
            paths = tuple(p for r in runpath for p in r.split(":") if p)
            return Elf(interpreter, needed, paths)
    except (OSError, struct.error, IndexError):
        return None


@functools.cache
def _ld_cache() -> dict[str, tuple[str, ...]]:
    """The dynamic loader's cache: library name -> paths, as ``ldconfig`` wrote them."""
    try:
        data = Path("/etc/ld.so.cache").read_bytes()
    except OSError:
        return {}
    start = data.find(b"glibc-ld.so.cache1.1")
    if start < 0:
        return {}
    (count,) = struct.unpack_from("<I", data, start + 20)
    found: dict[str, list[str]] = {}

    def text(at: int) -> str:
        end = data.find(b"\0", start + at)
        return data[start + at : end].decode(errors="replace")

    for i in range(count):
        _, key, value = struct.unpack_from("<iII", data, start + 48 + 24 * i)
        found.setdefault(text(key), []).append(text(value))
    return {k: tuple(v) for k, v in found.items()}


def _is_elf64(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return head[:5] == b"\x7fELF\x02" and head[18:20] == b"\x3e\x00"


def _find_library(name: str, origin: Path, runpath: Sequence[str]) -> str | None:
    if "/" in name:
        return name if os.path.exists(name) else None
    for folder in runpath:
        folder = folder.replace("$ORIGIN", str(origin)).replace("${ORIGIN}", str(origin))
        candidate = os.path.join(folder, name)
        if _is_elf64(candidate):
            return candidate
    for candidate in _ld_cache().get(name, ()):
        if _is_elf64(candidate):
            return candidate
    for folder in DEFAULT_LIBRARY_DIRS:
        candidate = os.path.join(folder, name)
        if _is_elf64(candidate):
            return candidate
    return None


def library_closure(files: Iterable[Path]) -> set[Path]:
    """The loaders and libraries ``files`` load, and what those load, as the paths the
    loader opens (links not resolved)."""
    found: set[Path] = set()
    todo = list(files)
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        real = Path(os.path.realpath(path))
        if real in seen:
            continue
        seen.add(real)
        elf = read_elf(real)
        if elf is None:
            continue
        names = [elf.interpreter] if elf.interpreter else []
        for name in [*names, *elf.needed]:
            library = _find_library(name, real.parent, elf.runpath)
            if library is not None:
                found.add(Path(library))
                todo.append(Path(library))
    return found


# -- the runtimes ------------------------------------------------------------------------


def _chain(path: Path, links: dict[Path, str]) -> Path:
    """``path`` with every link on the way resolved, the links noted in ``links``: the
    real file, whose place in the sandbox is reached through the same links."""
    parts = list(Path(os.path.abspath(path)).parts[1:])
    resolved = Path("/")
    hops = 0
    while parts:
        part = parts.pop(0)
        if part in (".", ""):
            continue
        if part == "..":
            resolved = resolved.parent
            continue
        candidate = resolved / part
        if candidate.is_symlink() and hops < 40:
            hops += 1
            target = os.readlink(candidate)
            links[candidate] = target
            if target.startswith("/"):
                resolved = Path("/")
                parts = [*Path(target).parts[1:], *parts]
            else:
                parts = [*Path(target).parts, *parts]
            continue
        resolved = candidate
    return resolved


def within(path: Path, roots: Iterable[Path]) -> bool:
    """``path`` is one of ``roots`` or lies inside one (compared as text: called for
    every pair of a policy's many paths)."""
    text = str(path)
    for root in roots:
        prefix = str(root)
        if text == prefix or text.startswith(prefix.rstrip("/") + "/"):
            return True
    return False


def assemble(
    runtime: str, folders: Iterable[Path], files: Iterable[Path], hidden: Iterable[Path] = ()
) -> ReadSet:
    """A read set: ``folders`` whole (but ``hidden``), ``files`` through their links, and
    the libraries every ELF file of either loads."""
    links: dict[Path, str] = {}
    real_folders = {_chain(p, links) for p in folders if p.exists()}
    hidden = tuple(sorted(p for p in hidden if p.exists()))
    # Tk's module loads X11 and Tk; a bot has no display to show a window on.
    elves = [
        Path(text)
        for text, folder, _ in walk(sorted(real_folders), hidden)
        if not folder
        and ".so" in (name := os.path.basename(text))
        and not name.startswith("_tkinter")
    ]
    wanted = {*files, *library_closure([*files, *elves])}
    real_files = {_chain(p, links) for p in wanted if p.exists()}
    binds = [p for p in real_folders if not within(p, real_folders - {p})]
    binds += [p for p in real_files if not within(p, binds)]
    # A link inside a bound folder is there already; one above a bound path is made.
    kept = {k: v for k, v in links.items() if not within(k, binds)}
    ordered = tuple(sorted(binds, key=lambda p: (len(p.parts), str(p))))
    return ReadSet(
        runtime=runtime,
        binds=ordered,
        hidden=hidden,
        links=tuple(sorted(kept.items())),
        size=measure(ordered, hidden),
    )


def _required(names: Sequence[str]) -> set[str]:
    """The installed distributions ``names`` and everything they require (no extras), by
    canonical name."""
    import importlib.metadata  # here, not at the top: costly, needed for Python bots only

    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[name] = dist
        for requirement in dist.requires or []:
            spec, _, marker = requirement.partition(";")
            if "extra" in marker or _marker_false(marker):
                continue
            todo.append(re.split(r"[\s\[<>=!~(]", spec.strip(), maxsplit=1)[0])
    return set(found)


def _marker_false(marker: str) -> bool:
    """Whether an environment marker is false here (kept when it cannot be told)."""
    if not marker.strip():
        return False
    try:
        from packaging.markers import Marker
    except ImportError:
        return False
    try:
        return not Marker(marker).evaluate({"extra": ""})
    except Exception:
        return False


def package_paths(wanted: set[str], site: str) -> set[Path]:
    """The smallest folders and files of ``site`` (a ``site-packages``) holding the files
    of the distributions ``wanted`` (canonical names) and nothing of another's."""
    installed = list(_installed(site))
    mine = [f.split("/") for name, files in installed if name in wanted for f in files]
    mine = [parts for parts in mine if ".." not in parts]
    # Every path on the way to one of the distributions' files (the files too), then those
    # that hold a file of another distribution as well (a shared namespace folder: google/).
    ways = {"/".join(parts[:depth]) for parts in mine for depth in range(1, len(parts) + 1)}
    shared: set[str] = set()
    for name, files in installed:
        if name in wanted:
            continue
        for file in files:
            end = file.find("/")
            while end > 0 and file[:end] in ways:
                shared.add(file[:end])
                end = file.find("/", end + 1)
            if file in ways:
                shared.add(file)
    paths: set[Path] = set()
    for parts in mine:
        for depth in range(1, len(parts) + 1):
            if "/".join(parts[:depth]) not in shared:
                paths.add(Path(site, *parts[:depth]))
                break
    return {p for p in paths if p.exists()}


def _canonical(name: str) -> str:
    """A distribution's name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed(site: str) -> Iterator[tuple[str, list[str]]]:
    """Each distribution installed in ``site``: its canonical name and its files (paths
    relative to ``site``), read from its ``RECORD`` as text; importlib.metadata's own
    objects for tens of thousands of files cost most of a Python runtime's read set."""
    import csv
    import importlib.metadata

    with os.scandir(site) as listing:
        folders = sorted(e.name for e in listing if e.name.endswith((".dist-info", ".egg-info")))
    for folder in folders:
        name = _canonical(folder.rsplit(".", 1)[0].split("-", 1)[0])
        try:
            with open(os.path.join(site, folder, "RECORD"), encoding="utf-8", newline="") as f:
                files = [row[0] for row in csv.reader(f) if row]
        except (OSError, UnicodeDecodeError):  # no RECORD (an egg-info): as importlib reads it
            dist = importlib.metadata.PathDistribution(Path(site, folder))
            files = [str(file) for file in dist.files or []]
        yield name, files


def _python() -> ReadSet:
    stdlib = Path(os.__file__).parent
    folders: set[Path] = {stdlib}
    hidden = {stdlib / name for name in STDLIB_HIDDEN}
    hidden |= {p for p in stdlib.glob("config-*") if p.is_dir()}
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")
    if dynload.is_dir():
        folders.add(dynload)
    for name in ("sticheln", "referee"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders.update(Path(p) for p in spec.submodule_search_locations)
    files: set[Path] = set()
    referee_spec = importlib.util.find_spec("referee")
    if referee_spec is not None and referee_spec.origin:
        files.update(Path(referee_spec.origin).parent.parent.glob("*__mypyc*.so"))
    site = os.path.abspath(sysconfig.get_paths()["purelib"])
    packages = package_paths(_required(PYTHON_DISTRIBUTIONS), site)
    folders |= {p for p in packages if p.is_dir()}
    files |= {p for p in packages if not p.is_dir()}
    # The interpreter as bots name it (the environment's bin/python3 and its links), and
    # the environment's pyvenv.cfg, which makes it this environment's interpreter.
    bindir = Path(sys.executable).parent
    files |= {p for p in bindir.glob("python*") if p.name[6:].replace(".", "").isdigit()}
    files.add(Path(sys.executable))
    files |= {p for p in (Path(sys.prefix) / "pyvenv.cfg",) if p.exists()}
    libdir = sysconfig.get_config_var("LIBDIR")
    library = sysconfig.get_config_var("LDLIBRARY")
    if libdir and library and (Path(libdir) / library).exists():
        files.add(Path(libdir) / library)
    return assemble("python3", folders, files, hidden)


def _program(name: str, path: str) -> Path:
    found = shutil.which(name, path=path)
    if found is None:
        raise RuntimeUnavailable(f"{name} is not installed here (not found on {path})")
    return Path(found)


def _node(path: str) -> ReadSet:
    return assemble("node", (), [_program("node", path)])


def _jvm(path: str) -> ReadSet:
    java = _program("java", path)
    home = Path(os.path.realpath(java)).parent.parent
    # Debian's JDK keeps its configuration in /etc (links from its home's conf/ lead there).
    return assemble(
        "jvm", [home, *Path("/etc").glob(f"{home.name.removesuffix('-amd64')}*")], [java]
    )


def interpreter(executable: Path) -> list[str]:
    """The command a script's ``#!`` line names ([] for anything else)."""
    try:
        with open(executable, "rb") as f:
            head = f.read(256)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode(errors="replace").split()


def _native(executable: Path, path: str, depth: int = 0) -> ReadSet:
    command = interpreter(executable)
    files = [executable]
    if command and depth < 4:
        program = Path(command[0])
        files.append(program)
        if program.name == "env" and len(command) > 1:
            named = [a for a in command[1:] if not a.startswith("-")]
            if named:
                files.append(_program(named[0], path))
    return assemble("native", (), files)


def _env_target(command: Sequence[str], workdir: Path, path: str) -> Path | None:
    """The executable a command ``env NAME=value ... program`` runs, else None."""
    if not command or Path(command[0]).name != "env":
        return None
    program = env_program(command[1:])
    return None if program is None else resolve_command([program], workdir, path)


def resolve_command(command: Sequence[str], workdir: Path, path: str) -> Path | None:
    """The executable ``command`` starts: found on ``path`` (the bot's), or relative to its
    folder; None when not found."""
    if not command:
        return None
    name = command[0]
    if "/" in name:
        candidate = Path(name) if os.path.isabs(name) else workdir / name
        return candidate if candidate.exists() else None
    found = shutil.which(name, path=path)
    return Path(found) if found else None


def env_program(args: Sequence[str]) -> str | None:
    """The program ``env`` runs given ``args`` (its arguments): the first that is neither
    an option nor a ``NAME=value`` assignment; None when there is none."""
    named = [a for a in args if not a.startswith("-") and "=" not in a]
    return named[0] if named else None


def infer(command: Sequence[str], workdir: Path, path: str) -> str:
    """The runtime a bot file that names none runs on, from its command: ``python3`` for
    ``python3*``/``python``, ``node`` for ``node``, ``jvm`` for ``java``, what a script's
    ``#!`` line names or ``env`` runs, else ``native``."""
    names = [Path(command[0]).name] if command else []
    if names == ["env"] and (program := env_program(command[1:])) is not None:
        # ``env NAME=value ... program args``: the runtime is the program's.
        return infer([program, *command[command.index(program) + 1 :]], workdir, path)
    executable = resolve_command(command, workdir, path)
    if executable is not None:
        line = interpreter(executable)
        if line:
            named = (
                [a for a in line[1:] if not a.startswith("-")] if line[0].endswith("/env") else []
            )
            names.append(Path(named[0] if named else line[0]).name)
    for name in names:
        if re.fullmatch(r"python(3(\.\d+)?)?", name):
            return "python3"
        if name in ("node", "nodejs"):
            return "node"
        if name == "java":
            return "jvm"
    return "native"


@functools.cache
def _cached(runtime: str, path: str) -> ReadSet:
    if runtime == "python3":
        return _python()
    if runtime == "node":
        return _node(path)
    if runtime == "jvm":
        return _jvm(path)
    raise ValueError(runtime)


def read_set(runtime: str, command: Sequence[str], workdir: Path, path: str) -> ReadSet:
    """What of the host ``runtime`` lets a bot started with ``command`` in ``workdir`` (and
    ``PATH`` ``path``) read (its own folder aside); made once per process but for
    ``native``, whose list is its executable's. Raise :class:`RuntimeUnavailable` in one
    line when the runtime cannot run here."""
    if runtime not in RUNTIMES:
        raise RuntimeUnavailable(
            f"runtime {runtime!r} is not allowed; allowed: {', '.join(RUNTIMES)}"
        )
    executable = resolve_command(command, workdir, path)
    own = (
        assemble("native", (), ())
        if executable is None
        else _native_cached(executable, os.stat(executable).st_mtime_ns, path)
    )
    target = _env_target(command, workdir, path)
    if target is not None:
        # ``env NAME=value ... program``: the program env runs is read too.
        own = merge(own, _native_cached(target, os.stat(target).st_mtime_ns, path))
    if runtime == "native":
        return own
    try:
        base = _cached(runtime, path)
    except RuntimeUnavailable as exc:
        raise RuntimeUnavailable(f"runtime {runtime}: {exc}") from None
    # A native program that starts the interpreter (a wrapper) brings its own libraries.
    return merge(base, own)


def merge(base: ReadSet, more: ReadSet) -> ReadSet:
    """``base`` and what of ``more`` it lacks, under ``base``'s name."""
    extra = [p for p in more.binds if not within(p, base.binds)]
    if not extra:
        return base
    binds = tuple(sorted({*base.binds, *extra}, key=lambda p: (len(p.parts), str(p))))
    links = dict(base.links)
    links.update((k, v) for k, v in more.links if not within(k, binds))
    files, size = measure(extra)
    return ReadSet(
        runtime=base.runtime,
        binds=binds,
        hidden=base.hidden,
        links=tuple(sorted(links.items())),
        size=(base.size[0] + files, base.size[1] + size),
    )


@functools.lru_cache(maxsize=256)
def _native_cached(executable: Path, mtime: int, path: str) -> ReadSet:
    del mtime  # part of the key: a rebuilt executable is read again
    return _native(executable, path)
