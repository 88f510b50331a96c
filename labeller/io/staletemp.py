"""Temporary outputs a killed labeller left behind (`.labels.jsonl.k3j9x_2q.tmp`), removed by the next write.

io.writing.atomic_file writes beside its target, under a name of mkstemp's own pattern, and moves the file
into place when done; SIGKILL (or a power cut) leaves it there, and no later run would remove it. Each
writer holds an exclusive flock on its temporary file until the file is moved into place, and the kernel
drops the lock of a killed process: so the next atomic_file() for the same target removes the files of
that exact pattern that nobody holds. Left alone: any other name, a symlink, a file of another user,
one a live writer holds, and one younger than STALE_AFTER (a writer between creating its file and
locking it, microseconds).
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import time
from pathlib import Path

STALE_AFTER = 1.0  # seconds since a temporary file was last written


def own_temp(fd: int, target: Path, tmp: str) -> None:
    """Mark the caller's new temporary file `tmp` (open as `fd`) as in use for as long as `fd` is open (a fresh
    file: never contended), then remove the stale ones beside `target`."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    remove_stale(target, keep=tmp)


def remove_stale(target: Path, keep: str) -> int:
    """Remove the temporary files atomic_file() left beside `target` that no live writer holds; `keep` is the
    caller's own. Returns how many were removed (errors are not the caller's problem: the file stays)."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.tmp")
    removed = 0
    try:
        names = [n for n in os.listdir(target.parent) if pattern.fullmatch(n) and n != Path(keep).name]
    except OSError:
        return 0
    for name in names:
        path = target.parent / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:  # gone already, a symlink, not ours to read
            continue
        try:
            info = os.fstat(fd)
            if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
                    or time.time() - info.st_mtime < STALE_AFTER):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a live writer holds it
                continue
            if os.stat(path, follow_symlinks=False).st_ino == info.st_ino:  # still the file just checked
                os.unlink(path)
                removed += 1
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
