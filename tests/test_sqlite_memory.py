"""SQLite's allocation count turned off for the lookup threads (store.sqlite_memory), in a fresh process each:
off only while nothing of SQLite is in use, and SQLite working as before either way."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import ctypes, sqlite3, _sqlite3, sys
from labeller.store.sqlite_memory import stop_counting_allocations
used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
used.restype = ctypes.c_int64
held = sqlite3.connect(":memory:") if sys.argv[1] == "open" else None
off = stop_counting_allocations()
connection = sqlite3.connect(sys.argv[2])
again = stop_counting_allocations()  # with a connection open: nothing is shut down under it
connection.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
connection.executemany("INSERT INTO t VALUES (?, ?)", [(str(i), '{"grade": %d}' % (i % 5)) for i in range(2000)])
grades = connection.execute("SELECT sum(v -> '$.grade') FROM t").fetchone()[0]
counted = used()
connection.close()
print(off, again == off, grades, counted > 0, held is not None)
"""


@pytest.mark.parametrize("before, expected", [("nothing", "True True 4000 False False"),
                                                  ("open", "False True 4000 True True")])
def test_the_count_goes_off_only_while_sqlite_is_unused(tmp_path, before, expected):
    result = subprocess.run([sys.executable, "-c", SCRIPT, before, str(tmp_path / "db.sqlite")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected.split()


def test_the_cli_turns_it_off_before_anything_opens_a_store(tmp_path):
    code = ("import sys, labeller.store.sqlite_memory as m\n"
            "seen = []\n"
            "real = m.stop_counting_allocations\n"
            "m.stop_counting_allocations = lambda: seen.append(real()) or seen[-1]\n"
            "from labeller.cli import main\n"
            "try:\n    main(['cache', 'stats', '--cache', sys.argv[1]])\n"
            "except SystemExit:\n    pass\n"
            "print(seen)\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache")], capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "[True]", result.stdout + result.stderr
