"""Regenerate a backend's lazy sources while a package builds (setuptools command classes).

In a backend's setup.py::

    from lazygen.build_hook import lazygen_cmdclass

    setup(..., cmdclass=lazygen_cmdclass(backend_yaml="my_backend.yaml",
                                         output_dir="my_backend/generated"))

`egg_info` and `build_py` then run `lazygen_gen` first. Generation is skipped when the content hash of
every input is unchanged (the stamp file in the output directory), so rebuilding costs
nothing. Paths are relative to the directory holding setup.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import Command
from setuptools.command.build_py import build_py
from setuptools.command.egg_info import egg_info


class LazygenGen(Command):
    """`python setup.py lazygen_gen`: regenerate the lazy backend sources if stale."""

    description = "generate lazy-tensor backend sources with lazygen"
    user_options = [
        ("backend-yaml=", None, "backend op list"),
        ("output-dir=", None, "directory of the generated modules"),
        ("templates=", None, "template override directory"),
        ("hand-written=", None, "package holding the hand-written pieces"),
        ("native-functions=", None, "native_functions.yaml (default: the installed torch's)"),
        ("tags=", None, "tags.yaml (default: the installed torch's)"),
        ("defer-hand-written=", None, "'yes': missing hand-written pieces are warnings"),
        ("skip-unknown-ops=", None, "'yes': leave out operators this torch lacks, with a warning"),
        (
            "per-torch-release=",
            None,
            "'yes': the output keeps one tree per torch release; the installed torch's is written",
        ),
        (
            "optional=",
            None,
            "'yes': skip with a notice when the build environment lacks "
            "torch/PyYAML/Jinja2/black (the committed generated sources are used)",
        ),
    ]
    #: What generation imports; an isolated build environment may not have them.
    REQUIREMENTS = ("torch", "yaml", "jinja2", "black")
    #: Defaults set by `lazygen_cmdclass`.
    defaults: dict[str, str | None] = {}

    def initialize_options(self) -> None:
        """Start from the defaults ``lazygen_cmdclass`` was given (setuptools' hook)."""
        for option, _, _ in self.user_options:
            name = option.rstrip("=").replace("-", "_")
            setattr(self, name, self.defaults.get(name))

    def finalize_options(self) -> None:
        """Check that the op list and the output directory are set (setuptools' hook)."""
        if not self.backend_yaml or not self.output_dir:
            raise ValueError("lazygen_gen needs backend_yaml and output_dir")

    def run(self) -> None:
        """Generate the backend's sources from its op list (the ``lazygen_gen`` command)."""
        import importlib.util

        missing = [m for m in self.REQUIREMENTS if importlib.util.find_spec(m) is None]
        if missing:
            message = (
                f"lazygen: the build environment lacks {', '.join(missing)}, needed to "
                "regenerate the lazy backend sources"
            )
            if str(self.optional).lower() in ("yes", "true", "1"):
                self.announce(message + "; using the committed generated sources", level=2)
                return
            raise SystemExit(message + " (install them, or build with --no-build-isolation)")
        from lazygen import release_trees
        from lazygen.diagnostics import LazygenError
        from lazygen.pipeline import DEFAULT_HAND_WRITTEN, GenConfig, run

        def path(value: str | None) -> Path | None:
            return None if value is None else Path(value)

        def yes(value: object) -> bool:
            return str(value).lower() in ("yes", "true", "1")

        config = GenConfig(
            backend_yaml=Path(self.backend_yaml),
            output_dir=Path(self.output_dir),
            native_functions=path(self.native_functions),
            tags=path(self.tags),
            templates=path(self.templates),
            hand_written=self.hand_written or DEFAULT_HAND_WRITTEN,
            defer_hand_written=yes(self.defer_hand_written),
            skip_unknown_ops=yes(self.skip_unknown_ops),
            per_torch_release=yes(self.per_torch_release),
        )
        # The hand-written package is part of the project being built: make it importable
        # from its sources (a PEP 517 build runs in the project directory, which is not on
        # sys.path), as it is for `lazygen gen` run there.
        source_root = str(Path.cwd().resolve())
        if source_root not in sys.path:
            sys.path.insert(0, source_root)
        try:
            result = release_trees.run(config) if config.per_torch_release else run(config)
        except LazygenError as exc:
            text = "\n".join(str(d) for d in exc.diagnostics)
            raise SystemExit("lazygen: " + text + self._flags_in_setup(text)) from None
        for d in result.warnings:
            where = f"{d.location}: " if d.location else ""
            hint = f" ({d.hint})" if d.hint else ""
            self.announce(f"lazygen: {where}warning: {d.message}{hint}", level=2)
        self.announce(f"lazygen: {config.output_dir}: {result.status}", level=2)

    def _flags_in_setup(self, text: str) -> str:
        """Name the setup.py keywords behind the `lazygen gen` switches diagnostics mention.

        Diagnostics name `lazygen gen`'s switches (`--skip-unknown-ops`); in a build they
        are `"yes"` keywords of `lazygen_cmdclass` in setup.py, so say which.
        """
        keywords = []
        for option, _, help_text in self.user_options:
            flag = "--" + option.rstrip("=")
            if help_text.startswith("'yes'") and flag in text:
                keywords.append(f'{flag.lstrip("-").replace("-", "_")}="yes"')
        if not keywords:
            return ""
        return (
            "\nlazygen: in this build, the options named above are keywords of "
            f"lazygen_cmdclass(...) in setup.py: {', '.join(keywords)}"
        )


class BuildPyWithLazygen(build_py):
    """`build_py` that regenerates the lazy sources first."""

    def run(self) -> None:
        """Generate the backend's sources first, then do setuptools' step."""
        self.run_command("lazygen_gen")
        super().run()


class EggInfoWithLazygen(egg_info):
    """`egg_info` lists package files, so the generated package must exist by then."""

    def run(self) -> None:
        """Generate the backend's sources first, then do setuptools' step."""
        self.run_command("lazygen_gen")
        super().run()


def lazygen_cmdclass(**defaults: str) -> dict[str, type[Command]]:
    """The `cmdclass` mapping for setup(); keyword arguments are `lazygen_gen` options."""
    gen = type("LazygenGen", (LazygenGen,), {"defaults": dict(defaults)})
    return {"lazygen_gen": gen, "build_py": BuildPyWithLazygen, "egg_info": EggInfoWithLazygen}
