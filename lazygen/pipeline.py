"""The `lazygen gen` pipeline: inputs -> plan -> template models -> templates -> black -> files.

Steps, each a function: `input_hash` (cheap; decides whether anything needs doing, before
jinja2, black or torch are imported), `generate` (load, plan, check hand-written pieces,
render, format), `run` (compare with disk; write atomically or report staleness).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import lazygen
from lazygen import renamed
from lazygen.diagnostics import Diagnostic, LazygenError, Location

if TYPE_CHECKING:
    from lazygen.lazy.torch_child import TorchChild

STAMP = ".lazygen-stamp.json"
DEFAULT_HAND_WRITTEN = "lazygen.runtime.builtin.hand_written"
_GENERATOR_PACKAGES = ("lazy", "render", "model", "loaders")


@dataclass(frozen=True, slots=True)
class GenConfig:
    """Everything that determines one backend's generated output."""

    backend_yaml: Path
    output_dir: Path
    native_functions: Path | None = None
    tags: Path | None = None
    templates: Path | None = None
    hand_written: str = DEFAULT_HAND_WRITTEN
    check_hand_written: bool = True
    #: Missing hand-written pieces are warnings, not errors (a backend under construction).
    defer_hand_written: bool = False
    #: Operators this torch lacks are skipped with one warning instead of one error each.
    skip_unknown_ops: bool = False
    #: `output_dir` holds one tree per supported torch release (`lazygen.release_trees`).
    per_torch_release: bool = False
    jobs: int = 2


@dataclass(frozen=True)
class GenResult:
    """`status`: `skipped` (inputs unchanged), `current`, `written`, or `stale` (--check)."""

    status: str
    changes: tuple = ()
    diff: str = ""
    warnings: tuple[Diagnostic, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)


def _sources(config: GenConfig):
    from lazygen.loaders.native_yaml import NativeSources

    if config.native_functions is None and config.tags is None:
        return NativeSources.default()
    default = NativeSources.default() if None in (config.native_functions, config.tags) else None
    return NativeSources(
        config.native_functions or default.native_functions,  # type: ignore[union-attr]
        config.tags or default.tags,  # type: ignore[union-attr]
    )


def input_files(config: GenConfig) -> list[Path]:
    """Every file whose content can change the output or the checks' verdict."""
    from lazygen.lazy.hand_written import package_dir
    from lazygen.render.environment import template_files

    sources = _sources(config)
    files = [config.backend_yaml, sources.native_functions, sources.tags]
    files += template_files(config.templates)
    root = Path(lazygen.__file__).parent
    files.append(root / "gen.py")
    for package in _GENERATOR_PACKAGES:
        files += sorted((root / package).glob("*.py"))
    if config.check_hand_written:
        hand = package_dir(config.hand_written)
        if hand is not None and hand.is_dir():
            files += sorted(hand.glob("*.py"))
    return files


def input_hash(config: GenConfig, extra_files: dict[str, str] | None = None) -> str:
    """Content hash of inputs, templates, hand-written pieces, lazygen and torch versions
    (and the text of `extra_files`, written beside the generated files)."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "none"
    options = "|".join(
        str(option)
        for option in (
            lazygen.__version__,
            torch_version,
            config.hand_written,
            config.check_hand_written,
            config.defer_hand_written,
            config.skip_unknown_ops,
        )
    )
    digest.update(options.encode())
    for path in input_files(config):
        digest.update(path.name.encode())
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        except FileNotFoundError:
            digest.update(b"<missing>")
    for name in sorted(extra_files or ()):
        digest.update(f"{name}\0{extra_files[name]}\0".encode())
    return digest.hexdigest()


def _file_hash(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def stamp_current(config: GenConfig, inputs: str) -> bool:
    """The stamp records `inputs` and every file it lists is unchanged on disk."""
    try:
        stamp = json.loads((config.output_dir / STAMP).read_text())
    except (FileNotFoundError, ValueError):
        return False
    if stamp.get("inputs") != inputs:
        return False
    for name, digest in stamp.get("files", {}).items():
        try:
            if _file_hash((config.output_dir / name).read_bytes()) != digest:
                return False
        except FileNotFoundError:
            return False
    return True


def _stamp_text(inputs: str, files: dict[str, str]) -> str:
    body = {"inputs": inputs, "files": {n: _file_hash(files[n]) for n in sorted(files)}}
    return json.dumps(body, indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Generated:
    files: dict[str, str]
    warnings: tuple[Diagnostic, ...]
    errors: tuple[Diagnostic, ...]
    #: What the plan generates (`nodes`, `kernels`, ...).
    counts: dict[str, int]
    backend: str = ""
    #: Entries per section of the op list.
    sections: dict[str, int] = field(default_factory=dict)


def generate(
    config: GenConfig, *, torch_child: bool | None = None, child: TorchChild | None = None
) -> Generated:
    """Render every output file in memory. Raises `LazygenError` for bad inputs.

    Torch is asked in a child process started first (`lazygen.lazy.torch_child`), so its import
    overlaps loading the catalogue; `torch_child=False` asks in-process, `None` (the default)
    uses the child unless torch is already imported here or `config.jobs` is 1. `child`:
    one already started by `start_torch_child` (taken over and closed here).
    """
    if not config.backend_yaml.is_file():
        if child is not None:
            child.close()
        renamed.check_op_list_path(config.backend_yaml)
        raise LazygenError.at(
            Location(str(config.backend_yaml)),
            "backend op list not found",
            "check the path or pass another one",
        )
    if child is None and (torch_child if torch_child is not None else _torch_child_helps(config)):
        child = start_torch_child(config)
    try:
        return _generate(config, child)
    finally:
        if child is not None:
            child.close()


def _torch_child_helps(config: GenConfig) -> bool:
    return config.jobs > 1 and "torch" not in sys.modules


def start_torch_child(config: GenConfig) -> TorchChild | None:
    """The child process that imports torch and answers the planner's questions."""
    from lazygen.lazy.torch_child import TorchChild

    return TorchChild.start(config.hand_written if config.check_hand_written else None)


