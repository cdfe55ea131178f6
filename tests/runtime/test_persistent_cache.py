"""lazygen's on-disk caches (``lazygen.runtime.execution.persistent_cache``): where they live, what
keys their folders, and every way they fail: a corrupt entry, an unwritable directory, a
full disk, processes writing at once, another CPU or version. Failures warn once and
never raise: the cache only saves time."""

from __future__ import annotations

import multiprocessing
import os
import warnings
from pathlib import Path

import pytest

from lazygen.runtime import metrics, state, torch_compat
from lazygen.runtime.execution import persistent_cache
from lazygen.runtime.execution.persistent_cache import PersistentCacheWarning


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LAZYGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LAZYGEN_CACHE", raising=False)
    state.part(state.Warned).clear()
    yield tmp_path / "cache"
    state.part(state.Warned).clear()


def test_the_test_session_never_reads_the_users_cache():
    """The root conftest points every cache into the session's own directory."""
    session = os.environ["LAZYGEN_TEST_CACHE_ROOT"]
    assert persistent_cache.root().is_relative_to(session)
    assert os.environ["XDG_CACHE_HOME"].startswith(session)


def test_location_and_opt_out(tmp_path, monkeypatch):
    monkeypatch.delenv("LAZYGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert persistent_cache.root() == tmp_path / "xdg" / "lazygen"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert persistent_cache.root() == tmp_path / "home" / ".cache" / "lazygen"
    monkeypatch.setenv("LAZYGEN_CACHE_DIR", str(tmp_path / "mine"))
    assert persistent_cache.root() == tmp_path / "mine"
    monkeypatch.setenv("LAZYGEN_CACHE", "0")
    assert persistent_cache.root() is None and persistent_cache.store("x") is None
    assert not persistent_cache.graphs_enabled()


def test_an_entry_round_trips_and_a_miss_is_none(cache_dir):
    store = persistent_cache.store("unit")
    metrics.reset()
    assert store.get("key") is None
    store.put("key", b"payload")
    assert store.get("key") == b"payload"
    assert store.path.is_relative_to(cache_dir)
    assert metrics.counter_value("PersistentCacheHit") == 1
    assert metrics.counter_value("PersistentCacheMiss") == 1


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "foreign"])
def test_a_corrupt_entry_is_removed_with_one_warning(cache_dir, damage):
    store = persistent_cache.store("unit")
    store.put("a", b"x" * 100)
    store.put("b", b"y" * 100)
    for key in ("a", "b"):
        file = store._file(key)
        data = file.read_bytes()
        file.write_bytes(
            {
                "truncated": data[:-10],
                "flipped": data[:-1] + bytes([data[-1] ^ 1]),
                "empty": b"",
                "foreign": b"not a lazygen entry" + data,
            }[damage]
        )
    with pytest.warns(PersistentCacheWarning, match="corrupt entry") as caught:
        assert store.get("a") is None
        assert store.get("b") is None
    assert len(caught) == 1  # one warning per process and kind
    assert not store._file("a").exists()
    store.put("a", b"fresh")
    assert store.get("a") == b"fresh"


