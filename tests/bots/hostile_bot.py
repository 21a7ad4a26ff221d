"""A hostile bot: it plays legally (the lowest card), and first tries every route it knows
to what its seat must not learn or reach. It prints one line per route to stdout (its log):

    ROUTE <name> blocked|OPEN <what it got>

and ``SEEN <text>`` lines with whatever it read, so that the test can also look for secrets
in its log. Environment (besides the referee's):

- ``HOSTILE_PATHS``: ``label=path`` items to try to list or read (the output folder, a
  record, a log, the database, another bot's folder), separated by ``:``;
- ``HOSTILE_NO_WRITE``: write nowhere (for a run without a sandbox);
- ``HOSTILE_PORTS``: TCP ports to try on 127.0.0.1 and ::1 (the referee's, a listener);
- ``HOSTILE_SECRET``: the beginning of a text that, read through any descriptor the bot finds open, means
  the descriptor was inherited from the referee;
- ``HOSTILE_TMP_MB``: the size its writable ``/tmp`` is meant to have (it fills it to see).

Links in its own folder (``link-*``, made by the test to host files) are followed too.

Besides files and sockets, it reads the kernel's manual: keyrings, tracing, io_uring,
userfaultfd, performance counters, new namespaces, personality flags, signals to every
process it may reach, System V IPC, devices, the terminal, /proc's writable corners.

The test holds the table of routes (tests/test_hostile.py); a route added here is added
there too.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

import botlib

#: Names a secret of the referee might hide under.
SECRET_NAMES = ("STICHELN_ADMIN_TOKEN", "PGPASSWORD", "DATABASE_URL", "GRPC_")
#: The fixed port and abstract socket every instance listens on, to find the others.
MEET_PORT = 47_613
MEET_NAME = b"\0sticheln-hostile-meeting"
MEMORY = "sticheln-hostile-memory"
#: A System V IPC key every instance uses, to find the others' segment.
IPC_KEY = 0x571C4E1
#: x86-64 system call numbers (the bot runs on the referee's machine).
NR = {
    "add_key": 248,
    "keyctl": 250,
    "io_uring_setup": 425,
    "userfaultfd": 323,
    "perf_event_open": 298,
    "unshare": 272,
    "personality": 135,
    "shmget": 29,
    "inotify_init1": 294,
    "mincore": 27,
    "readahead": 187,
    "io_setup": 206,
    "io_destroy": 207,
    "io_getevents": 208,
    "io_submit": 209,
    "sysinfo": 99,
}
KEY_SPEC_USER_KEYRING = -4
KEYCTL_READ = 11
CLONE_NEWUSER = 0x10000000
ADDR_NO_RANDOMIZE = 0x0040000
TIOCSTI = 0x5412
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


def syscall(name: str, *args: object) -> tuple[int, int]:
    """Call system call ``name``: (result, errno)."""
    ctypes.set_errno(0)
    result = LIBC.syscall(ctypes.c_long(NR[name]), *args)
    return int(result), ctypes.get_errno()


def route(name: str, opened: bool, what: str) -> None:
    """Report one route."""
    print(f"ROUTE {name} {'OPEN' if opened else 'blocked'} {what[:300]!r}", flush=True)


def seen(text: str) -> None:
    """Put what was read into the log, for the test to search."""
    print(f"SEEN {text[:2000]!r}", flush=True)


def read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 16)
    except OSError:
        return None


def other_pids() -> list[int]:
    """Visible processes other than this one and the sandbox's init (pid 1)."""
    me = os.getpid()
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    return [p for p in pids if p not in (me, 1)]


def try_processes(token: str) -> None:
    pids = other_pids()
    route("list_other_pids", bool(pids), f"visible: {pids}")
    found = []
    for pid in [1, *pids, os.getppid()]:
        data = read(f"/proc/{pid}/environ")
        if data is None:
            continue
        seen(data.decode(errors="replace"))
        for item in data.split(b"\0"):
            key, _, value = item.decode(errors="replace").partition("=")
            if (key == "STICHELN_TOKEN" and value != token) or key.startswith(SECRET_NAMES):
                found.append(f"{pid}:{key}")
    route("other_environ", bool(found), f"found: {found}")
    found = []
    for pid in [1, *pids, os.getppid()]:
        data = read(f"/proc/{pid}/cmdline")
        if data is None:
            continue
        text = data.replace(b"\0", b" ").decode(errors="replace")
        seen(text)
        if "referee" in text.split("--", 1)[0] or any(n in text for n in SECRET_NAMES):
            found.append(f"{pid}:{text[:80]}")
    route("other_cmdline", bool(found), f"found: {found}")


