"""A path the bot's author owns, held by one open descriptor from its check to its bind.

A bot's folder and the paths its bot file reads belong to its author, who may change them
while the referee runs: a folder checked by name and bound by name a moment later may by
then be a link to the host's ``/proc`` or to the output folder, and bubblewrap follows
links when it binds a name. So each such path is opened once, one component at a time
from ``/`` with ``O_PATH | O_NOFOLLOW`` (a link anywhere on the way is refused, not
followed), the opened descriptor is checked, and bubblewrap binds that descriptor
(``--ro-bind-fd``), never the name again: whatever the path is changed to afterwards, the
sandbox shows what was checked. A path that no longer leads where it led when its bot file
was checked (its folder was resolved then, links and all) is refused with
:class:`PathChanged`, a clear fault for the bot, never a wider view.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

_OPEN = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


class PathChanged(OSError):
    """A bot's folder or read path changed under the referee (a link in its place, or
    gone); the message says which and what it is now."""


def open_held(path: Path, folder: bool = False) -> int:
    """An ``O_PATH`` descriptor of ``path`` (absolute, links already resolved), opened
    without following a link in any component; ``folder``: it must be a folder. Raises
    :class:`PathChanged` saying why not."""
    if not path.is_absolute() or ".." in path.parts:
        raise PathChanged(f"{path}: a bound path must be absolute and resolved")
    fd = os.open("/", _OPEN | os.O_DIRECTORY)
    try:
        walked = Path("/")
        for part in path.parts[1:]:
            walked = walked / part
            try:
                step = os.open(part, _OPEN, dir_fd=fd)
            except OSError as exc:
                raise PathChanged(
                    exc.errno or errno.ENOENT,
                    f"{walked} cannot be opened ({exc.strerror}): a bot's folder and the "
                    "paths it reads may not change while the referee runs",
                ) from None
            os.close(fd)
            fd = step
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                raise PathChanged(
                    errno.ELOOP,
                    f"{walked} is now a link (to {_target(walked)}): a bot's folder and the "
                    "paths it reads may not be replaced by links while the referee runs",
                )
            if walked != path and not stat.S_ISDIR(mode):
                raise PathChanged(errno.ENOTDIR, f"{walked} is no longer a folder")
        if folder and not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise PathChanged(errno.ENOTDIR, f"{path} is no longer a folder")
        # The descriptor itself says where it leads: the path, and nothing else.
        now = os.readlink(f"/proc/self/fd/{fd}")
        if now != str(path):
            raise PathChanged(errno.EXDEV, f"{path} now leads to {now}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _target(path: Path) -> str:
    with contextlib.suppress(OSError):
        return os.readlink(path)
    return "somewhere else"
