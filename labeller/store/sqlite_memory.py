"""SQLite without its process-wide count of allocations, for lookups on more than one thread.

SQLite counts every allocation under one mutex shared by the whole process (SQLITE_CONFIG_MEMSTATUS, on by
default in Debian's and Python's builds). A cached rerun reads the directory store on two threads: their JSON
functions allocate for every field of every record, and the two threads spent their time waiting on that mutex
(two threads read no faster than one; without the count, twice as fast, and a tenth cheaper on one thread).
labeller never reads the count (sqlite3_memory_used() and the soft heap limit are all it serves).

The setting can change only while SQLite is shut down, so it is changed only when nothing of SQLite is in use
in the process (not one byte allocated: no connection open, on any thread); otherwise it is left as it is, and
everything works as before, only slower. The CLI calls it once, first thing.
"""

from __future__ import annotations

import ctypes

_SQLITE_CONFIG_MEMSTATUS = 9  # sqlite3.h


def stop_counting_allocations() -> bool:
    """Turn SQLite's allocation count off if nothing of SQLite is in use yet; whether it is off now."""
    try:
        import _sqlite3

        # Through the module's own handle: the SQLite that Python's sqlite3 uses, linked in or shared, and never a
        # second copy (a second SQLite in one process would drop the other's file locks when it closes a file).
        library = ctypes.CDLL(_sqlite3.__file__)
        memory_used = library.sqlite3_memory_used
    except (ImportError, OSError, AttributeError):
        return False
    memory_used.restype = ctypes.c_int64
    if memory_used() != 0:  # a connection is open somewhere in the process: leave SQLite as it is
        return False
    # A zero means nothing is in use only while allocations are counted: with the count already off (a build
    # without it, or a second call), an allocation leaves it at zero, and SQLite is not shut down at all.
    library.sqlite3_malloc.restype = ctypes.c_void_p
    library.sqlite3_free.argtypes = [ctypes.c_void_p]
    probe = library.sqlite3_malloc(ctypes.c_int(64))
    counting = memory_used() != 0
    library.sqlite3_free(probe)
    if not counting:
        return True
    if library.sqlite3_shutdown() != 0:
        return False
    configured = library.sqlite3_config(_SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0)) == 0
    library.sqlite3_initialize()
    return configured
