"""Generating designs into folders, for the generator's tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from agentgen.codegen.generation_model import GenerationModel
from agentgen.codegen.output import Diff, write
from agentgen.codegen.pipeline import model_of, render_model
from agentgen.codegen.render import RenderedFile

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TYPECHECK_TREE = ROOT / "build" / "typecheck"


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


def typecheck_tree() -> Path:
    """The link tree mypy reads agentgen through (see the Makefile)."""
    package = TYPECHECK_TREE / "agentgen"
    package.mkdir(parents=True, exist_ok=True)
    for name in ("dsl", "codegen", "runtime", "templates"):
        link = package / name
        if not link.exists():
            link.symlink_to(ROOT / name, target_is_directory=True)
    return TYPECHECK_TREE


def run_tool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(typecheck_tree())}
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
