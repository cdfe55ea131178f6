"""lazygen's on-disk caches: what one process compiled, the next one on the machine reads.

One directory (``LAZYGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/lazygen``, else
``~/.cache/lazygen``; ``LAZYGEN_CACHE=0`` turns every persistent cache off) holds one
folder per store and fingerprint: ``<dir>/<store>/<fingerprint>/``. The fingerprint hashes
what an entry's meaning depends on beyond its own key: this machine's CPU (its model and
feature flags: XLA's CPU code uses the instructions it finds), the operating system and
architecture, Python's, torch's and lazygen's versions, the source files of lazygen (or of
the backend's package) by name, size and time, and what the store adds (JAX's version). A
changed fingerprint is a new, empty folder: another CPU or version never reads an entry it
did not write.

Entries are files named by the hash of their key, written whole to a temporary name and
renamed (``os.replace``, atomic on one file system): processes sharing the directory read
either no entry or a complete one, never a torn one. Each holds a checksum of its
payload: a corrupt entry is removed and ignored. Every failure (an unwritable directory,
a full disk, a corrupt entry) costs one ``PersistentCacheWarning`` per process and kind,
never an error: the cache only saves time.

The stores (``store(name, ...)``): ``jax`` is JAX's own compilation cache pointed here
(``backends/jax``); ``graphs`` holds lazygen's compiled graphs for backends that can
serialise them (``Backend.save_executable``; ``LAZYGEN_GRAPH_CACHE=0`` turns just it off).
Inductor keeps its FX graph cache where it always does.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import sys
import tempfile
import warnings
from pathlib import Path

from .. import metrics, state, torch_compat

_MAGIC = b"lazygen-cache-1\n"
_DIGEST_SIZE = 32  # sha256
#: Entries a store keeps; the oldest beyond it are removed when a process first writes.
MAX_ENTRIES = 4096


class PersistentCacheWarning(RuntimeWarning):
    """A persistent cache could not be used as intended (lazygen goes on without it)."""


def enabled() -> bool:
    """Whether the persistent caches are on (unless ``LAZYGEN_CACHE=0``)."""
    return os.environ.get("LAZYGEN_CACHE", "1").strip() != "0"


def graphs_enabled() -> bool:
    """Whether lazygen's store of compiled graphs is on (unless ``LAZYGEN_GRAPH_CACHE=0``)."""
    return enabled() and os.environ.get("LAZYGEN_GRAPH_CACHE", "1").strip() != "0"


def root() -> Path | None:
    """The cache directory, or None when ``LAZYGEN_CACHE=0``."""
    if not enabled():
        return None
    chosen = os.environ.get("LAZYGEN_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lazygen"


@state.process_memo
def machine() -> str:
    """The CPU (model and feature flags), architecture and operating system. Linux's
    ``/proc/cpuinfo`` names the CPU; ``platform.processor()`` (which runs ``uname -p`` in a
    child process, milliseconds in a process that holds torch) only where it is missing."""
    parts = [platform.machine(), platform.system()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                field = line.split(":", 1)[0].strip()
                if field in ("model name", "flags", "Features", "CPU part") and line not in parts:
                    parts.append(line.strip())
                if field == "" and len(parts) > 2:  # the first processor's block is enough
                    break
    except OSError:
        parts.append(platform.processor())
    return "\n".join(parts)


@state.process_memo
def source_fingerprint(package_dir: str) -> str:
    """Every ``.py`` file under ``package_dir`` by relative name, size and modification
    time: an edited or upgraded lowering is a new fingerprint. A file that cannot be read
    (a dangling link, one removed while the folder is walked) is no source and is left out:
    a fingerprint never fails the compile that asks for it."""
    lines = []
    for folder, _, files in os.walk(package_dir):  # os.walk: pathlib's rglob cost 5 ms
        inside = os.path.relpath(folder, package_dir)
        for name in files:
            if name.endswith(".py"):
                try:
                    stat = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                path = name if inside == "." else os.path.join(inside, name)
                lines.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()


def fingerprint(*parts: str) -> str:
    """What every entry of a store depends on, hashed (see the module docstring)."""
    import_root = Path(__file__).resolve().parents[2]  # the lazygen package
    generated = import_root.parent / "generated"
    common = (
        machine(),
        sys.version,
        torch_compat.VERSION,
        source_fingerprint(str(import_root)),
        source_fingerprint(str(generated)) if generated.is_dir() else "",
    )
    return hashlib.sha256("\0".join(common + parts).encode()).hexdigest()[:24]


class Store:
    """One folder of entries: ``get(key)`` and ``put(key, payload)``, ``key`` any string."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writable = True
        self._trimmed = False

    def _file(self, key: str) -> Path:
        return self.path / hashlib.sha256(key.encode()).hexdigest()

    def get(self, key: str) -> bytes | None:
        file = self._file(key)
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            metrics.count("PersistentCacheMiss")
            return None
        except OSError as error:
            warn("unreadable", f"an entry of {self.path} cannot be read ({error})")
            return None
        header = len(_MAGIC) + _DIGEST_SIZE
        payload = data[header:]
        if data[: len(_MAGIC)] != _MAGIC or data[len(_MAGIC) : header] != _sha(payload):
            warn("corrupt", f"a corrupt entry of {self.path} was ignored and removed")
            _remove(file)
            return None
        metrics.count("PersistentCacheHit")
        return payload

    def put(self, key: str, payload: bytes) -> None:
        if not self.writable:
            return
        try:
            if not self._trimmed:
                self._trimmed = True
                _trim(self.path, MAX_ENTRIES)
            handle, temporary = tempfile.mkstemp(dir=self.path, prefix=".writing-")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(_MAGIC + _sha(payload) + payload)
                os.replace(temporary, self._file(key))
            except BaseException:
                _remove(Path(temporary))
                raise
        except OSError as error:
            self.writable = False
            warn("unwritable", f"{self.path} cannot be written ({error}); nothing more is kept")


def _sha(payload: bytes) -> bytes:
    return hashlib.sha256(payload).digest()


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _trim(path: Path, keep: int) -> None:
    """Remove the least recently written entries beyond ``keep`` (and stale temporaries)."""
    dated = []
    for entry in path.iterdir():
        try:
            dated.append((entry.stat().st_mtime, entry))
        except FileNotFoundError:  # another process renamed its temporary meanwhile
            continue
    dated.sort(key=lambda item: item[0])
    for _, entry in dated[: max(0, len(dated) - keep)]:
        _remove(entry)


def directory(name: str, *parts: str) -> Path | None:
    """The folder of store ``name`` for this fingerprint (made, private to the user), or
    None when caching is off or the folder cannot be made (warned once)."""
    base = root()
    if base is None:
        return None
    path = base / name / fingerprint(name, *parts)
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as error:
        warn("unwritable", f"{path} cannot be made ({error}); lazygen runs without it")
        return None
    return path


def store(name: str, *parts: str) -> Store | None:
    """Store ``name`` (see the module docstring), or None when it is off or unusable."""
    path = directory(name, *parts)
    return None if path is None else Store(path)


def warn(kind: str, message: str) -> None:
    """One warning per process (until a reset) for each kind of failure."""
    if not state.first_time(f"persistent_cache:{kind}"):
        return
    warnings.warn(
        f"lazygen: persistent cache: {message}. Set LAZYGEN_CACHE_DIR to another directory, "
        "or LAZYGEN_CACHE=0 to run without the cache",
        PersistentCacheWarning,
        stacklevel=3,
    )
