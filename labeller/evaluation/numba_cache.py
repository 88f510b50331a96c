"""Import ranx without paying numba compilation on every command.

ranx's metric kernels are numba functions. Compiled, they are fast on big inputs but the first
call compiles them (about 12 s for the metrics labeller uses, 25 s for all of ranx) and the
result is cached only when NUMBA_CACHE_DIR is writable. Interpreted (numba's documented
DISABLE_JIT mode: the decorators hand back the plain Python functions), the same ranx code needs
no compilation at all and costs about as much as loading compiled code up to roughly a million
ranked positions (DL19: 43 queries × 1,000 documents × 4 metrics take about 0.1 s).

So the first import of ranx's metrics in a process picks a mode from the size of the work at hand:
interpreted below JIT_THRESHOLD ranked positions, compiled (with a persistent cache) above.
LABELLER_JIT=on|off|auto overrides. Values are identical in both modes (tested); only speed
differs. The choice lasts for the process because numba decorates functions once, at import.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

# Ranked positions scored (queries × depth, summed over metrics) above which compiled kernels win
# even after loading them: warm, the two break even near 1M positions and interpreted costs ~1 µs a
# position more beyond (benchmarks/evaluate_startup.py --large); compiling once costs ~10 s.
JIT_THRESHOLD = 1_000_000


def cache_dir() -> Path:
    """Where numba keeps compiled ranx kernels: NUMBA_CACHE_DIR, else the user cache dir."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "labeller" / "numba"


def _writable_cache_dir() -> Path:
    wanted = cache_dir()
    try:
        wanted.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=wanted, delete=True)
        probe.close()
        return wanted
    except OSError:  # read-only home (containers, CI sandboxes): a per-user temp dir still caches
        fallback = Path(tempfile.gettempdir()) / f"labeller-numba-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback


def ranx_requested() -> bool:
    """LABELLER_JIT=on|off: score with ranx (compiled or interpreted) instead of labeller's numpy kernels."""
    return os.environ.get("LABELLER_JIT", "auto").strip().lower() in ("1", "on", "true", "yes",
                                                                        "0", "off", "false", "no")


def want_jit(workload: int | None) -> bool:
    setting = os.environ.get("LABELLER_JIT", "auto").strip().lower()
    if setting in ("1", "on", "true", "yes"):
        return True
    if setting in ("0", "off", "false", "no"):
        return False
    return workload is not None and workload >= JIT_THRESHOLD


def import_ranx_metrics(workload: int | None = None) -> ModuleType:
    """ranx.metrics, with kernels compiled or interpreted as chosen on its first import here.

    Only `ranx.metrics` is imported, not the `ranx` package: its __init__ pulls in matplotlib,
    ir_datasets, pandas and scipy.stats (1.1 s of the 1.3 s `import ranx` takes), none of which
    metrics need. A later `import ranx` anywhere in the process runs ranx's own __init__ normally
    and reuses these very metric modules.
    """
    if "ranx" in sys.modules:
        return importlib.import_module("ranx.metrics")
    if "ranx.metrics" in sys.modules:
        return sys.modules["ranx.metrics"]
    compiled = want_jit(workload)
    if compiled and not os.environ.get("NUMBA_CACHE_DIR"):
        # numba reads this at import (and again before compiling); set it only if nobody chose one.
        os.environ["NUMBA_CACHE_DIR"] = str(_writable_cache_dir())
    import numba.core.config as numba_config

    spec = importlib.util.find_spec("ranx")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("ranx is not installed; labeller needs it for evaluation (pip install ranx)")
    package = ModuleType("ranx")
    package.__path__ = list(spec.submodule_search_locations)
    before = numba_config.DISABLE_JIT
    numba_config.DISABLE_JIT = not compiled
    if compiled:
        numba_config.THREADING_LAYER = "workqueue"  # what ranx's own __init__ sets
    sys.modules["ranx"] = package
    try:
        return importlib.import_module("ranx.metrics")
    finally:
        del sys.modules["ranx"]  # stand-in package only for this import
        # Only ranx's metric functions were decorated under our setting; other numba users are untouched.
        numba_config.DISABLE_JIT = before


def ranx_is_compiled() -> bool:
    """True when this process's ranx metric kernels are numba-compiled (False: interpreted)."""
    from numba.core.dispatcher import Dispatcher

    return isinstance(import_ranx_metrics().ndcg.__globals__["_ndcg_parallel"], Dispatcher)
