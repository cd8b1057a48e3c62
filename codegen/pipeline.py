"""The generator's stages in order: build the model, render, format."""

from __future__ import annotations

from dataclasses import dataclass

from agentgen.codegen.build import build
from agentgen.codegen.formatting import format_python
from agentgen.codegen.model import GenerationModel
from agentgen.codegen.render import RenderedFile, render
from agentgen.dsl.expr import RootExpr


@dataclass(frozen=True)
class Generation:
    model: GenerationModel
    files: tuple[RenderedFile, ...]


def generate(root: RootExpr) -> Generation:
    """Every file generated from a validated design, formatted. Raises ``DesignErrors``."""
    model = build(root)
    rendered = render(model)
    python = [f for f in rendered if f.is_python]
    formatted = iter(format_python([(f.path, f.text) for f in python]))
    files = tuple(RenderedFile(f.path, next(formatted)) if f.is_python else f for f in rendered)
    return Generation(model, files)