def _generate(config: GenConfig, child) -> Generated:
    from lazygen.lazy.hand_written import check_hand_written
    from lazygen.lazy.meta import TorchFacts
    from lazygen.lazy.plan import build_plan
    from lazygen.loaders.backend_yaml import load_backend
    from lazygen.loaders.native_yaml import load_catalogue
    from lazygen.render.environment import build_environment

    catalogue = load_catalogue(_sources(config))
    ops = load_backend(config.backend_yaml, catalogue, skip_unknown=config.skip_unknown_ops)
    env = build_environment(config.templates)
    facts = _prefetch(child, ops, catalogue, env, config) if child is not None else None
    plan, errors, warnings = build_plan(
        ops, catalogue, facts or TorchFacts(), skip_unknown=config.skip_unknown_ops
    )
    warnings = [*ops.notices, *warnings]
    if errors:
        raise LazygenError(errors)
    hand_errors: list[Diagnostic] = []
    asked = False

    def check_here() -> tuple[list[Diagnostic], list[Diagnostic]]:
        return check_hand_written(plan, config.hand_written, defer=config.defer_hand_written)

    if config.check_hand_written:
        if facts is not None:  # the child checks while this process renders
            asked = child.ask_hand_written(plan, defer=config.defer_hand_written)
        if not asked:
            hand_errors, hand_warnings = check_here()
            warnings += hand_warnings
    try:
        # Unchecked, the package may lack pieces as a deferred one may: reach it the same way.
        deferred = config.defer_hand_written or not config.check_hand_written
        files = _render(env, plan, config.hand_written, deferred)
    finally:
        if asked:  # collected even when rendering failed, so the child is not left waiting
            result = child.hand_written_result()
            hand_errors, hand_warnings = result or check_here()
            warnings += hand_warnings
    return Generated(
        files, tuple(warnings), tuple(hand_errors), plan.counts(), ops.backend, ops.counts()
    )


def _prefetch(child, ops, catalogue, env, config: GenConfig):
    """Record the planner's questions, warm the templates, then take the child's answers."""
    from typing import get_args

    from lazygen.lazy.plan import build_plan
    from lazygen.lazy.torch_child import RecordingFacts
    from lazygen.render.template_models import TemplateModel

    recording = RecordingFacts()
    try:
        build_plan(ops, catalogue, recording, skip_unknown=config.skip_unknown_ops)
    except Exception:  # noqa: BLE001 - the real planning pass reports it
        return None
    for model in get_args(TemplateModel):
        with contextlib.suppress(Exception):  # rendering reports template errors, in order
            env.get_template(model.template)
    return child.facts(recording.request())


def _render(env, plan, hand_written: str, deferred: bool = False) -> dict[str, str]:
    from lazygen.render.formatting import FormatError, format_all
    from lazygen.render.template_models import build_models

    sources = {}
    for name, model in build_models(plan, hand_written, deferred=deferred).items():
        sources[name] = render_template(env, model)
    try:
        return format_all(sources)
    except FormatError as exc:
        raise LazygenError.at(
            None, f"a template produced invalid Python: {exc}", "check your template overrides"
        ) from None


