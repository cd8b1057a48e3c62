"""The evaluation context: the scope stack DSL functions consult, and the errors they report.

A context exists per load (held in a ``ContextVar``), never per process: two designs loaded one
after the other, or the same design loaded twice, build independent trees.

DSL functions run eagerly. A body, given as a trailing callable or as a ``with`` block, runs
with its expression pushed on the stack; DSL calls inside it look at the top of the stack to
know where they are. Errors found while the DSL runs are collected, not raised, so that one run
reports all of them together with the ones the validator finds afterwards.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import FunctionType

from agentgen.dsl.errors import DesignError, DesignErrors
from agentgen.dsl.expr import Expr, RootExpr
from agentgen.dsl.location import SourceLoc, caller_loc, forget_positions

Body = Callable[[], object]


@dataclass
class EvalContext:
    root: RootExpr
    stack: list[Expr] = field(default_factory=list)
    errors: list[DesignError] = field(default_factory=list)

    def current(self) -> Expr | None:
        return self.stack[-1] if self.stack else None

    def where(self) -> str:
        top = self.current()
        return top.where() if top is not None else ""

    def report(
        self,
        loc: SourceLoc,
        message: str,
        *,
        where: str | None = None,
        related: tuple[SourceLoc, ...] = (),
    ) -> None:
        self.errors.append(
            DesignError(loc, self.where() if where is None else where, message, related)
        )


_CURRENT: ContextVar[EvalContext | None] = ContextVar("agentgen_eval_context", default=None)


class NoDesignContextError(RuntimeError):
    """A DSL function was called while no design was being evaluated."""


def context() -> EvalContext:
    ctx = _CURRENT.get()
    if ctx is None:
        raise NoDesignContextError(
            "agentgen DSL functions only work while a design is evaluated: run "
            "`agentgen validate design.py`, or call agentgen.dsl.evaluate(body) in Python"
        )
    return ctx


@contextmanager
def design_context(file: str) -> Iterator[EvalContext]:
    """Activate a fresh context for the duration of one load."""
    ctx = EvalContext(root=RootExpr(file=file))
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)
        forget_positions()


def run_body(ctx: EvalContext, expr: Expr, body: object, func: str) -> None:
    """Run a trailing-callable body with ``expr`` on top of the stack."""
    loc = expr.loc
    if not callable(body):
        ctx.report(
            loc, f"{func} body must be a callable taking no arguments, got {type(body).__name__}"
        )
        expr.body_rejected = True
        return
    if not _callable_without_arguments(body):
        ctx.report(loc, f"{func} body must be callable with no arguments")
        expr.body_rejected = True
        return
    expr.body_loc = loc
    ctx.stack.append(expr)
    try:
        body()
    finally:
        popped = ctx.stack.pop()
        assert popped is expr, "DSL scope stack out of balance"


def _callable_without_arguments(fn: Callable[..., object]) -> bool:
    if isinstance(fn, FunctionType):  # lambdas and functions: read the code object (fast)
        code = fn.__code__
        required = code.co_argcount - len(fn.__defaults__ or ())
        required_kw = code.co_kwonlyargcount - len(fn.__kwdefaults__ or {})
        return required <= 0 and required_kw <= 0
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return True
    try:
        signature.bind()
    except TypeError:
        return False
    return True


def enter_with_body(expr: Expr) -> None:
    ctx = context()
    loc = caller_loc()
    if expr.body_loc is not None:
        ctx.report(
            loc,
            f"{_func_name(expr)} accepts at most one body: it already has one "
            f"(line {expr.body_loc.line}); use either a trailing callable or a with block",
            where=expr.where(),
        )
    expr.body_loc = loc
    ctx.stack.append(expr)


def exit_with_body(expr: Expr) -> None:
    ctx = context()
    if ctx.stack and ctx.stack[-1] is expr:
        ctx.stack.pop()
    else:  # pragma: no cover - only reachable by calling __exit__ by hand
        raise RuntimeError(f"{_func_name(expr)}: with block closed out of order")


def _func_name(expr: Expr) -> str:
    return expr.func or type(expr).__name__


def evaluate(body: Body, *, file: str | None = None) -> RootExpr:
    """Evaluate a design given as a Python callable and validate it.

    This is the in-process entry point (tests, notebooks); ``agentgen`` loads design files
    through :mod:`agentgen.codegen.loader`, which ends in the same :func:`finish`.
    Raises :class:`DesignErrors` listing every problem.
    """
    origin = file or inspect.getsourcefile(body) or "<design>"
    with design_context(origin) as ctx:
        body()
        return finish(ctx)


def finish(ctx: EvalContext) -> RootExpr:
    """Run prepare → validate → finalize over the whole tree once all DSL code ran."""
    from agentgen.dsl.validate import finalize, prepare, validate

    if ctx.stack:  # pragma: no cover - a body raised; the exception is already propagating
        raise RuntimeError("design evaluation ended inside an open scope")
    prepare(ctx.root)
    errors = [*ctx.errors, *validate(ctx.root)]
    if errors:
        raise DesignErrors(errors, root=ctx.root)
    finalize(ctx.root)
    return ctx.root
