"""Where compiled ranx kernels are cached, and when they are compiled at all."""

from __future__ import annotations

from pathlib import Path

from labeller.evaluation import numba_cache


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "chosen"))
    assert numba_cache.cache_dir() == tmp_path / "chosen"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert numba_cache.cache_dir() == tmp_path / "xdg" / "labeller" / "numba"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert numba_cache.cache_dir() == tmp_path / "home" / ".cache" / "labeller" / "numba"


def test_an_unwritable_cache_dir_falls_back_to_a_temp_dir(monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should go")
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    chosen = numba_cache._writable_cache_dir()
    assert chosen != numba_cache.cache_dir() and chosen.is_dir()
    assert Path(chosen, "probe").touch() is None


def test_compiling_depends_on_the_size_of_the_work(monkeypatch):
    monkeypatch.delenv("LABELLER_JIT", raising=False)
    assert not numba_cache.want_jit(None)
    assert not numba_cache.want_jit(numba_cache.JIT_THRESHOLD - 1)
    assert numba_cache.want_jit(numba_cache.JIT_THRESHOLD)
    monkeypatch.setenv("LABELLER_JIT", "off")
    assert not numba_cache.want_jit(10**9)
    monkeypatch.setenv("LABELLER_JIT", "on")
    assert numba_cache.want_jit(0)