def try_paths() -> None:
    targets = [p.partition("=") for p in os.environ.get("HOSTILE_PATHS", "").split(":") if p]
    for label, _, path in targets:
        got = None
        try:
            if os.path.isdir(path):
                got = "listed " + ",".join(sorted(os.listdir(path)))
            else:
                data = read(path)
                got = None if data is None else f"read {len(data)} bytes"
                if data is not None:
                    seen(data.decode(errors="replace"))
        except OSError as exc:
            got = None
            what = str(exc)
        else:
            what = got or "no access"
        route(f"path:{label}", got is not None, what)
    if os.environ.get("HOSTILE_NO_WRITE"):
        return
    wrote = []
    for folder in (os.getcwd(), *(path for _, _, path in targets)):
        try:
            with open(os.path.join(folder, "hostile-was-here"), "w") as f:
                f.write("x")
            wrote.append(folder)
        except OSError:
            pass
    route("write_outside_tmp", bool(wrote), f"wrote in: {wrote}")


def try_network() -> None:
    ports = [int(p) for p in os.environ.get("HOSTILE_PORTS", "").split(":") if p]
    reached = []
    for host, family in (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)):
        for port in ports:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                try:
                    s.connect((host, port))
                    reached.append(f"{host}:{port}")
                except OSError:
                    pass
    route("loopback_ports", bool(reached), f"reached: {reached}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        try:
            s.connect(("192.0.2.1", 80))  # TEST-NET-1: no answer is expected anywhere
            outside = True
        except OSError:
            outside = False
    route("outside_network", outside, "")


def _answer_with_my_id(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.sendall(botlib.PROCESS.encode())


def meet_others() -> None:
    """Listen where every instance listens (and keep listening), then look for an answer
    from another instance for a while: each answers with its process id."""
    addresses = ((socket.AF_INET, ("127.0.0.1", MEET_PORT)), (socket.AF_UNIX, MEET_NAME))
    taken = []
    for family, address in addresses:
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.bind(address)
            listener.listen(8)
        except OSError:
            listener.close()  # taken: another instance shares this network namespace
            taken.append(repr(address))
            continue
        threading.Thread(target=_answer_with_my_id, args=(listener,), daemon=True).start()
    met: set[str] = set()
    deadline = time.monotonic() + 2.0
    while not met and time.monotonic() < deadline:
        for family, address in addresses:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                try:
                    s.connect(address)
                    other = s.recv(64).decode()
                except OSError:
                    continue
                if other and other != botlib.PROCESS:
                    met.add(repr(address))
        time.sleep(0.1)
    route("other_bot", bool(met or taken), f"met: {sorted(met)}; taken: {taken}")


def try_memory() -> None:
    """Duplicate mode: look for what an earlier instance left, then leave something."""
    places = ["/tmp", os.environ.get("HOME", "/tmp"), os.getcwd(), "/dev/shm", "/var/tmp"]
    found = []
    for place in places:
        data = read(os.path.join(place, MEMORY))
        if data is not None and data.decode() != botlib.PROCESS:
            found.append(f"{place}: {data.decode()}")
    route("remember_between_instances", bool(found), f"found: {found}")
    if os.environ.get("HOSTILE_NO_WRITE"):
        return
    for place in places:
        with contextlib.suppress(OSError), open(os.path.join(place, MEMORY), "w") as f:
            f.write(botlib.PROCESS)


def try_environment() -> None:
    env = dict(os.environ)
    seen(repr(env))
    leaked = sorted(k for k in env if k.startswith(SECRET_NAMES))
    route("own_environment", bool(leaked), f"keys: {sorted(env)}")


def try_descriptors() -> None:
    """Any descriptor beyond stdio (nothing is open yet but what the bot was given): read
    what it holds (the referee's secret, a file the bot could not open itself)."""
    secret = os.environ.get("HOSTILE_SECRET", "").encode()
    found = []
    for fd in range(3, 1024):
        try:
            os.fstat(fd)
        except OSError:
            continue
        data = b""
        with contextlib.suppress(OSError):  # a pipe must not block the bot
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        with contextlib.suppress(OSError):
            data = os.pread(fd, 4096, 0)
        with contextlib.suppress(OSError):
            data = data or os.read(fd, 4096)
        seen(data.decode(errors="replace"))
        # Any descriptor beyond stdio is one too many (the secret says where it came from).
        found.append(f"{fd}: {'the secret ' if secret and secret in data else ''}{data[:40]!r}")
    route("inherited_descriptor", bool(found), f"found: {found}")


def try_keyring() -> None:
    """Store a key in the user keyring, and look for what other instances stored there
    (the kernel keeps it per uid, not per sandbox: a later deal's seat would read it)."""
    description = f"sticheln-hostile-{botlib.PROCESS}".encode()
    key, err = syscall(
        "add_key", b"user", description, b"my hand", ctypes.c_size_t(7), KEY_SPEC_USER_KEYRING
    )
    stored = key >= 0
    if stored and os.environ.get("HOSTILE_NO_WRITE"):
        syscall("keyctl", 3, key)  # KEYCTL_REVOKE: leave nothing in the host's keyring
    others = []
    proc_keys = read("/proc/keys") or b""
    for line in proc_keys.decode(errors="replace").splitlines():
        if "sticheln-hostile-" in line and botlib.PROCESS not in line:
            others.append(line[-60:])
    buffer = ctypes.create_string_buffer(4096)
    size, _ = syscall("keyctl", KEYCTL_READ, KEY_SPEC_USER_KEYRING, buffer, 4096)
    route(
        "keyring",
        stored or bool(others),
        f"add_key: {'stored' if stored else os.strerror(err)}; keyring bytes {size}; "
        f"others: {others}",
    )


def try_tracing() -> None:
    """Trace a process of its own uid (another seat would be one, if it could see it)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        LIBC.ptrace.restype = ctypes.c_long
        ctypes.set_errno(0)
        attached = LIBC.ptrace(ctypes.c_long(16), child.pid, None, None) == 0  # ATTACH
        why = os.strerror(ctypes.get_errno())
        if attached:
            LIBC.ptrace(ctypes.c_long(17), child.pid, None, None)  # DETACH
    finally:
        child.kill()
        child.wait()
    route("ptrace", attached, "attached" if attached else why)


def _fd_route(name: str, result: tuple[int, int]) -> None:
    fd, err = result
    if fd >= 0:
        os.close(fd)
    route(name, fd >= 0, "a descriptor" if fd >= 0 else os.strerror(err))


def try_kernel_interfaces() -> None:
    """Interfaces a bot has no need of, each a large piece of the kernel to attack."""
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    _fd_route("io_uring", syscall("io_uring_setup", 4, params))
    _fd_route("userfaultfd", syscall("userfaultfd", os.O_CLOEXEC | 1))  # UFFD_USER_MODE_ONLY
    attr = bytearray(128)  # struct perf_event_attr: a software clock, this process, user only
    attr[0:4] = (1).to_bytes(4, "little")  # PERF_TYPE_SOFTWARE
    attr[4:8] = (128).to_bytes(4, "little")  # size
    attr[40:48] = ((1 << 0) | (1 << 5) | (1 << 6)).to_bytes(8, "little")  # disabled, no kernel/hv
    buffer = ctypes.create_string_buffer(bytes(attr))
    _fd_route("perf_event", syscall("perf_event_open", buffer, 0, -1, -1, 0))
    result, err = syscall("unshare", CLONE_NEWUSER)
    route("new_namespace", result == 0, "a user namespace" if result == 0 else os.strerror(err))
    before, _ = syscall("personality", ctypes.c_ulong(0xFFFFFFFF))
    result, err = syscall("personality", ctypes.c_ulong(ADDR_NO_RANDOMIZE))
    changed = result >= 0
    if changed:
        syscall("personality", ctypes.c_ulong(before))
    route("personality", changed, "ASLR off" if changed else os.strerror(err))
    try:
        socket.socket(40, socket.SOCK_STREAM).close()  # AF_VSOCK: not confined by the netns
        route("vsock", True, "an AF_VSOCK socket")
    except OSError as exc:
        route("vsock", False, str(exc))


def try_uevents() -> None:
    """The kernel's device events (NETLINK_KOBJECT_UEVENT): sent to every network
    namespace of the host's user namespace, they tell what happens on the host."""
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15) as s:
            s.bind((0, 1))
        route("netlink_uevent", True, "subscribed to the host's device events")
    except OSError as exc:
        route("netlink_uevent", False, str(exc))


def try_shared_files() -> None:
    """A file every sandbox reads (this script; the interpreter's files) as a mailbox: a
    lock on it, a watch on it, or whether its pages are cached, seen from another bot."""
    fd = os.open(__file__, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            route("shared_file_lock", True, "flock on a shared file")
        except OSError as exc:
            # EWOULDBLOCK: another instance holds it, which is the message itself.
            route("shared_file_lock", exc.errno != errno.EPERM, str(exc))
        try:
            os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)
            route("page_cache", True, "RWF_NOWAIT read: the page was cached")
        except OSError as exc:
            route("page_cache", exc.errno == errno.EAGAIN, str(exc))
    finally:
        os.close(fd)
    _fd_route("watch_files", syscall("inotify_init1", os.O_CLOEXEC))


def _aio_nowait_read(fd: int) -> str:
    """A read of ``fd`` with RWF_NOWAIT inside an asynchronous-I/O request (the flag lies
    in memory, where no filter looks): its result says whether the page was cached."""
    context = ctypes.c_ulong(0)
    made, err = syscall("io_setup", 1, ctypes.byref(context))
    if made != 0:
        return f"blocked: io_setup {os.strerror(err)}"
    try:
        buffer = ctypes.create_string_buffer(4096)
        # struct iocb: data, key, rw_flags (RWF_NOWAIT), opcode (PREAD), priority, fd,
        # buffer, size, offset, reserved, flags, resfd.
        iocb = bytearray(64)
        iocb[12:16] = (8).to_bytes(4, "little")  # aio_rw_flags = RWF_NOWAIT
        iocb[20:24] = fd.to_bytes(4, "little")
        iocb[24:32] = ctypes.addressof(buffer).to_bytes(8, "little")
        iocb[32:40] = (4096).to_bytes(8, "little")
        request = ctypes.create_string_buffer(bytes(iocb), 64)
        pointer = ctypes.c_void_p(ctypes.addressof(request))
        sent, err = syscall("io_submit", context, 1, ctypes.byref(pointer))
        if sent != 1:
            return f"blocked: io_submit {os.strerror(err)}"
        event = ctypes.create_string_buffer(32)
        got, err = syscall("io_getevents", context, 1, 1, event, None)
        if got != 1:
            return f"blocked: io_getevents {os.strerror(err)}"
        result = int.from_bytes(event.raw[16:24], "little", signed=True)
        return f"OPEN: {'cached' if result >= 0 else 'not cached'} ({result})"
    finally:
        syscall("io_destroy", context)


def try_page_cache() -> None:
    """The host's page cache as a mailbox: a seat loads or drops a page of a file every
    sandbox reads (this script), a later one asks whether it is cached. Every way to ask
    or to move a page at will."""
    fd = os.open(__file__, os.O_RDONLY)
    try:
        said = _aio_nowait_read(fd)
        route("page_cache_aio", said.startswith("OPEN"), said)
        done, err = syscall("readahead", fd, 0, 4096)
        route("page_cache_readahead", done == 0, "loaded" if done == 0 else os.strerror(err))
        advised = []
        for name in ("POSIX_FADV_WILLNEED", "POSIX_FADV_DONTNEED"):
            with contextlib.suppress(OSError):
                os.posix_fadvise(fd, 0, 0, getattr(os, name))
                advised.append(name)
        route("page_cache_advice", bool(advised), f"advised: {advised}")
        LIBC.mmap.restype = ctypes.c_void_p
        LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
        LIBC.mmap.argtypes += [ctypes.c_int, ctypes.c_long]
        address = LIBC.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        vector = ctypes.create_string_buffer(1)
        done, err = syscall("mincore", ctypes.c_void_p(address), 4096, vector)
        route("page_cache_mincore", done == 0, "answered" if done == 0 else os.strerror(err))
    finally:
        os.close(fd)


#: Machine code run in a page below 4 GiB: socketcall(SYS_SOCKET, {AF_VSOCK, SOCK_STREAM,
#: 0}) through the i386 interface (push rbx; mov eax, 102; mov ebx, 1; mov ecx, ARGS;
#: int 0x80; pop rbx; ret), and getpid through the x32 one (mov eax, 0x40000000 + 39;
#: syscall; ret). The arguments lie at offset 64 of the page.
I386_SOCKETCALL = b"\x53\xb8\x66\x00\x00\x00\xbb\x01\x00\x00\x00\xb9{args}\xcd\x80\x5b\xc3"
X32_GETPID = b"\xb8\x27\x00\x00\x40\x0f\x05\xc3"


def _in_child(code: bytes) -> str:
    """Run ``code`` (returning an int) in a forked child: what it returned, or how the
    child ended."""
    LIBC.mmap.restype = ctypes.c_void_p
    LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    LIBC.mmap.argtypes += [ctypes.c_int, ctypes.c_long]
    # PROT_READ|WRITE|EXEC; MAP_PRIVATE|MAP_ANONYMOUS|MAP_32BIT: i386 pointers are 32 bits.
    page = LIBC.mmap(None, 4096, 7, 0x02 | 0x20 | 0x40, -1, 0)
    args = (page + 64).to_bytes(4, "little")
    ctypes.memmove(page, code.replace(b"{args}", args), len(code.replace(b"{args}", args)))
    ctypes.memmove(page + 64, b"".join(n.to_bytes(4, "little") for n in (40, 1, 0)), 12)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        result = ctypes.CFUNCTYPE(ctypes.c_int)(page)()
        os.write(writer, str(result).encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        said = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"ended by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"answered {said}"


def try_foreign_abi() -> None:
    """System calls through the 32-bit doors of an x86-64 kernel: ``int 0x80`` (i386),
    whose ``socketcall`` hides its arguments from a filter (an AF_VSOCK socket, past the
    network namespace), and x32 numbers. Answered at all, a door is open."""
    if os.uname().machine != "x86_64":
        return
    said = _in_child(I386_SOCKETCALL)
    route("i386_socketcall", said.startswith("answered"), said)
    said = _in_child(X32_GETPID)
    route("x32_call", said.startswith("answered"), said)


def _numbers(text: str) -> list[float]:
    found = []
    for word in text.replace("/", " ").split():
        with contextlib.suppress(ValueError):
            found.append(float(word))
    return found


def try_host_counters() -> None:
    """Counters of the whole host: a seat that holds many threads (or files, or memory)
    moves them, another seat reads them, bit by bit (about 29 bit/s through the thread
    count). Open when one answers with the host's activity rather than fixed values."""
    info = ctypes.create_string_buffer(128)  # struct sysinfo
    done, err = syscall("sysinfo", info)
    procs = int.from_bytes(info.raw[80:82], "little")
    route("sysinfo", done == 0, f"procs {procs}" if done == 0 else os.strerror(err))
    own = 0
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        with contextlib.suppress(OSError):  # unconfined, a host process may end meanwhile
            own += len(os.listdir(f"/proc/{pid}/task"))
    leaks = []
    text = (read("/proc/loadavg") or b"").decode()
    if text and (any(_numbers(text)[:3]) or _numbers(text)[4] > own):
        leaks.append(f"loadavg {text.strip()}")
    for line in (read("/proc/stat") or b"").decode().splitlines():
        if line.split()[0] in ("ctxt", "processes") and _numbers(line)[0] > 0:
            leaks.append(f"stat {line}")
    memory = {
        line.split(":")[0]: line.split()[1]
        for line in (read("/proc/meminfo") or b"").decode().splitlines()
        if ":" in line
    }
    if memory and memory.get("MemFree") != memory.get("MemTotal"):
        leaks.append(f"meminfo MemFree {memory.get('MemFree')} of {memory.get('MemTotal')}")
    uptime = _numbers((read("/proc/uptime") or b"").decode())
    if uptime[1:] and uptime[1] > 0:
        leaks.append(f"uptime idle {uptime[1]}")
    for name in ("vmstat", "pressure/cpu", "sys/fs/file-nr", "sys/fs/dentry-state",
                 "sys/kernel/pty/nr", "interrupts", "schedstat", "diskstats"):  # fmt: skip
        if any(_numbers((read(f"/proc/{name}") or b"").decode())):
            leaks.append(name)
    route("host_counters", bool(leaks), f"host counters: {leaks}")


def try_signals() -> None:
    """Signal 0 to every process it may signal (kill -1): any other bot, the referee..."""
    try:
        os.kill(-1, 0)
        route("signal_others", True, "kill(-1, 0) reached a process")
    except OSError as exc:
        route("signal_others", False, str(exc))


def try_ipc() -> None:
    """A System V shared memory segment under a key every instance uses: one already there
    was made by another instance."""
    if os.environ.get("HOSTILE_NO_WRITE"):  # look only: a segment would outlive the bot
        shmid, err = syscall("shmget", IPC_KEY, 4096, 0)
        route("sysv_ipc", shmid >= 0, "another's segment" if shmid >= 0 else os.strerror(err))
        return
    shmid, err = syscall("shmget", IPC_KEY, 4096, 0o1666 | 0o2000)  # IPC_CREAT | IPC_EXCL
    if shmid >= 0 or err != errno.EEXIST:
        route("sysv_ipc", False, "made ours" if shmid >= 0 else os.strerror(err))
        return
    route("sysv_ipc", True, "another instance's segment exists")


def try_devices_and_proc() -> None:
    opened = []
    for path in ("/dev/kvm", "/dev/kmsg", "/dev/mem", "/dev/vhost-net", "/dev/net/tun",
                 "/dev/fuse", "/dev/loop-control", "/dev/vsock", "/dev/console"):  # fmt: skip
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDWR))
            opened.append(path)
    route("devices", bool(opened), f"opened: {opened}")
    written = []
    for path in ("/proc/sys/kernel/hostname", "/proc/sysrq-trigger", "/proc/sys/vm/drop_caches"):
        if os.environ.get("HOSTILE_NO_WRITE"):
            break  # unconfined, the bot is the referee's user: do not even open these
        with contextlib.suppress(OSError), open(path, "w"):
            written.append(path)  # opened for writing is enough: nothing is written
    route("write_proc", bool(written), f"opened for writing: {written}")
    injected = False
    with contextlib.suppress(OSError):
        fd = os.open("/dev/tty", os.O_RDWR)
        try:
            fcntl.ioctl(fd, TIOCSTI, b"x")
            injected = True
        finally:
            os.close(fd)
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            fcntl.ioctl(fd, TIOCSTI, b"x")
            injected = True
    route("terminal_injection", injected, "")
    status = (read("/proc/self/status") or b"").decode()
    free = "NoNewPrivs:\t1" not in status
    route(
        "setuid_gain", free, "no_new_privs is off: a setuid program raises rights" if free else ""
    )