def validate(config: GenConfig) -> Generated:
    """Every check `run` makes short of touching the output directory: load, plan, check
    the hand-written pieces, render and format. Raises `LazygenError` exactly where `run`
    would; `lazygen validate` is this, so it agrees with `lazygen gen`."""
    generated = generate(config)
    if generated.errors:
        raise LazygenError(generated.errors)
    return generated


def run(
    config: GenConfig,
    *,
    check: bool = False,
    dry_run: bool = False,
    extra_files: dict[str, str] | None = None,
) -> GenResult:
    """Regenerate `config.output_dir` (or, with `check`/`dry_run`, only compare).

    `extra_files`: finished files written beside the generated ones (a per-release tree's
    `provenance.py`); their text is part of the input hash."""
    from lazygen.render.writer import UnsafeOutputName, plan_changes, unified_diff

    check_output_dir(config.output_dir)
    child = None
    if _torch_child_helps(config) and not (config.output_dir / STAMP).exists():
        child = start_torch_child(config)  # cannot be skipped: start torch's import at once
    try:
        inputs = input_hash(config, extra_files)
        skipped = stamp_current(config, inputs)
    except BaseException:
        if child is not None:
            child.close()
        raise
    if skipped:
        if child is not None:
            child.close()
        return GenResult("skipped")
    generated = generate(config, child=child)
    if generated.errors:  # nothing is written when hand-written pieces are missing
        raise LazygenError(generated.errors)  # as `validate` does
    files = {**generated.files, **(extra_files or {})}
    try:
        changes = plan_changes(config.output_dir, files)
    except UnsafeOutputName as exc:
        raise LazygenError.at(
            Location(str(config.output_dir)),
            f"generated file name {str(exc)!r} would leave the output directory",
            "output files must be plain names; report this as a lazygen bug",
        ) from None
    common = dict(warnings=generated.warnings, counts=generated.counts)
    if check or dry_run:
        status = "stale" if changes else "current"
        diff = unified_diff(config.output_dir, changes)
        return GenResult(status, tuple(changes), diff, **common)
    _write(config.output_dir, changes, _stamp_text(inputs, files))
    return GenResult("written" if changes else "current", tuple(changes), **common)


def _write(output_dir: Path, changes: list, stamp: str) -> None:
    """Apply `changes` to `output_dir`, then its stamp; a failure is the user's to fix."""
    from lazygen.render.writer import apply_changes, probe_writable, write_atomic

    stamp_path = output_dir / STAMP
    try:
        probe_writable(output_dir)
        apply_changes(output_dir, changes)
        if not stamp_path.exists() or stamp_path.read_text() != stamp:
            write_atomic(stamp_path, stamp)
    except OSError as exc:
        raise LazygenError.at(
            Location(str(output_dir)),
            f"cannot write {exc.filename or output_dir}: {exc.strerror or exc}",
            "check the directory's permissions and free space, or pass another --output-dir",
        ) from None


def check_output_dir(output_dir: Path) -> None:
    """The output path must be a directory (or not exist yet) and have a directory parent."""
    for path in (output_dir, *output_dir.parents):
        if path.exists() and not path.is_dir():
            raise LazygenError.at(
                Location(str(path)),
                f"output path {path} is a file, not a directory",
                "pass a directory to --output-dir",
            )
        if path.exists():
            return


def render_template(env, model) -> str:
    """Render one template model; template mistakes become errors located in the template file."""
    import jinja2

    try:
        return env.get_template(model.template).render(model=model)
    except jinja2.TemplateSyntaxError as exc:
        where = Location(exc.filename or exc.name or model.template, exc.lineno or 0)
        raise LazygenError.at(
            where, f"template syntax error: {exc.message}", "fix the template"
        ) from None
    except jinja2.TemplateError as exc:
        raise LazygenError.at(
            _template_location(exc, model.template),
            f"template failed: {exc.message or exc}",
            f"templates receive one `model` ({type(model).__name__}); use only its fields",
        ) from None


def _template_location(exc: BaseException, template: str) -> Location:
    """The innermost template file and line in a rendering traceback (Jinja maps them)."""
    found = Location(template)
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".jinja"):
            found = Location(filename, tb.tb_lineno)
        tb = tb.tb_next
    return found
