"""The settings table cannot fall behind the code: every ``LAZYGEN_*`` variable that
``lazygen/`` reads is listed in ``environment.VARIABLES`` or ``process.EFFECTS``, the two
lists the documentation's table is rendered from, and nothing is listed twice."""

from __future__ import annotations

import re
from pathlib import Path

import lazygen
from lazygen.runtime import environment, process

PACKAGE = Path(lazygen.__file__).resolve().parent
# A read: os.environ.get("X"), os.environ["X"], os.getenv("X"), _env_int("X", ...) or an
# Effect("name", "X", ...), whose variable ``process.enabled`` reads.
READ = re.compile(
    r"""(?:environ(?:\.get)?\(?\[?|getenv\(|_env_int\(|Effect\(\s*"\w+",\s*)\s*"(LAZYGEN_\w+)\""""
)


def variables_read() -> dict[str, str]:
    """Each variable read in lazygen/, with the first file that reads it."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in READ.findall(path.read_text()):
            found.setdefault(name, str(path.relative_to(PACKAGE)))
    return found


def test_every_variable_read_is_documented():
    listed = {v.name for v in environment.VARIABLES} | {e.variable for e in process.EFFECTS}
    missing = {n: f for n, f in variables_read().items() if n not in listed}
    assert not missing, f"add to lazygen/runtime/environment.py's VARIABLES: {missing}"


def test_the_scan_finds_the_variables_it_must():
    read = variables_read()
    for name in (
        "LAZYGEN_BACKEND",
        "LAZYGEN_SAVE_TENSORS_FMT",
        "LAZYGEN_DEVICE_COUNT",
        "LAZYGEN_GC_FREEZE",
    ):
        assert name in read, name


def test_every_documented_variable_is_read():
    """A variable that sets a setting is read through the list itself (``Variable.read``,
    called by ``state.settings``); the others where the scan finds them."""
    read = variables_read()
    stale = [v.name for v in environment.VARIABLES if v.name not in read and not v.setting]
    assert not stale, f"documented but read nowhere (remove or fix the name): {stale}"


def test_no_variable_is_listed_twice():
    names = [v.name for v in environment.VARIABLES] + [e.variable for e in process.EFFECTS]
    assert len(names) == len(set(names))


def test_the_settings_are_built_from_the_list():
    """One list: each variable with a setting is an attribute of ``state.settings``, and each
    attribute is such a setting or one of the runtime-only ones listed with their reason."""
    from lazygen.runtime import state

    slots = set(type(state.settings).__slots__)
    from_environment = {v.setting for v in environment.SETTINGS}
    assert slots == from_environment | set(state.RUNTIME_ONLY_SETTINGS)
    assert not from_environment & set(state.RUNTIME_ONLY_SETTINGS)
    assert all(v.kind in ("int", "flag") for v in environment.SETTINGS)


def test_a_setting_reads_its_variable(monkeypatch):
    variable = next(v for v in environment.SETTINGS if v.name == "LAZYGEN_RECOMPILE_LIMIT")
    monkeypatch.setenv(variable.name, "3")
    assert variable.read() == 3
    monkeypatch.setenv(variable.name, "not a number")
    assert variable.read() == int(variable.default)
    flag = next(v for v in environment.SETTINGS if v.name == "LAZYGEN_ASYNC")
    monkeypatch.setenv(flag.name, "0")
    assert flag.read() is False