def try_own_folder_links() -> None:
    """Links the bot's author put in its folder, to host files (its folder is bound in the
    sandbox; a link in it is followed there, not on the host)."""
    got = []
    for name in sorted(os.listdir(".")):
        if not (name.startswith("link-") and os.path.islink(name)):
            continue
        try:
            if os.path.isdir(name):
                got.append(f"{name}: listed {sorted(os.listdir(name))}")
            elif (data := read(name)) is not None:
                seen(data.decode(errors="replace"))
                got.append(f"{name}: read {len(data)} bytes")
        except OSError:
            pass
    route("folder_links", bool(got), f"through: {got}")


#: A control group's files that would raise the bot's bounds or move it out of its group.
CGROUP_FILES = ("cgroup.procs", "tasks", "pids.max", "memory.max", "memory.limit_in_bytes",
                "cpu.max", "cpu.shares")  # fmt: skip


def try_socket_folder() -> None:
    """The folder of its referee socket and the rest of /run: another bot's socket there
    (to dial with a token of its own), the host's services' sockets, or room to leave
    a socket for another bot to find."""
    found = []
    for folder in ("/run", "/run/sticheln", "/var/run"):
        with contextlib.suppress(OSError):
            found += [f"{folder}/{n}" for n in os.listdir(folder)]
    own = {"/run/sticheln", "/run/sticheln/referee.sock"}
    others = [path for path in found if path not in own]
    if not os.environ.get("HOSTILE_NO_WRITE"):
        with contextlib.suppress(OSError):
            os.mkdir("/run/sticheln/hostile")
            others.append("made /run/sticheln/hostile")
    route("socket_folder", bool(others), f"found: {others[:12]}")


