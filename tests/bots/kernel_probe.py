"""What a sandboxed process can learn of the kernel it runs on, as one JSON line on stdout:
the load average, ``sysinfo``'s process count, whether a page of a shared file is cached
(``RWF_NOWAIT``, ``mincore``), and whether it can lock that file (another sandbox or the
host may hold the lock). Run by tests/test_gvisor.py inside each tier; it needs no referee.

    python3 kernel_probe.py SHARED_FILE
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import sys


class _Sysinfo(ctypes.Structure):
    _fields_ = [  # struct sysinfo, as far as procs
        ("uptime", ctypes.c_long),
        ("loads", ctypes.c_ulong * 3),
        ("totalram", ctypes.c_ulong),
        ("freeram", ctypes.c_ulong),
        ("sharedram", ctypes.c_ulong),
        ("bufferram", ctypes.c_ulong),
        ("totalswap", ctypes.c_ulong),
        ("freeswap", ctypes.c_ulong),
        ("procs", ctypes.c_ushort),
        ("pad", ctypes.c_char * 64),
    ]


def main() -> None:
    shared = sys.argv[1]
    seen: dict[str, object] = {}
    with open("/proc/loadavg", encoding="ascii") as f:
        seen["loadavg"] = f.read().split()[:3]
    info = _Sysinfo()
    libc = ctypes.CDLL(None, use_errno=True)
    seen["procs"] = info.procs if libc.sysinfo(ctypes.byref(info)) == 0 else None
    fd = os.open(shared, os.O_RDONLY)
    try:
        try:
            os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)
            seen["nowait"] = "cached"
        except OSError as exc:
            seen["nowait"] = "not cached" if exc.errno == errno.EAGAIN else exc.strerror
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen["lock"] = "taken"
        except OSError as exc:
            seen["lock"] = "held elsewhere" if exc.errno == errno.EWOULDBLOCK else exc.strerror
    finally:
        os.close(fd)
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    main()
