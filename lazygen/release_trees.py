"""Generated code kept per torch release: ``<output>/torch<major>_<minor>/``, one tree each.

Generated code depends on the torch it was generated with (argument names and schemas come
from its ``native_functions.yaml``, kernels and meta functions from its dispatcher), and a
package that ships generated code (lazygen's built-in op list) must run on every supported
torch. So such an output holds one tree per supported release, each generated with that
release, and an ``__init__.py`` that makes the package the installed torch's tree at import
(``lazygen.runtime.torch_compat.generated_tree``). Committed trees, rather than code
generated at first import: nothing is written at run time (read-only installs, many ranks
starting at once), the first import costs nothing, and each release's code is reviewed.

One environment has one torch, so ``lazygen gen`` writes the installed release's tree and
``--check`` compares it exactly. The other trees are checked through their provenance: each
tree of a release other than the primary one records the digest of the primary tree it was
generated beside. When the primary tree changes (a template, the op list, the generator),
the other trees are reported stale here, and regenerating them with their torch records
the new digest. CI runs the check with every supported torch, so every tree is compared
exactly there.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from lazygen import pipeline
from lazygen.diagnostics import Diagnostic, LazygenError, Location
from lazygen.render.writer import FileChange, apply_changes, plan_changes, unified_diff
from lazygen.torch_releases import (
    PRIMARY,
    SUPPORTED,
    release_of,
    release_text,
    tree_name,
    tree_release,
    unsupported_message,
)

PROVENANCE = "provenance.py"
SELECTOR = "__init__.py"


def installed_torch_version() -> str | None:
    """The installed torch's version, read from its metadata (torch is not imported)."""
    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def is_laid_out_per_release(root: Path) -> bool:
    """`root` already holds per-release trees (``torch2_13/``, ...)."""
    return root.is_dir() and any(
        path.is_dir() and tree_release(path.name) for path in root.iterdir()
    )


def tree_digest(tree: Path) -> str:
    """A digest of a tree's generated modules (its provenance left out); "" if absent."""
    files = sorted(p for p in tree.glob("*.py") if p.name != PROVENANCE) if tree.is_dir() else []
    if not files:
        return ""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def recorded_beside(tree: Path) -> dict[str, str] | None:
    """The digests a tree's ``provenance.py`` records (None when it has none)."""
    try:
        module = ast.parse((tree / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "BESIDE" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def run(config: pipeline.GenConfig, *, check: bool = False, dry_run: bool = False):
    """`lazygen gen` for an output laid out per release (`config.output_dir` is the root)."""
    root = config.output_dir
    installed = installed_torch_version()
    release = release_of(installed or "")
    if release not in SUPPORTED:
        raise LazygenError.at(
            Location(str(root)),
            f"cannot generate the per-release trees of {root}: "
            + unsupported_message(installed or "(none)"),
            "generate each tree in an environment with that torch",
        )
    pipeline.check_output_dir(root)
    tree = tree_name(release)
    result = pipeline.run(
        replace(config, output_dir=root / tree),
        check=check,
        dry_run=dry_run,
        extra_files={PROVENANCE: _provenance(root, release, installed or "")},
    )
    root_changes = plan_changes(root, {SELECTOR: _selector()})
    problems = _other_trees(root, release)
    if not (check or dry_run) and root_changes:
        apply_changes(root, root_changes)
    changes = [_in_tree(tree, c) for c in result.changes] + root_changes
    diff = result.diff + unified_diff(root, root_changes)
    if check or dry_run:
        status = "stale" if (result.status == "stale" or root_changes or problems) else "current"
    elif result.status == "skipped" and not root_changes:
        status = "skipped"
    else:
        status = "written" if changes else "current"
    return pipeline.GenResult(
        status,
        tuple(changes),
        diff,
        warnings=(*result.warnings, *problems),
        counts=result.counts,
    )


def _in_tree(tree: str, change: FileChange) -> FileChange:
    return FileChange(f"{tree}/{change.name}", change.old, change.new)


def _provenance(root: Path, release: tuple[int, int], torch_version: str) -> str:
    from lazygen.render.environment import build_environment
    from lazygen.render.formatting import format_source
    from lazygen.render.template_models import ProvenanceModel

    beside = ()
    if release != PRIMARY:
        primary = tree_name(PRIMARY)
        beside = ((primary, tree_digest(root / primary)),)
    model = ProvenanceModel(torch_version.split("+")[0], beside)
    return format_source(pipeline.render_template(build_environment(), model))


def _selector() -> str:
    from lazygen.render.environment import build_environment
    from lazygen.render.template_models import ReleasesInitModel

    return pipeline.render_template(build_environment(), ReleasesInitModel())


def _other_trees(root: Path, installed: tuple[int, int]) -> list[Diagnostic]:
    """What is wrong with the trees of releases other than the installed one."""
    problems = []
    primary = root / tree_name(PRIMARY)
    for release in SUPPORTED:
        tree = root / tree_name(release)
        where = Location(str(tree))
        regenerate = f"run `lazygen gen` in an environment with torch {release_text(release)}"
        if release == installed:
            continue
        if not tree.is_dir():
            message = f"no generated tree for torch {release_text(release)}"
            problems.append(Diagnostic(where, message, regenerate))
        elif release != PRIMARY and installed == PRIMARY:
            recorded = (recorded_beside(tree) or {}).get(primary.name)
            if recorded != tree_digest(primary):
                message = (
                    f"generated beside another {primary.name}/ than the one here (the op "
                    "list, a template or the generator changed since): it is stale"
                )
                problems.append(Diagnostic(where, message, regenerate))
    for path in sorted(root.iterdir()) if root.is_dir() else ():
        release = tree_release(path.name)
        if path.is_dir() and release is not None and release not in SUPPORTED:
            message = f"a tree for torch {release_text(release)}, which lazygen does not support"
            problems.append(Diagnostic(Location(str(path)), message, "delete it"))
    return problems