#: Entries of the sandbox's own /etc/passwd, /etc/group and /etc/hosts (the first field;
#: ``bot`` is its own user and group).
OWN_ACCOUNTS = {"root", "nobody", "nogroup", "bot", "127.0.0.1", "::1", "127.0.1.1"}


def try_host_accounts() -> None:
    """The host's users, groups and host names (/etc/passwd, /etc/group, /etc/hosts):
    who works on the machine, the names and addresses of the organiser's network."""
    found = []
    for path, sep in (("/etc/passwd", ":"), ("/etc/group", ":"), ("/etc/hosts", None)):
        for line in (read(path) or b"").decode(errors="replace").splitlines():
            first = line.split("#", 1)[0].split(sep)[0].strip()
            if first and first not in OWN_ACCOUNTS:
                found.append(f"{path}: {first}")
    route("host_accounts", bool(found), f"found: {found[:12]}")


def try_cgroup() -> None:
    """The bot's control group: its files (raise its own pids.max or memory.max, move
    out of its group into a parent's) and where it sits in the host's tree."""
    found = []
    for line in (read("/proc/self/cgroup") or b"").decode(errors="replace").splitlines():
        path = line.split(":", 2)[-1]
        if path not in ("/", ""):
            found.append(f"host group {path}")
    for root, _, files in os.walk("/sys/fs/cgroup"):
        for name in set(files) & set(CGROUP_FILES):
            if os.access(os.path.join(root, name), os.W_OK):
                found.append(f"writable {os.path.join(root, name)}")
        if len(found) > 20:
            break
    route("cgroup_files", bool(found), f"found: {found[:10]}")