def test_an_unmakeable_directory_warns_once_and_caches_nothing(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("LAZYGEN_CACHE_DIR", str(blocker / "cache"))
    state.part(state.Warned).clear()
    with pytest.warns(PersistentCacheWarning, match="cannot be made") as caught:
        assert persistent_cache.store("unit") is None
        assert persistent_cache.store("other") is None
    assert len(caught) == 1
    state.part(state.Warned).clear()


def test_a_failed_write_warns_once_and_stops_writing(cache_dir, monkeypatch):
    store = persistent_cache.store("unit")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(persistent_cache.tempfile, "mkstemp", full_disk)
    with pytest.warns(PersistentCacheWarning, match="cannot be written") as caught:
        store.put("a", b"1")
        store.put("b", b"2")
    assert len(caught) == 1 and not store.writable
    assert store.get("a") is None
    assert [p for p in store.path.iterdir()] == []


def test_a_write_that_fails_midway_leaves_no_file(cache_dir, monkeypatch):
    store = persistent_cache.store("unit")

    def fail(*args):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(persistent_cache.os, "replace", fail)
    with pytest.warns(PersistentCacheWarning):
        store.put("a", b"1")
    assert list(store.path.iterdir()) == []


def test_another_cpu_or_version_gets_another_folder(cache_dir, monkeypatch):
    here = persistent_cache.store("unit", "jax 1")
    here.put("k", b"compiled here")
    assert persistent_cache.store("unit", "jax 1").get("k") == b"compiled here"
    assert persistent_cache.store("unit", "jax 2").get("k") is None
    monkeypatch.setattr(persistent_cache, "machine", lambda: "another CPU\nflags: avx512f")
    assert persistent_cache.store("unit", "jax 1").get("k") is None
    monkeypatch.undo()
    monkeypatch.setenv("LAZYGEN_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(torch_compat, "VERSION", "9.9.9")
    assert persistent_cache.store("unit", "jax 1").get("k") is None


def test_the_machine_names_the_cpus_features():
    described = persistent_cache.machine()
    if Path("/proc/cpuinfo").exists():
        assert "flags" in described or "Features" in described


def test_an_edited_source_file_is_another_fingerprint(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    module = package / "lowering.py"
    module.write_text("A = 1\n")
    before = persistent_cache.source_fingerprint.__wrapped__(str(package))
    module.write_text("A = 22\n")
    assert persistent_cache.source_fingerprint.__wrapped__(str(package)) != before


def test_old_entries_beyond_the_limit_are_removed(cache_dir, monkeypatch):
    store = persistent_cache.store("unit")
    for k in range(6):
        store.put(str(k), b"v")
        os.utime(store._file(str(k)), (k, k))  # oldest first
    monkeypatch.setattr(persistent_cache, "MAX_ENTRIES", 3)
    fresh = persistent_cache.store("unit")  # a new process's first write trims
    fresh.put("new", b"v")
    assert fresh.get("0") is None and fresh.get("1") is None and fresh.get("5") == b"v"


def _writer(path: str, worker: int, rounds: int, results) -> None:
    os.environ["LAZYGEN_CACHE_DIR"] = path
    state.part(state.Warned).clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = persistent_cache.store("race")
        bad = 0
        for r in range(rounds):
            key = f"shared-{r % 5}"
            payload = (f"{key}:" * 20000).encode()  # every writer writes the same value
            store.put(key, payload)
            got = store.get(key)
            bad += got is not None and got != payload
    results.put((worker, bad, len(caught)))


@pytest.mark.multiprocess
def test_processes_writing_the_same_entries_at_once_never_read_a_torn_one(tmp_path):
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [
        context.Process(target=_writer, args=(str(tmp_path), w, 60, results)) for w in range(3)
    ]
    for process in workers:
        process.start()
    try:
        outcomes = [results.get(timeout=240) for _ in workers]
    finally:
        for process in workers:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    assert sorted(o[0] for o in outcomes) == [0, 1, 2]
    assert all(bad == 0 and warned == 0 for _, bad, warned in outcomes), outcomes
    folder = next((tmp_path / "race").iterdir())
    assert not [p for p in folder.iterdir() if p.name.startswith(".writing-")]


def test_trimming_skips_an_entry_another_process_renamed_meanwhile(tmp_path, monkeypatch):
    """A writer's temporary listed by ``_trim`` can be renamed by its process before
    ``_trim`` reads its time: that ``FileNotFoundError`` made the store unwritable, with a
    warning (seen in the concurrent-writers test above under load)."""
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(b"x")
    listed = [*tmp_path.iterdir(), tmp_path / ".writing-gone"]  # renamed before stat()
    monkeypatch.setattr(type(tmp_path), "iterdir", lambda self: iter(listed))
    persistent_cache._trim(tmp_path, keep=1)
    assert len([p for p in listed if p.exists()]) == 1


def test_a_source_file_that_cannot_be_read_is_left_out_of_the_fingerprint(tmp_path):
    """A dangling link (or a file removed while the folder is walked) made the fingerprint
    raise, failing the compile that asked for it (a CI run: another test's folder)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "lowering.py").write_text("x = 1\n")
    same = os.stat(tmp_path / "a" / "lowering.py")
    os.utime(tmp_path / "b" / "lowering.py", ns=(same.st_atime_ns, same.st_mtime_ns))
    (tmp_path / "b" / "gone.py").symlink_to(tmp_path / "nowhere.py")
    fingerprint = persistent_cache.source_fingerprint
    assert fingerprint(str(tmp_path / "b")) == fingerprint(str(tmp_path / "a"))


def test_a_backend_without_a_source_file_walks_no_folder(cache_dir, monkeypatch):
    """A backend class defined in ``python -c`` code or a notebook has no file: its store
    is keyed without a folder's fingerprint, where it once walked the current directory's
    parent (any tree, other programs' files included)."""
    import sys
    import types

    from lazygen.runtime.execution import graph_store

    module = types.ModuleType("lazygen_test_module_without_a_file")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    walked = []
    monkeypatch.setattr(persistent_cache, "source_fingerprint", lambda d: walked.append(d) or d)

    class Sourceless:
        name = "sourceless"
        persistent_executables = True

        def cache_fingerprint(self):
            return ()

    Sourceless.__module__ = module.__name__
    assert graph_store._open(Sourceless()) is not None  # a store all the same
    assert str(Path.cwd().resolve().parent) not in walked
    assert all(Path(d).is_relative_to(Path(persistent_cache.__file__).parents[3]) for d in walked)
