"""The evaluation pipeline: from DSL calls to a finished tree and the errors they reported.

After every DSL call of a design ran, the tree is completed in a fixed order: ``prepare`` fills
in defaults and finishes the design's models, the DSL's whole-tree rules run
(:func:`agentgen.dsl.validate.validate`), and ``finalize`` resolves what each consumer compiles.
Nothing here raises for a broken design: errors are returned, so that a caller (the generator's
checker) can add its own and report everything in one run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agentgen.dsl.errors import DesignError, DesignErrors, sort_errors
from agentgen.dsl.eval import EvalContext, design_context
from agentgen.dsl.expr import RootExpr
from agentgen.dsl.validate import finalize, prepare, validate

__all__ = ["Evaluation", "evaluate", "finish"]

Body = Callable[[], object]


@dataclass(frozen=True)
class Evaluation:
    """A finished tree and every DSL error of the design (call-time and whole-tree rules)."""

    root: RootExpr
    errors: tuple[DesignError, ...]
    #: The source file of each module the load ran and then unloaded, by module name: the
    #: generator's checks point at a model's own lines after the load (the loader fills it).
    sources: Mapping[str, str] = field(default_factory=dict)
    #: False when the design stopped at a DSL call Python refused the arguments of
    #: (:mod:`agentgen.dsl.misuse`): the tree holds what ran before it, so no whole-tree rule
    #: (the DSL's or the generator's) runs on it; ``errors`` are its calls' and that call's.
    complete: bool = True


def finish(ctx: EvalContext) -> Evaluation:
    """Run prepare → validate → finalize over the whole tree once all DSL code ran.

    ``finalize`` runs on invalid trees too: it only resolves selections, skipping what the
    errors left unresolved, so later checks can read every consumer's tools.
    """
    if ctx.stack:  # pragma: no cover - a body raised; the exception is already propagating
        raise RuntimeError("design evaluation ended inside an open scope")
    prepare(ctx.root)
    errors = [*ctx.errors, *validate(ctx.root)]
    finalize(ctx.root)
    return Evaluation(ctx.root, tuple(sort_errors(dict.fromkeys(errors))))


def evaluate(body: Body, *, file: str | None = None) -> RootExpr:
    """Evaluate a design given as a Python callable and check the DSL's rules.

    This is the in-process entry point (tests, notebooks); ``agentgen`` loads design files
    through :mod:`agentgen.codegen.loader` and adds the generator's own checks
    (:func:`agentgen.codegen.check_file`). Raises :class:`DesignErrors` listing every
    problem the DSL finds.
    """
    origin = file or inspect.getsourcefile(body) or "<design>"
    with design_context(origin) as ctx:
        body()
        evaluation = finish(ctx)
    if evaluation.errors:
        raise DesignErrors(evaluation.errors)
    return evaluation.root
