"""`lazygen new-backend`: the files of a new, installable backend project.

Every file of the project is a Jinja template in `templates/` (package data, shipped in
the wheel like the generator's templates): a template's path under that folder is the
file's path in the project, with `__package__` standing for the Python package's name,
`__name__` for the backend's, a leading `dot-` for `.` (package data globs skip dot
files), and `.jinja` dropped. Each template receives one
`ScaffoldSpec` as `spec`. Nothing here imports torch or the runtime: the project is
rendered, never run, by this module.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from lazygen.diagnostics import LazygenError

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: Backend and device names: what a torch device type and a Python package name accept.
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
#: Names lazygen's built-in backends already take (`init(backend=...)`).
BUILTIN_BACKENDS = ("torchscript", "inductor", "fx", "lazygen")
#: Device types torch already has (those `torch.device()` names when it rejects a string):
#: the lazy device cannot be renamed to one of them.
TORCH_DEVICE_TYPES = (
    "cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
    "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "xpu", "ipu",
    "privateuseone",
)  # fmt: skip


@dataclass(frozen=True)
class ScaffoldSpec:
    """What the templates are rendered with: the names derived from the backend's."""

    name: str  # the backend's name: `init(backend=name)`, the entry point, `NAME.yaml`
    device_name: str  # the torch device type its lazy device gets

    @property
    def package(self) -> str:
        """The Python package (`<name>_backend`: a bare backend name may shadow a module)."""
        return f"{self.name}_backend"

    @property
    def distribution(self) -> str:
        return f"{self.name.replace('_', '-')}-lazy-backend"

    @property
    def camel(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_") if part)

    @property
    def backend_class(self) -> str:
        return f"{self.camel}Backend"

    @property
    def context_class(self) -> str:
        return f"{self.camel}LoweringContext"

    @property
    def op_list(self) -> str:
        return f"{self.name}.yaml"


def check_name(kind: str, name: str) -> None:
    """A `LazygenError` saying what is wrong with a backend or device name, and what to
    use instead."""
    if not _NAME.match(name):
        raise LazygenError.at(
            None,
            f"{kind} name {name!r} is not usable",
            "use lower-case letters, digits and underscores, starting with a letter "
            "(it becomes a Python package name and a torch device type)",
        )
    if keyword.iskeyword(name):
        raise LazygenError.at(None, f"{kind} name {name!r} is a Python keyword", "pick another")
    if name in TORCH_DEVICE_TYPES:
        raise LazygenError.at(
            None,
            f"{kind} name {name!r} is a device type torch already has",
            "the lazy device gets a new device type: pick a name torch does not use",
        )
    if kind == "backend" and name in BUILTIN_BACKENDS:
        raise LazygenError.at(
            None, f"backend name {name!r} is taken by a built-in lazygen backend", "pick another"
        )


def _destination(template: Path, spec: ScaffoldSpec) -> Path:
    relative = template.relative_to(TEMPLATES).with_suffix("")  # drops `.jinja`
    parts = [
        part.replace("__package__", spec.package).replace("__name__", spec.name)
        for part in relative.parts
    ]
    if parts[-1].startswith("dot-"):
        parts[-1] = "." + parts[-1].removeprefix("dot-")
    return Path(*parts)


def render(spec: ScaffoldSpec) -> dict[Path, str]:
    """Project-relative path -> text, for every file of the project."""
    import jinja2  # here: `lazygen --version` stays fast

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    files = {}
    for template in sorted(TEMPLATES.rglob("*.jinja")):
        name = template.relative_to(TEMPLATES).as_posix()
        files[_destination(template, spec)] = env.get_template(name).render(spec=spec)
    return files


def write(spec: ScaffoldSpec, output_dir: Path) -> list[Path]:
    """Write the project into `output_dir` (new or empty); the paths written. An existing
    non-empty folder is refused, so that nobody's work is overwritten."""
    if output_dir.exists() and (not output_dir.is_dir() or any(output_dir.iterdir())):
        raise LazygenError.at(
            None,
            f"{output_dir} already exists and is not an empty folder",
            "give `-o` a new folder; new-backend never overwrites files",
        )
    files = render(spec)
    written = []
    for relative, text in files.items():
        path = output_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