def try_shared_memory_folders() -> None:
    """/dev/shm and /dev/mqueue: a writable place besides /tmp (unbounded by its size, or
    shared with other sandboxes)."""
    opened = []
    for folder in ("/dev/shm", "/dev/mqueue"):
        if os.environ.get("HOSTILE_NO_WRITE"):
            if os.path.isdir(folder) and os.access(folder, os.W_OK):
                opened.append(folder)
            continue
        path = os.path.join(folder, f"hostile-{botlib.PROCESS}")
        try:
            with open(path, "w") as f:
                f.write("x")
            os.unlink(path)
            opened.append(folder)
        except OSError:
            pass
    route("dev_shm", bool(opened), f"wrote in: {opened}")


def try_fill_tmp() -> None:
    """Write /tmp full: it must end at its declared size (memory the bot is charged for),
    not take the host's disk or memory."""
    if os.environ.get("HOSTILE_NO_WRITE"):
        return
    bound = int(os.environ.get("HOSTILE_TMP_MB", "64")) << 20
    path = "/tmp/hostile-fill"
    written = 0
    chunk = b"\0" * (1 << 20)
    try:
        with open(path, "wb") as f:
            while written <= bound + (8 << 20):
                f.write(chunk)
                f.flush()
                written += len(chunk)
    except OSError as exc:
        why = exc.strerror or str(exc)
    else:
        why = "no end"
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    route("fill_tmp", written > bound, f"wrote {written >> 20} MiB ({why})")


