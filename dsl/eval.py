"""The evaluation context of a design: the scope stack typed with the design's expressions.

:mod:`agentgen.dsl.scope` holds the mechanics; this module fixes its types to the expression
tree (``RootExpr`` at the root, ``Expr`` on the stack) and creates the tree's root for a load.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeAlias, cast

from agentgen.dsl import scope
from agentgen.dsl.expr import Expr, RootExpr
from agentgen.dsl.scope import NoDesignContextError, run_body

__all__ = ["EvalContext", "NoDesignContextError", "context", "design_context", "run_body"]

EvalContext: TypeAlias = scope.EvalContext[RootExpr, Expr]


def context() -> EvalContext:
    """The context of the design being evaluated (``NoDesignContextError`` outside one)."""
    return cast(EvalContext, scope.current_context())


@contextmanager
def design_context(file: str) -> Iterator[EvalContext]:
    """Activate a fresh context, with an empty tree, for the duration of one load."""
    ctx = EvalContext(root=RootExpr(file=file))
    ctx.root.evaluation = ctx.serial
    with scope.activate(ctx):
        yield ctx
