"""The system-call filter of sandboxed bots: the list as data, and the compiled filter in
real processes under bubblewrap (keyrings refused, a call through the i386 or x32 ABI
ending the process, ordinary runtimes such as the JVM starting unchanged)."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from referee.jail import seccomp
from referee.jail.sandbox import Sandbox, bwrap_descriptors
from referee.jail.seccomp import PROFILE, ArgRule, SyscallProfile, compile_profile

pytestmark = pytest.mark.timeout(120)

#: What a hostile bot would use (issue routes and Docker's own refusals): never allowed.
MUST_REFUSE = {
    "add_key", "keyctl", "request_key", "ptrace", "process_vm_readv", "process_vm_writev",
    "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "mount",
    "umount2", "pivot_root", "unshare", "setns", "open_by_handle_at", "name_to_handle_at",
    "init_module", "finit_module", "delete_module", "iopl", "ioperm", "swapon", "swapoff",
    "reboot", "acct", "quotactl", "lookup_dcookie", "clock_settime", "settimeofday",
    "adjtimex", "fanotify_init", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "clone3", "pidfd_getfd", "kcmp", "socketcall", "fsopen", "move_mount", "open_tree",
    # messages between sandboxes through a file both read
    "flock", "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_mark", "cachestat",
    # the host's page cache, asked or moved at will (a mailbox between seatings)
    "mincore", "readahead", "io_setup", "io_submit", "io_getevents", "io_pgetevents",
    "io_cancel", "io_destroy",
    # the host's counters (threads, load, free memory, free disk blocks): the same mailbox
    "sysinfo", "statfs", "fstatfs",
}  # fmt: skip


def test_the_profile_refuses_every_call_a_hostile_bot_would_use() -> None:
    allowed = set(PROFILE.allowed) | {rule.call for rule in PROFILE.allowed_when}
    refused = set(PROFILE.denied) | {name for name, _ in PROFILE.errnos}
    assert refused >= MUST_REFUSE, MUST_REFUSE - refused
    assert not allowed & refused
    assert PROFILE.default_errno == errno.EPERM, "refused, not killed: runtimes carry on"
    assert dict(PROFILE.errnos)["clone3"] == errno.ENOSYS, "clone3 callers fall back to clone"
    # As a kernel without AIO answers: callers fall back to threads.
    aio = {"io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_cancel", "io_destroy"}
    # So does statfs, as a system without it would: no runtime asks it unbidden.
    errnos = {"clone3": errno.ENOSYS} | dict.fromkeys(aio, errno.ENOSYS)
    errnos |= dict.fromkeys(("statfs", "fstatfs"), errno.ENOSYS)
    assert dict(PROFILE.errnos) == errnos


def test_only_harmless_arguments_pass_the_conditional_calls() -> None:
    rules = {rule.call: rule for rule in PROFILE.allowed_when}
    assert set(rules) == {
        *("clone", "socket", "personality", "fcntl", "fcntl64", "preadv2", "fadvise64"),
        "madvise",
    }
    # clone without any namespace flag (CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET).
    assert rules["clone"].mask == 0x7E020000 and rules["clone"].values == ()
    assert set(rules["socket"].values) == {1, 2, 10, 16}, "unix, inet, inet6, netlink"
    assert 40 not in rules["socket"].values, "AF_VSOCK leads past the network namespace"
    assert rules["socket"].only == ((16, 2, 0),), "netlink: NETLINK_ROUTE only (no uevents)"
    assert 0x0040000 not in rules["personality"].values, "ADDR_NO_RANDOMIZE"
    locks = {5, 6, 7, 12, 13, 14, 36, 37, 38}  # [GS]ETLK[W], their 64-bit and OFD forms
    leases_and_notify = {1024, 1025, 1026}
    for name in ("fcntl", "fcntl64"):
        assert rules[name].index == 1 and {1, 2, 3, 4, 1030} <= set(rules[name].values)
        assert not (locks | leases_and_notify) & set(rules[name].values)
    assert rules["preadv2"].values == (0,), "no RWF_NOWAIT page-cache probe"
    # NORMAL, RANDOM, SEQUENTIAL, NOREUSE: not WILLNEED (3), DONTNEED (4), pages moved at will.
    assert rules["fadvise64"].index == 3 and rules["fadvise64"].values == (0, 1, 2, 5)
    # Every advice a runtime gives its memory; not COLD (20) or PAGEOUT (21), which push a
    # shared file's pages out of the host's page cache.
    assert rules["madvise"].index == 2
    assert {0, 4, 8, 14, 15, 22} <= set(rules["madvise"].values)
    assert not {20, 21} & set(rules["madvise"].values)


def test_every_named_call_is_known_to_libseccomp() -> None:
    """A refused name libseccomp did not know would be refused only by the default; an
    allowed one would be silently left out."""
    import pyseccomp as sc

    names = [*PROFILE.denied, *(name for name, _ in PROFILE.errnos)]
    names += [rule.call for rule in PROFILE.allowed_when]
    unknown = [n for n in names if sc.resolve_syscall(sc.Arch.NATIVE, n) == -1]
    assert not unknown, unknown


def test_a_call_both_allowed_and_refused_is_an_error() -> None:
    bad = SyscallProfile(allowed=("read", "keyctl"), allowed_when=(), denied=("keyctl",))
    with pytest.raises(ValueError, match="keyctl"):
        compile_profile(bad)
    bad = SyscallProfile(
        allowed=("read",), allowed_when=(ArgRule("socket", 0, (1,)),), denied=("socket",)
    )
    with pytest.raises(ValueError, match="socket"):
        compile_profile(bad)


def test_the_filter_is_compiled_once_per_process() -> None:
    code = seccomp.program()
    assert code is seccomp.program()
    assert len(code) % 8 == 0 and len(code) > 8 * 100, "a BPF program of 8-byte instructions"


# -- in a real sandbox --------------------------------------------------------------------

#: Run in the sandbox: each probe's (result, errno), as JSON on stdout.
PROBE = textwrap.dedent(
    """
    import ctypes, json, os, socket, subprocess, threading
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def call(nr, *args):
        ctypes.set_errno(0)
        return [libc.syscall(ctypes.c_long(nr), *args), ctypes.get_errno()]

    def keys():
        try:
            with open("/proc/keys") as f:
                return f.read()
        except OSError as exc:
            return exc.errno

    seen = {
        "keyctl": call(250, 0, -4, 0),
        "add_key": call(248, b"user", b"k", b"v", ctypes.c_size_t(1), -4),
        "ptrace": call(101, 16, os.getppid(), 0, 0),
        "unshare": call(272, 0x10000000),
        "clone3": call(435, 0, 0),
        "io_uring_setup": call(425, 4, ctypes.create_string_buffer(120)),
        "getpid": call(39),
        "revoke": None,
        "pid": os.getpid(),
        "keys": keys(),
    }
    if seen["add_key"][0] >= 0:  # unfiltered: leave nothing in the uid's keyring
        seen["revoke"] = call(250, 3, seen["add_key"][0])
    import fcntl
    shared = os.open("/usr/bin/env", os.O_RDONLY)  # a file every sandbox reads
    for name, action in (
        ("flock", lambda: fcntl.flock(shared, fcntl.LOCK_EX | fcntl.LOCK_NB)),
        ("fcntl_lock", lambda: fcntl.lockf(shared, fcntl.LOCK_SH | fcntl.LOCK_NB)),
        ("fcntl_getfl", lambda: fcntl.fcntl(shared, fcntl.F_GETFL)),
        ("preadv2_nowait", lambda: os.preadv(shared, [bytearray(16)], 0, os.RWF_NOWAIT)),
        ("preadv2", lambda: os.preadv(shared, [bytearray(16)], 0)),
        ("fadvise_sequential", lambda: os.posix_fadvise(shared, 0, 0, os.POSIX_FADV_SEQUENTIAL)),
        ("fadvise_dontneed", lambda: os.posix_fadvise(shared, 0, 0, os.POSIX_FADV_DONTNEED)),
        ("fadvise_willneed", lambda: os.posix_fadvise(shared, 0, 0, os.POSIX_FADV_WILLNEED)),
    ):
        try:
            action()
            seen[name] = 0
        except OSError as exc:
            seen[name] = exc.errno
    seen["inotify"] = call(294, 0)  # inotify_init1
    seen["io_setup"] = call(206, 1, ctypes.byref(ctypes.c_ulong(0)))
    seen["readahead"] = call(187, shared, 0, 4096)
    seen["mincore"] = call(27, 0, 4096, ctypes.create_string_buffer(1))
    libc.mmap.restype = ctypes.c_void_p
    page = ctypes.c_void_p(libc.mmap(None, 4096, 1, 1, shared, 0))  # PROT_READ, MAP_SHARED
    seen["madvise_pageout"] = call(28, page, 4096, 21)  # MADV_PAGEOUT
    seen["madvise_cold"] = call(28, page, 4096, 20)  # MADV_COLD
    seen["madvise_dontneed"] = call(28, page, 4096, 4)  # MADV_DONTNEED: own mapping only
    done = []
    thread = threading.Thread(target=lambda: done.append(1))
    thread.start()
    thread.join()
    seen["thread"] = done == [1]
    seen["subprocess"] = subprocess.run(["/bin/echo", "hi"], capture_output=True).stdout.decode()
    with socket.socket(socket.AF_UNIX) as s:
        seen["unix_socket"] = True
    try:
        socket.socket(40, socket.SOCK_STREAM)
        seen["vsock"] = "made"
    except OSError as exc:
        seen["vsock"] = exc.errno
    print(json.dumps(seen))
    """
)


@pytest.fixture
def world() -> Iterator[Path]:
    """A folder a bot's uid may read (as root, bots run as uids of their own)."""
    path = Path(tempfile.mkdtemp(prefix="sticheln-seccomp-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _in_sandbox(
    folder: Path, command: Sequence[str], read: Sequence[Path] = (), sandbox: Sandbox | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` confined exactly as a started bot is (policy, filter, uid)."""
    sandbox = sandbox or Sandbox()
    user = sandbox.lease_user()
    try:
        policy = sandbox.policy(folder, read, None, user.ids if user else None)
        with bwrap_descriptors(policy, command) as (argv, fds):
            return subprocess.run(
                argv,
                cwd=folder,
                pass_fds=fds,
                capture_output=True,
                text=True,
                timeout=90,
                stdin=subprocess.DEVNULL,
                check=False,
            )
    finally:
        if user is not None:
            user.release()


def test_in_the_sandbox_keyrings_and_tracing_are_refused_on_every_abi(world: Path) -> None:
    (world / "probe.py").write_text(PROBE)
    done = _in_sandbox(world, [sys.executable, "probe.py"])
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    eperm = [-1, errno.EPERM]
    for name in ("keyctl", "add_key", "ptrace", "unshare", "io_uring_setup"):
        assert seen[name] == eperm, (name, seen[name])
    assert seen["clone3"] == [-1, errno.ENOSYS]
    assert seen["getpid"] == [seen["pid"], 0]
    assert seen["keys"] == errno.EACCES, "the machine's key list is masked"
    assert seen["thread"] and seen["subprocess"] == "hi\n" and seen["unix_socket"]
    assert seen["vsock"] == errno.EPERM
    # No message through a file two sandboxes share: no lock, no watch, no cache probe.
    for name in ("flock", "fcntl_lock", "preadv2_nowait"):
        assert seen[name] == errno.EPERM, (name, seen[name])
    assert seen["inotify"] == eperm
    assert seen["fcntl_getfl"] == 0 and seen["preadv2"] == 0
    # Nor through the page cache: no asynchronous I/O (ENOSYS, as a kernel without it), no
    # page loaded, dropped or asked about at will; advice on its own reads still passes.
    assert seen["io_setup"] == [-1, errno.ENOSYS]
    assert seen["readahead"] == eperm and seen["mincore"] == eperm
    assert seen["fadvise_dontneed"] == errno.EPERM and seen["fadvise_willneed"] == errno.EPERM
    assert seen["fadvise_sequential"] == 0
    assert seen["madvise_pageout"] == eperm and seen["madvise_cold"] == eperm
    assert seen["madvise_dontneed"] == [0, 0]


def test_without_the_filter_the_same_probe_reaches_the_kernel(world: Path) -> None:
    """The control: the refusals above are the filter's."""
    (world / "probe.py").write_text(PROBE)
    done = _in_sandbox(world, [sys.executable, "probe.py"], sandbox=Sandbox(filter_syscalls=False))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["add_key"][0] >= 0, "a key stored in the uid's keyring"
    assert seen["clone3"] != [-1, errno.ENOSYS]
    assert seen["flock"] == 0 and seen["fcntl_lock"] == 0 and seen["inotify"][0] >= 0
    assert seen["io_setup"] == [0, 0] and seen["readahead"] == [0, 0]
    assert seen["fadvise_dontneed"] == 0 and seen["mincore"][1] != errno.EPERM
    assert seen["madvise_pageout"] == [0, 0] and seen["madvise_cold"] == [0, 0]


#: A 64-bit program that enters the kernel through its 32-bit doors: ``int 0x80`` (the i386
#: ABI: ``socketcall(SYS_SOCKET, {AF_VSOCK, SOCK_STREAM, 0})``, whose arguments lie in
#: memory where no filter looks) or an x32 number (``getpid`` with bit 0x40000000).
FOREIGN_ABI = textwrap.dedent(
    r"""
    #include <stdio.h>
    #include <string.h>

    static unsigned int args[3] = {40, 1, 0};  /* static, non-PIE: below 4 GiB */

    int main(int argc, char **argv) {
        long ret;
        printf("started\n");
        fflush(stdout);
        if (argc > 1 && strcmp(argv[1], "x32") == 0) {
            __asm__ volatile("syscall" : "=a"(ret) : "a"(0x40000000L | 39) : "rcx", "r11", "memory");
            printf("x32 getpid answered %ld\n", ret);
        } else {
            __asm__ volatile("push %%rbx\n\tmov %2, %%ebx\n\tint $0x80\n\tpop %%rbx"
                             : "=a"(ret) : "a"(102L), "r"(1), "c"(args) : "memory");
            printf("i386 socketcall answered %ld\n", ret);
        }
        return 0;
    }
    """
)


@pytest.mark.skipif(
    shutil.which("gcc") is None or os.uname().machine != "x86_64",
    reason="compiles an x86-64 program with gcc",
)
def test_a_call_through_the_i386_or_x32_door_ends_the_process(world: Path) -> None:
    """Bots are 64-bit programs: the filter covers the native ABI alone, and a process
    that enters the kernel by ``int 0x80`` or an x32 number ends with SIGSYS (under the
    i386 ABI's ``socketcall`` it had got an AF_VSOCK socket native ``socket`` refuses)."""
    (world / "abi.c").write_text(FOREIGN_ABI)
    subprocess.run(
        ["gcc", "-O1", "-static", "-no-pie", "-o", str(world / "abi"), str(world / "abi.c")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    (world / "abi").chmod(0o755)
    for door in ("i386", "x32"):
        done = _in_sandbox(world, ["./abi", door])
        # bubblewrap exits with 128 + the signal that ended the bot
        assert done.returncode == 128 + signal.SIGSYS, (door, done.returncode, done.stdout)
        assert done.stdout == "started\n", done.stdout
        # The control: without the filter the same call is answered, the process lives on.
        free = _in_sandbox(world, ["./abi", door], sandbox=Sandbox(filter_syscalls=False))
        assert free.returncode == 0 and "answered" in free.stdout, (door, free)
    # Started as a bot, it gets a fault that says why.
    (world / "abi.toml").write_text('name = "abi"\ncommand = ["./abi", "i386"]\n')
    checked = subprocess.run(
        [sys.executable, "-m", "referee.cli", "check-bot", "--bot", str(world / "abi.toml")],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert checked.returncode != 0
    assert "bot 'abi' did not start: it was killed by SIGSYS (a system call through an " in (
        checked.stderr
    )
    assert "no int 0x80 (i386) or x32 calls" in checked.stderr


JAVA = textwrap.dedent(
    """
    import java.nio.file.*;
    import java.util.concurrent.*;

    public class Probe {
        public static void main(String[] args) throws Exception {
            ExecutorService pool = Executors.newFixedThreadPool(8);
            Future<Long>[] parts = new Future[8];
            for (int i = 0; i < 8; i++) {
                final int n = i;
                parts[i] = pool.submit(() -> { long s = 0; for (int k = 0; k < 1000000; k++) s += k ^ n; return s; });
            }
            long sum = 0;
            for (Future<Long> f : parts) sum += f.get();
            pool.shutdown();
            Path file = Files.createTempFile("probe", ".txt");
            Files.writeString(file, "written " + sum);
            System.out.println(Files.readString(file));
            System.out.println("processors " + Runtime.getRuntime().availableProcessors());
            System.out.println("jvm ok");
        }
    }
    """
)


@pytest.mark.skipif(shutil.which("java") is None, reason="no JVM installed")
def test_the_jvm_starts_and_runs_a_program_under_the_filter(world: Path) -> None:
    """A JVM start is the heaviest of the runtimes' (threads, memory maps, signals, its own
    compiler for a single-file program): it must run under the filter unchanged."""
    java = Path(shutil.which("java") or "java").resolve()
    (world / "Probe.java").write_text(JAVA)
    # The JDK's configuration lives in /etc (a bot file would declare it under [sandbox] read).
    etc = [p for p in Path("/etc").glob("java-*") if p.is_dir()]
    version = _in_sandbox(world, [str(java), "-version"], read=etc)
    assert version.returncode == 0, version.stderr
    assert "version" in version.stderr
    done = _in_sandbox(world, [str(java), "-Xshare:auto", "Probe.java"], read=etc)
    assert done.returncode == 0, done.stderr
    assert "written " in done.stdout and "jvm ok" in done.stdout
    assert f"processors {os.cpu_count()}" in done.stdout


GO = textwrap.dedent(
    """
    package main

    import (
        "fmt"
        "os"
        "os/exec"
        "runtime"
        "sync"
        "time"
    )

    func main() {
        var wg sync.WaitGroup
        sums := make([]int, 8)
        for i := 0; i < 8; i++ {
            wg.Add(1)
            go func(n int) {
                defer wg.Done()
                for k := 0; k < 2000000; k++ {
                    sums[n] += k ^ n
                }
            }(i)
        }
        wg.Wait()
        kept := make([][]byte, 0)
        for i := 0; i < 32; i++ {
            kept = append(kept, make([]byte, 1<<20))
        }
        runtime.GC()
        f, err := os.CreateTemp("", "probe")
        if err != nil {
            panic(err)
        }
        f.WriteString("written")
        f.Close()
        out, err := exec.Command("/bin/echo", "child").Output()
        if err != nil {
            panic(err)
        }
        time.Sleep(10 * time.Millisecond)
        fmt.Printf("cpus %d kept %d %s", runtime.NumCPU(), len(kept), out)
        fmt.Println("go ok")
    }
    """
)


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain installed")
def test_a_go_program_runs_under_the_filter(world: Path, tmp_path: Path) -> None:
    """Go's runtime makes its own system calls (no C library): threads, its collector,
    timers, a child process; it counts the CPUs with sched_getaffinity."""
    (world / "main.go").write_text(GO.replace("    ", "\t"))
    (world / "go.mod").write_text("module probe\n\ngo 1.19\n")
    built = subprocess.run(
        ["go", "build", "-o", str(world / "probe"), "."],
        cwd=world,
        env={
            **os.environ,
            "CGO_ENABLED": "0",
            "GOCACHE": str(tmp_path / "cache"),
            "HOME": str(tmp_path),
            "GOFLAGS": "-mod=mod",
            "GOPROXY": "off",
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (world / "probe").chmod(0o755)
    done = _in_sandbox(world, ["./probe"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"cpus {os.cpu_count()} kept 32 child\ngo ok\n"


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/python3").exists(),
    reason="plays a referee of another user (needs root to become one, and a system Python)",
)
def test_a_non_root_referees_bots_are_filtered_in_their_user_namespace(world: Path) -> None:
    """Run by any other user, bubblewrap makes a user namespace and the bot keeps that
    user's uid: the filter is what keeps it from the key facility that uid shares."""
    (world / "probe.py").write_text(PROBE)
    sandbox = Sandbox()
    user = sandbox.lease_user()
    assert user is not None
    try:
        as_root = sandbox.policy(world, (), None, user.ids)
    finally:
        user.release()
    # The policy of a referee running as nobody: no uid to drop to, a user namespace.
    policy = dataclasses.replace(as_root, read_only=(world,), run_as=None, user_namespace=True)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    # A key the referee's user holds outside the sandbox (its bots share that uid).
    description = f"sticheln-test-{os.urandom(4).hex()}"
    key = _as(nobody, f"print(call(248, b'user', b'{description}', b'x', 1, -4))")
    assert description in _as(nobody, "print(open('/proc/keys').read())")
    try:
        with bwrap_descriptors(policy, ["/usr/bin/python3", "probe.py"]) as (argv, fds):
            done = subprocess.run(
                [*nobody, *argv],
                pass_fds=fds,
                capture_output=True,
                text=True,
                timeout=90,
                check=False,
            )
    finally:
        _as(nobody, f"print(call(250, 3, {int(key)}))")  # KEYCTL_REVOKE
    assert done.returncode == 0, done.stderr
    assert description not in done.stdout
    seen = json.loads(done.stdout)
    for name in ("keyctl", "add_key", "ptrace", "unshare"):
        assert seen[name] == [-1, errno.EPERM], (name, seen[name])
    assert seen["keys"] == errno.EACCES, "the referee's user's keys are not listed"
    assert seen["flock"] == errno.EPERM
    assert seen["thread"] and seen["subprocess"] == "hi\n"


def _as(user: list[str], code: str) -> str:
    """Run ``code`` (with ``call(nr, *args)``, a system call) as ``user``, outside any
    sandbox; its stdout."""
    prelude = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(nr, *args):\n    return libc.syscall(nr, *args)\n"
    )
    done = subprocess.run(
        [*user, "/usr/bin/python3", "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()