def try_limits() -> None:
    """Leave a core dump (to the host's core handler) and raise its scheduling priority
    over the other seats (nice below 0, a real-time class): the hard limits say."""
    core = resource.getrlimit(resource.RLIMIT_CORE)
    route("core_dump", core[1] != 0, f"RLIMIT_CORE {core}")
    raised = []
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -1)
        raised.append("nice -1")
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:
        pass
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        raised.append("SCHED_FIFO")
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except OSError:
        pass
    limits = [resource.getrlimit(r) for r in (resource.RLIMIT_NICE, resource.RLIMIT_RTPRIO)]
    route("raise_priority", bool(raised), f"raised: {raised}; RLIMIT_NICE, RTPRIO {limits}")


def try_host_disk() -> None:
    """The host's file system under a bound path: its free blocks, which the referee's
    writes move (another seat's output, its log on the host's disk), through ``statfs``."""
    try:
        figures = os.statvfs("/usr")
        route("statfs_host", figures.f_bfree > 0, f"free blocks {figures.f_bfree}")
    except OSError as exc:
        route("statfs_host", False, str(exc))


def try_access_time() -> None:
    """A file's access time as a mark another seat sees: reading its own script (the
    interpreter has) updates it where the mount lets it (relatime: once after a change).
    Tried only on a fresh copy (``HOSTILE_FRESH_COPY``), which no one but the sandboxes
    has read since it was written."""
    if not os.environ.get("HOSTILE_FRESH_COPY"):
        return
    info = os.stat(__file__)
    marked = info.st_atime_ns > info.st_mtime_ns
    route("access_time", marked, f"atime {info.st_atime_ns}, mtime {info.st_mtime_ns}")


