"""Generating designs into folders, for the generator's tests."""

from __future__ import annotations

import contextlib
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from agentgen.codegen.generation_model import GenerationModel
from agentgen.codegen.output import Diff, write
from agentgen.codegen.pipeline import model_of, render_model
from agentgen.codegen.render import RenderedFile

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


class Generation(NamedTuple):
    model: GenerationModel
    files: tuple[RenderedFile, ...]


def generate_design(design: Path, out: Path) -> tuple[Generation, Diff]:
    model = model_of(design)
    generation = Generation(model, render_model(model))
    return generation, write(out, generation.files)


def tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` (bytecode caches excluded) with its text."""
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def run_tool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # mypy finds agentgen through the path entry of make's editable install (the Makefile's
    # link-tree), as an application's mypy run does.
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@contextlib.contextmanager
def importable(folder: Path) -> Iterator[Path]:
    """``folder`` on ``sys.path`` while the block runs; modules imported from it are
    forgotten afterwards, so the next test imports its own generated packages."""
    sys.path.insert(0, str(folder))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))
        for name, module in list(sys.modules.items()):
            if (getattr(module, "__file__", None) or "").startswith(str(folder)):
                del sys.modules[name]


@contextlib.contextmanager
def generated_module(design: Path, base: Path, package: str, module: str) -> Iterator[ModuleType]:
    """``design`` generated into ``base/package`` and its ``package.module`` imported, for as
    long as the block runs (see :func:`importable`)."""
    generate_design(design, base / package)
    with importable(base):
        yield importlib.import_module(f"{package}.{module}")
