"""The system calls a sandboxed bot may make: a declared list, compiled once into a seccomp
filter that bubblewrap installs just before it starts the bot (``bwrap --seccomp FD``).

The list follows Docker's default seccomp profile (moby's ``profiles/seccomp/default.json``):
everything not allowed fails with ``EPERM`` (the process lives on: ordinary runtimes probe
a call, see it refused and carry on), and the allowed calls are those an unprivileged
program needs. It is stricter than Docker's where a bot has even less need than a
container: tracing and reading other processes, the kernel's keyrings (kept per uid and not
per namespace, so a key would outlive the bot and meet a later one), file handles, clock
setting are refused too, and sockets are limited to the families a gRPC client uses. So are the ways two sandboxes could pass messages through a file both may read (the
interpreter, a system library, the folder of a bot seated twice): file locks, file
watches (inotify, fanotify, F_NOTIFY) and the page cache, which is the host's and outlives
every process: no query of it (``cachestat``, ``mincore``, ``RWF_NOWAIT`` whether passed
to ``preadv2`` or inside an asynchronous-I/O request, where a filter cannot look: the AIO
calls are refused as a kernel without AIO refuses them), and no loading or dropping of a
page at will (``readahead``, ``fadvise64``'s ``WILLNEED`` and ``DONTNEED``, ``madvise``'s
``COLD`` and ``PAGEOUT``); nor the
whole host's counters (``sysinfo``: threads, load, free memory; the sandbox's ``/proc``
shows fixed figures in their place, :func:`referee.jail.sandbox.counter_files`). A bot that
keeps a database in its ``/tmp`` opens it without locking (SQLite: ``?nolock=1``).

The profile is data (:data:`PROFILE`, a :class:`SyscallProfile`) with a test of its own;
:func:`program` compiles it with libseccomp (through ``pyseccomp``, a ctypes binding to the
system's ``libseccomp2``) once per referee process, and :func:`program_fd` hands the bytes
to one bubblewrap start. The filter covers the native ABI alone: bots are 64-bit programs,
and a call through any other interface a process may enter the kernel by (on x86-64,
``int 0x80`` into the i386 ABI, or an x32 number, with bit 0x40000000) ends the process
with SIGSYS. Docker's profile filters those ABIs call by call instead; there the i386
``socketcall`` multiplexer, whose arguments lie in memory, opened every socket family the
native ``socket`` rule refuses.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
from dataclasses import dataclass

#: Namespace flags of ``clone``: a bot makes no namespaces of its own (bubblewrap has made
#: them): CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (Docker's mask).
CLONE_NAMESPACES = 0x7E020000

#: Socket families a bot may open: Unix sockets (its referee socket), IPv4 and IPv6 (a gRPC
#: runtime probes them; the network namespace is empty) and netlink (the C library asks it
#: for the interfaces). AF_VSOCK, for one, is not confined by the network namespace.
SOCKET_FAMILIES = (1, 2, 10, 16)  # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
#: Of netlink, only NETLINK_ROUTE (protocol 0: the interfaces and addresses of its own,
#: empty network namespace). The kernel's device events (NETLINK_KOBJECT_UEVENT) reach
#: every network namespace of the host's user namespace, a sandbox's too when the referee
#: runs as root: what happens on the host (devices, modules) is none of a bot's business.
SOCKET_CONDITIONS = ((16, 2, 0),)  # AF_NETLINK only when protocol (argument 2) is 0

#: ``fcntl`` commands a bot may use: descriptors, flags, owners and signals, pipe sizes,
#: seals, write hints. Not the file locks (F_GETLK/SETLK/SETLKW, their 64-bit and
#: open-file-description forms), leases or directory notification: on a file two sandboxes
#: share read-only (their interpreter, the system's libraries, a bot's two seats' folder) a
#: lock taken by one is seen by the other, a message past every namespace.
FCNTL_COMMANDS = (
    0, 1, 2, 3, 4,  # F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL
    8, 9, 10, 11, 15, 16, 17,  # F_SETOWN, F_GETOWN, F_SETSIG, F_GETSIG, F_[GS]ETOWN_EX, ...UIDS
    1030, 1031, 1032, 1033, 1034,  # F_DUPFD_CLOEXEC, F_[SG]ETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS
    1035, 1036, 1037, 1038,  # F_GET/SET_RW_HINT, F_GET/SET_FILE_RW_HINT
)  # fmt: skip

#: ``personality`` values a runtime may set or query (Docker's): PER_LINUX, PER_LINUX32,
#: UNAME26, PER_LINUX32|UNAME26, and 0xffffffff (query only). Anything else (e.g.
#: ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC) would weaken the process's own protections.
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)

#: ``fadvise64`` advice a bot may give about its own reads: POSIX_FADV_NORMAL, RANDOM,
#: SEQUENTIAL and NOREUSE. Not WILLNEED and DONTNEED: they load and drop a file's pages in
#: the host's page cache, where another bot reading the same file would see them.
FADVISE_ADVICE = (0, 1, 2, 5)

#: ``madvise`` advice a bot may give about its own memory: every value a runtime uses
#: (NORMAL to KEEPONFORK, 0-19; POPULATE_READ/WRITE, DONTNEED_LOCKED and COLLAPSE, 22-25).
#: Not COLD (20) and PAGEOUT (21): on a mapping of a shared file they push its pages out
#: of the host's page cache, which another bot reading the same file would notice.
MADVISE_ADVICE = (*range(20), 22, 23, 24, 25)

#: Calls an unprivileged process needs, as in Docker's default profile (its names of 32-bit
#: ABIs' calls, which the native ABI lacks, compile to nothing).
ALLOWED = (
    # files and folders
    "access", "chdir", "chmod", "chown", "chown32", "close", "close_range", "copy_file_range",
    "creat", "dup", "dup2", "dup3", "faccessat", "faccessat2", "fallocate", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32",
    "fchownat", "fdatasync", "fgetxattr", "flistxattr",
    "fremovexattr", "fsetxattr", "fstat", "fstat64", "fstatat64",
    "fsync", "ftruncate", "ftruncate64", "futimesat", "getcwd", "getdents", "getdents64",
    "getxattr", "getxattrat", "lchown", "lchown32", "lgetxattr", "link", "linkat", "listxattr",
    "listxattrat", "llistxattr", "_llseek", "lremovexattr", "lseek", "lsetxattr", "lstat",
    "lstat64", "mkdir", "mkdirat", "mknod", "mknodat", "newfstatat", "open", "openat",
    "openat2", "pread64", "preadv", "pwrite64", "pwritev", "pwritev2", "read",
    "readlink", "readlinkat", "readv", "removexattr", "removexattrat", "rename",
    "renameat", "renameat2", "rmdir", "sendfile", "sendfile64", "setxattr", "setxattrat",
    "splice", "stat", "stat64", "statx", "symlink", "symlinkat",
    "sync", "sync_file_range", "syncfs", "tee", "truncate", "truncate64", "umask", "unlink",
    "unlinkat", "utime", "utimensat", "utimensat_time64", "utimes", "vmsplice", "write",
    "writev",
    # waiting on many descriptors, events
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
    "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "poll", "ppoll",
    "ppoll_time64", "pselect6", "pselect6_time64", "select", "_newselect", "signalfd",
    "signalfd4", "timerfd_create", "timerfd_gettime", "timerfd_gettime64",
    "timerfd_settime", "timerfd_settime64", "pipe", "pipe2",
    # memory
    "brk", "map_shadow_stack", "membarrier", "memfd_create", "memfd_secret",
    "mlock", "mlock2", "mlockall", "mmap", "mmap2", "mprotect", "mremap", "mseal",
    "msync", "munlock", "munlockall", "munmap", "pkey_alloc", "pkey_free", "pkey_mprotect",
    "remap_file_pages",
    # processes and threads (clone is allowed below without namespace flags)
    "arch_prctl", "capget", "capset", "execve", "execveat", "exit", "exit_group", "fork",
    "vfork", "futex", "futex_requeue", "futex_time64", "futex_wait", "futex_waitv",
    "futex_wake", "get_robust_list", "get_thread_area", "getcpu", "getpgid", "getpgrp",
    "getpid", "getppid", "getpriority", "getrusage", "getsid", "gettid", "ioprio_get",
    "ioprio_set", "modify_ldt", "pidfd_open", "prctl", "prlimit64", "process_mrelease",
    "restart_syscall", "rseq", "sched_get_priority_max", "sched_get_priority_min",
    "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_getscheduler",
    "sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity",
    "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp",
    "set_robust_list", "set_thread_area", "set_tid_address", "setpgid", "setpriority",
    "setrlimit", "getrlimit", "ugetrlimit", "setsid", "wait4", "waitid", "waitpid",
    "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "uretprobe",
    # users and groups (no capability to use them: they only drop rights)
    "getegid", "getegid32", "geteuid", "geteuid32", "getgid", "getgid32", "getgroups",
    "getgroups32", "getresgid", "getresgid32", "getresuid", "getresuid32", "getuid",
    "getuid32", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32", "setgid", "setgid32",
    "setgroups", "setgroups32", "setregid", "setregid32", "setresgid", "setresgid32",
    "setresuid", "setresuid32", "setreuid", "setreuid32", "setuid", "setuid32",
    # signals (to its own processes: the PID namespace holds no other)
    "alarm", "kill", "pause", "pidfd_send_signal", "rt_sigaction", "rt_sigpending",
    "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sigaltstack", "sigprocmask",
    "sigreturn", "tgkill", "tkill",
    # time (reading it, sleeping, timers)
    "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64",
    "clock_nanosleep", "clock_nanosleep_time64", "getitimer", "gettimeofday", "nanosleep",
    "setitimer", "time", "timer_create", "timer_delete", "timer_getoverrun",
    "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64", "times",
    # sockets (socket itself is allowed below for SOCKET_FAMILIES)
    "accept", "accept4", "bind", "connect", "getpeername", "getsockname", "getsockopt",
    "listen", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", "send",
    "sendmmsg", "sendmsg", "sendto", "setsockopt", "shutdown", "socketpair",
    # System V and POSIX IPC (within the sandbox's own IPC namespace)
    "ipc", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
    "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "msgctl",
    "msgget", "msgrcv", "msgsnd", "semctl", "semget", "semop", "semtimedop",
    "semtimedop_time64", "shmat", "shmctl", "shmdt", "shmget",
    # the rest
    "getrandom", "ioctl", "uname",
)  # fmt: skip

#: Calls refused explicitly, and why: what a hostile bot would use them for. (Everything
#: not allowed is refused; these are named so that a test holds them, and so that no edit
#: of :data:`ALLOWED` lets one in unseen.)
DENIED = {
    "add_key": "kernel keyrings are kept per uid, not per sandbox: a key outlives the bot",
    "keyctl": "kernel keyrings: read or join what another bot of the same uid stored",
    "request_key": "kernel keyrings",
    "ptrace": "trace or read another process",
    "process_vm_readv": "read another process's memory",
    "process_vm_writev": "write another process's memory",
    "process_madvise": "act on another process's memory",
    "kcmp": "compare another process's kernel objects",
    "pidfd_getfd": "take a descriptor out of another process",
    "bpf": "load programs into the kernel",
    "perf_event_open": "performance counters: side channels and kernel attack surface",
    "userfaultfd": "stall the kernel at will (a classic exploit aid)",
    "io_uring_setup": "a second system-call interface the filter does not see into",
    "io_uring_enter": "io_uring",
    "io_uring_register": "io_uring",
    "mount": "the sandbox's own walls (mounts and namespaces are bubblewrap's)",
    "umount": "mounts",
    "umount2": "mounts",
    "pivot_root": "mounts",
    "chroot": "mounts",
    "fsopen": "mounts (the new mount API)",
    "fsconfig": "mounts",
    "fsmount": "mounts",
    "fspick": "mounts",
    "move_mount": "mounts",
    "open_tree": "mounts",
    "mount_setattr": "mounts",
    "unshare": "namespaces of its own",
    "setns": "enter another namespace",
    "clone3": "its flags are in memory, out of the filter's sight (ENOSYS: callers fall "
    "back to clone)",
    "open_by_handle_at": "open files by handle, around the mounts (the Shocker escape)",
    "name_to_handle_at": "file handles",
    "init_module": "kernel modules",
    "finit_module": "kernel modules",
    "delete_module": "kernel modules",
    "kexec_load": "replace the kernel",
    "kexec_file_load": "replace the kernel",
    "reboot": "the machine",
    "iopl": "raw I/O ports",
    "ioperm": "raw I/O ports",
    "swapon": "the machine's swap",
    "swapoff": "the machine's swap",
    "acct": "process accounting",
    "quotactl": "disk quotas",
    "quotactl_fd": "disk quotas",
    "lookup_dcookie": "kernel profiling",
    "syslog": "the kernel log",
    "vhangup": "terminals",
    "clock_settime": "the machine's clock",
    "clock_settime64": "the machine's clock",
    "settimeofday": "the machine's clock",
    "stime": "the machine's clock",
    "adjtimex": "the machine's clock",
    "clock_adjtime": "the machine's clock",
    "clock_adjtime64": "the machine's clock",
    "fanotify_init": "watch the whole file system",
    "fanotify_mark": "watch files",
    "inotify_init": "watch files another bot reads (a message between sandboxes)",
    "inotify_init1": "watch files another bot reads",
    "inotify_add_watch": "watch files another bot reads",
    "inotify_rm_watch": "watch files",
    "flock": "a lock on a file two sandboxes share is a message between them",
    "cachestat": "whether another bot read a shared file (the page cache, asked directly)",
    "sysinfo": "the whole host's process count, load and free memory: a counter one seat "
    "moves and another reads (glibc's qsort asks it for the memory size, and sorts "
    "whatever the answer)",
    "mincore": "whether a page of a mapped shared file is in the page cache",
    "statfs": "the free blocks and inodes of the host's file system under a bound path, "
    "which the referee's writes (the bots' logs) move: a counter one seat moves and another "
    "reads (ENOSYS; the gvisor tier refuses it too, :data:`HOST_FIGURE_CALLS`)",
    "fstatfs": "the same, through a descriptor",
    "readahead": "load a shared file's page into the page cache: a bit another bot reads",
    "io_setup": "asynchronous I/O: a read's RWF_NOWAIT travels in memory, out of the "
    "filter's sight (ENOSYS, as a kernel without AIO: callers fall back to threads)",
    "io_submit": "asynchronous I/O",
    "io_getevents": "asynchronous I/O",
    "io_pgetevents": "asynchronous I/O",
    "io_cancel": "asynchronous I/O",
    "io_destroy": "asynchronous I/O",
    "socketcall": "i386 multiplexer: its arguments are in memory, out of the filter's sight "
    "(and the i386 ABI itself ends the process)",
    "get_mempolicy": "NUMA memory policy (CAP_SYS_NICE in Docker's profile)",
    "set_mempolicy": "NUMA memory policy",
    "mbind": "NUMA memory policy",
    "migrate_pages": "move another process's memory",
    "move_pages": "move another process's memory",
    "sethostname": "the host name",
    "setdomainname": "the domain name",
    "uselib": "obsolete",
    "nfsservctl": "obsolete",
    "_sysctl": "obsolete",
    "ustat": "obsolete",
    "sysfs": "obsolete",
    "vm86": "obsolete",
    "vm86old": "obsolete",
}


#: Calls that answer from the host's kernel whatever the tier, refused in both: runsc
#: passes ``statfs`` on a bound path to the host's file system (:mod:`referee.jail.gvisor`
#: refuses these in the Sentry, through the OCI spec's filter).
HOST_FIGURE_CALLS = ("statfs", "fstatfs")

#: Refused calls that fail with another errno than EPERM: ``clone3`` and the AIO calls
#: answer as a kernel without them would (ENOSYS), so that callers fall back (to
#: ``clone``, to threads); so do ``statfs`` and ``fstatfs`` (no runtime asks them
#: unbidden: Python, Node, the JVM and the C++ sample bot start without them).
ERRNOS = {
    "clone3": errno.ENOSYS,
    **dict.fromkeys(HOST_FIGURE_CALLS, errno.ENOSYS),
    **{
        name: errno.ENOSYS
        for name in (
            "io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_cancel", "io_destroy",
        )
    },
}  # fmt: skip


@dataclass(frozen=True)
class ArgRule:
    """Allow ``call`` only when its argument ``index`` is one of ``values`` (or, with
    ``mask``, when ``argument & mask == 0``), and for a value named in ``only``, when
    another argument has the value given there."""

    call: str
    index: int
    values: tuple[int, ...] = ()
    mask: int = 0
    #: ``(value, other index, required)``: ``value`` is allowed only when argument
    #: ``other index`` equals ``required`` too.
    only: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class SyscallProfile:
    """A seccomp filter as data: what is allowed, on which conditions, and what fails how."""

    #: Calls allowed whatever their arguments.
    allowed: tuple[str, ...]
    #: Calls allowed on a condition on one argument.
    allowed_when: tuple[ArgRule, ...]
    #: Calls refused with ``default_errno``, as every call not allowed is (listed so that
    #: they are stated, and none of them is allowed by mistake: compiling checks).
    denied: tuple[str, ...]
    #: Calls refused with another errno (``clone3``: ENOSYS, so that callers fall back).
    errnos: tuple[tuple[str, int], ...] = ()
    #: What every other call returns.
    default_errno: int = errno.EPERM


#: The profile every sandboxed bot runs under.
PROFILE = SyscallProfile(
    allowed=ALLOWED,
    allowed_when=(
        ArgRule("clone", 0, mask=CLONE_NAMESPACES),
        ArgRule("socket", 0, values=SOCKET_FAMILIES, only=SOCKET_CONDITIONS),
        ArgRule("personality", 0, values=PERSONALITIES),
        ArgRule("fcntl", 1, values=FCNTL_COMMANDS),
        ArgRule("fcntl64", 1, values=FCNTL_COMMANDS),
        # No RWF_NOWAIT: it says whether another bot has read a shared file's page.
        ArgRule("preadv2", 5, values=(0,)),
        ArgRule("fadvise64", 3, values=FADVISE_ADVICE),
        ArgRule("madvise", 2, values=MADVISE_ADVICE),
    ),
    denied=tuple(name for name in DENIED if name not in ERRNOS),
    errnos=tuple(ERRNOS.items()),
)


class SeccompUnavailable(RuntimeError):
    """No seccomp filter can be compiled here; the message says why, in one line."""


def compile_profile(profile: SyscallProfile) -> bytes:
    """``profile`` as a classic BPF program for ``bwrap --seccomp`` (raises
    :class:`SeccompUnavailable` in one line when libseccomp is missing).

    A name this libseccomp does not know (a call newer than it) is left out: such a
    call then gets the default errno.
    """
    allowed = {*profile.allowed, *(rule.call for rule in profile.allowed_when)}
    both = sorted(allowed & {*profile.denied, *(name for name, _ in profile.errnos)})
    if both:
        raise ValueError(f"system calls both allowed and refused: {', '.join(both)}")
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:
        raise SeccompUnavailable(
            f"cannot filter system calls: {exc}; install the pyseccomp package and the "
            "system's libseccomp2 (apt-get install libseccomp2)"
        ) from None
    # The native ABI only (libseccomp's filter for x86-64 also takes x32's numbers for a
    # foreign ABI): a process that enters the kernel through another one ends, SIGSYS.
    rules = sc.SyscallFilter(sc.ERRNO(profile.default_errno))
    rules.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    # A binary search over the call numbers rather than a list every call walks through.
    with contextlib.suppress(OSError):
        rules.set_attr(sc.Attr.CTL_OPTIMIZE, 2)

    def number(name: str) -> int | None:
        nr = sc.resolve_syscall(sc.Arch.NATIVE, name)
        return None if nr == -1 else int(nr)  # -1: __NR_SCMP_ERROR, unknown here

    for name in profile.allowed:
        if (nr := number(name)) is not None:
            rules.add_rule(sc.ALLOW, nr)
    for rule in profile.allowed_when:
        if (nr := number(rule.call)) is None:
            continue
        if rule.mask:
            rules.add_rule(sc.ALLOW, nr, sc.Arg(rule.index, sc.MASKED_EQ, rule.mask, 0))
        for value in rule.values:
            also = [sc.Arg(i, sc.EQ, need) for v, i, need in rule.only if v == value]
            rules.add_rule(sc.ALLOW, nr, sc.Arg(rule.index, sc.EQ, value), *also)
    for name, code in profile.errnos:
        if (nr := number(name)) is not None:
            rules.add_rule(sc.ERRNO(code), nr)
    with os.fdopen(os.memfd_create("sticheln-seccomp", os.MFD_CLOEXEC), "w+b") as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


@functools.cache
def program() -> bytes:
    """:data:`PROFILE` compiled, once per referee process."""
    return compile_profile(PROFILE)


def program_fd(code: bytes) -> int:
    """A fresh descriptor to read ``code`` from, for one ``bwrap --seccomp FD`` (bubblewrap
    reads it to the end; the caller closes its copy once the process has started). Not
    inheritable: pass it on explicitly."""
    fd = os.memfd_create("sticheln-seccomp", os.MFD_CLOEXEC)
    try:
        with memoryview(code) as left:
            while left:
                left = left[os.write(fd, left) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