def try_message_queue() -> None:
    """A POSIX message queue under a name every instance uses: one already there was made
    by another instance (the IPC namespace says whether they share them)."""
    try:
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
    except OSError as exc:
        route("posix_mqueue", False, str(exc))
        return
    name = b"/sticheln-hostile"
    ctypes.set_errno(0)
    if os.environ.get("HOSTILE_NO_WRITE"):
        fd = rt.mq_open(name, os.O_RDONLY)
        route(
            "posix_mqueue",
            fd >= 0,
            "another's queue" if fd >= 0 else os.strerror(ctypes.get_errno()),
        )
        return
    fd = rt.mq_open(name, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o666, None)
    err = ctypes.get_errno()
    route(
        "posix_mqueue", fd < 0 and err == errno.EEXIST, "made ours" if fd >= 0 else os.strerror(err)
    )


#: Pages apart (past read-ahead and fault-around) when timing a shared file's pages.
STRIDE = 32 * 4096


def try_page_cache_timing() -> None:
    """Whether a page of a file every sandbox reads is in the host's page cache, by the
    time a read of it takes (no call to refuse: a read is a read): a large shared file's
    pages read once each, 32 pages apart. Open when they fall into two kinds, fast
    (cached: another process read it) and slow (read from the disk)."""
    found = []
    for folder in ("/usr/lib/jvm", "/usr/lib/x86_64-linux-gnu", "/usr/share", "/usr/lib"):
        with contextlib.suppress(OSError):
            for root, _, files in os.walk(folder):
                for name in files:
                    path = os.path.join(root, name)
                    with contextlib.suppress(OSError):
                        if os.path.isfile(path) and os.path.getsize(path) > 256 * STRIDE:
                            found.append(path)
                if len(found) >= 4:
                    break
        if len(found) >= 4:
            break
    times = []
    for path in found[:4]:
        fd = os.open(path, os.O_RDONLY)
        try:
            for k in range(64):
                t = time.perf_counter()
                os.pread(fd, 1, k * STRIDE)
                times.append(time.perf_counter() - t)
        finally:
            os.close(fd)
    times.sort()
    two = bool(times) and times[-1] > 20 * times[0] and times[-1] > 50e-6
    route(
        "page_cache_timing",
        two,
        f"{len(times)} pages: fastest {times[0] * 1e6:.0f} us, slowest {times[-1] * 1e6:.0f} us"
        if times
        else "no large shared file",
    )


