"""Checks every command makes on its outputs before doing any work.

An output must never be one of the command's inputs (writing `--out corpus.jsonl` would destroy
the corpus), and it must be writable: a read-only or full disk, a path under a regular file or a
directory given as a file are found here, before a single request is paid for, not after.

`check_outputs` is the early check each command calls. `guard_inputs` is the net under it: while it
is active, `atomic_file` refuses to replace any of the guarded inputs, for outputs whose names are
only known deep inside a pipeline.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from labeller.errors import OutputError

PathLike = str | os.PathLike

_guarded: ContextVar[tuple[Path, ...]] = ContextVar("labeller_guarded_inputs", default=())


def same_file(a: PathLike, b: PathLike) -> bool:
    """True when two paths name one file: the same path after resolving symlinks and `..`, or a hard link."""
    a, b = Path(a), Path(b)
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:  # one of them does not exist (yet)
        pass
    return a.resolve() == b.resolve()


def refuse_inputs(outputs: Mapping[str, PathLike | None], inputs: Iterable[PathLike | None]) -> None:
    """Raise when an output is one of the inputs. `outputs` maps how the user named it (`--out`) to a path."""
    existing = [Path(i) for i in inputs if i is not None]
    for option, out in outputs.items():
        if out is None:
            continue
        for source in existing:
            if same_file(out, source):
                shown = "" if str(source) == str(out) else f" ({source})"
                raise OutputError(f"{option} is an input of this command{shown}; writing it would destroy the "
                                  "input: choose another output path", path=str(out))


def check_writable_file(path: PathLike, option: str) -> None:
    """Raise unless `path` can be (re)written as a regular file."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{option} is a directory; expected a file path", path=str(path))
    if path.exists() and not path.is_file():
        raise OutputError(f"{option} is not a regular file (a device or a pipe); expected a file path",
                          path=str(path))
    _probe(path.parent, option, path)


def check_writable_dir(path: PathLike, option: str) -> None:
    """Raise unless `path` is, or can be created as, a directory files can be written into."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{option} is not a directory; expected a directory path", path=str(path))
    _probe(path, option, path)


def _probe(directory: Path, option: str, shown: Path) -> None:
    """Write, sync and remove one small file in `directory` (or its nearest existing ancestor, which the
    output would be created under): permission bits are ignored by root, so only trying tells."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"cannot write {option}: {existing} is not a directory", path=str(shown))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".labeller-write-check.", dir=existing)
        try:
            os.write(fd, b"labeller write check\n")
            os.fsync(fd)  # a full disk may only say so when the data must reach it
        finally:
            os.close(fd)
            os.unlink(tmp)
    except OSError as exc:
        raise OutputError(f"cannot write {option} ({exc.strerror or exc})", path=str(shown)) from None


def check_outputs(*, inputs: Iterable[PathLike | None] = (), files: Mapping[str, PathLike | None] | None = None,
                  dirs: Mapping[str, PathLike | None] | None = None) -> None:
    """The early check of a command: no output is an input, and every output can be written."""
    inputs = [i for i in inputs if i is not None]
    files = {k: v for k, v in (files or {}).items() if v is not None}
    dirs = {k: v for k, v in (dirs or {}).items() if v is not None}
    refuse_inputs({**files, **dirs}, inputs)
    for option, path in files.items():
        check_writable_file(path, option)
    for option, path in dirs.items():
        check_writable_dir(path, option)


@contextmanager
def guard_inputs(inputs: Iterable[PathLike | None]) -> Iterator[None]:
    """While active, no atomic write may replace one of `inputs` (see `refuse_guarded`)."""
    token = _guarded.set(_guarded.get() + tuple(Path(i) for i in inputs if i is not None))
    try:
        yield
    finally:
        _guarded.reset(token)


def refuse_guarded(path: PathLike) -> None:
    """Called by every atomic write: raise when `path` is an input guarded by `guard_inputs`."""
    for source in _guarded.get():
        if same_file(path, source):
            raise OutputError("this output is an input of the command; writing it would destroy the input: "
                              "choose another output path", path=str(path))


def existing_files(paths: Iterable[PathLike | None]) -> list[Path]:
    """The paths that name existing files (a rubric or judge name that is not a file is dropped, and so is an
    in-memory input: no output can overwrite it)."""
    return [Path(p) for p in paths if isinstance(p, (str, os.PathLike)) and Path(p).is_file()]