def main() -> None:
    token = os.environ.get("STICHELN_TOKEN", "")
    print(f"ENV {sorted(os.environ)}", flush=True)
    status = (read("/proc/self/status") or b"").decode()
    print("UID", next((x.split()[1] for x in status.splitlines() if x.startswith("Uid:")), "?"))
    for attempt in (try_descriptors, try_environment, lambda: try_processes(token), try_paths):
        attempt()
    # Before any thread starts (unshare(CLONE_NEWUSER) refuses a threaded process).
    for attempt in (try_keyring, try_tracing, try_kernel_interfaces, try_shared_files, try_uevents):
        attempt()
    try_page_cache()
    try_foreign_abi()
    try_host_counters()
    try_network()
    meet_others()
    try_memory()
    for attempt in (try_signals, try_ipc):
        attempt()
    try_devices_and_proc()
    for attempt in (try_own_folder_links, try_host_accounts, try_cgroup, try_socket_folder):
        attempt()
    for attempt in (try_shared_memory_folders, try_limits):
        attempt()
    for attempt in (try_host_disk, try_access_time, try_message_queue):
        attempt()
    try_page_cache_timing()
    try_fill_tmp()
    print("ROUTES DONE", flush=True)
    botlib.run(name="hostile")


if __name__ == "__main__":
    sys.exit(main())
