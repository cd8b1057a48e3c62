"""The scope stack of one design evaluation, and the errors DSL calls report into it.

A context exists per load (held in a ``ContextVar``), never per process: two designs loaded one
after the other, or the same design loaded twice, build independent trees.

DSL functions run eagerly. A body, given as a trailing callable or as a ``with`` block, runs
with its expression pushed on the stack; DSL calls inside it look at the top of the stack to
know where they are. Errors found while the DSL runs are collected, not raised, so that one run
reports all of them together with the ones the whole-tree checks find afterwards.

This module knows nothing of the expression kinds: anything with a location, a body slot and
a ``where()`` path can be a scope. That keeps the expression tree (whose ``with`` support calls
in here) and the evaluation (which builds the tree) free of import cycles.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import FunctionType
from typing import Any, Generic, Protocol, TypeVar

from agentgen.dsl.arguments import forget_calls
from agentgen.dsl.errors import DesignError
from agentgen.dsl.location import SourceLoc, caller_loc, forget_positions

__all__ = [
    "EvalContext",
    "NoDesignContextError",
    "ScopeNode",
    "activate",
    "current_context",
    "current_evaluation",
    "enter_with_body",
    "exit_with_body",
    "run_body",
]


class ScopeNode(Protocol):
    """What the stack needs of an expression that opens a scope."""

    loc: SourceLoc
    body_loc: SourceLoc | None
    body_rejected: bool

    @property
    def func(self) -> str: ...

    def where(self) -> str: ...


RootT = TypeVar("RootT")
NodeT = TypeVar("NodeT", bound=ScopeNode)


#: Numbers the evaluations of this process.
_SERIALS = itertools.count(1)


@dataclass
class EvalContext(Generic[RootT, NodeT]):
    root: RootT
    stack: list[NodeT] = field(default_factory=list)
    errors: list[DesignError] = field(default_factory=list)
    #: The source files that made DSL calls: the modules a loader must unload afterwards, so
    #: that the next load runs their calls again (an expression belongs to one tree).
    callers: set[str] = field(default_factory=set)
    #: Numbers evaluations: every expression records the one it was made in.
    serial: int = field(default_factory=lambda: next(_SERIALS))

    def current(self) -> NodeT | None:
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


def current_evaluation() -> int:
    """The serial number of the evaluation running now (0 outside one): what an expression
    records of the tree it belongs to."""
    ctx = _CURRENT.get()
    return ctx.serial if ctx is not None else 0


_CURRENT: ContextVar[EvalContext[Any, Any] | None] = ContextVar(
    "agentgen_eval_context", default=None
)


class NoDesignContextError(RuntimeError):
    """A DSL function was called while no design was being evaluated."""


def current_context() -> EvalContext[Any, Any]:
    ctx = _CURRENT.get()
    if ctx is None:
        raise NoDesignContextError(
            "agentgen DSL functions only work while a design is evaluated: run "
            "`agentgen validate design.py`, or call agentgen.dsl.evaluate(body) in Python"
        )
    return ctx


@contextmanager
def activate(ctx: EvalContext[Any, Any]) -> Iterator[None]:
    """Make ``ctx`` the current context for the duration of one load."""
    token = _CURRENT.set(ctx)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        forget_positions()
        forget_calls()


def run_body(ctx: EvalContext[Any, Any], node: ScopeNode, body: object, func: str) -> None:
    """Run a trailing-callable body with ``node`` on top of the stack."""
    loc = node.loc
    if not callable(body):
        ctx.report(
            loc, f"{func} body must be a callable taking no arguments, got {type(body).__name__}"
        )
        node.body_rejected = True
        return
    if not _callable_without_arguments(body):
        ctx.report(
            loc,
            f"{func} body must be callable with no arguments, got {_shown_callable(body)}: "
            "nothing passes a body arguments; drop its parameters (lambda: ...), or call the "
            "function with its arguments inside a body that takes none",
        )
        node.body_rejected = True
        return
    node.body_loc = loc
    ctx.stack.append(node)
    try:
        body()
    finally:
        popped = ctx.stack.pop()
        assert popped is node, "DSL scope stack out of balance"


def _shown_callable(fn: Callable[..., object]) -> str:
    """``a function taking (x)``, or what ``fn`` is when its signature cannot be read."""
    try:
        return f"a function taking {inspect.signature(fn)}"
    except (TypeError, ValueError):
        return type(fn).__name__


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


def enter_with_body(node: ScopeNode) -> None:
    """``with Agent(...):``: the indented block becomes the body of ``node``."""
    ctx = current_context()
    loc = caller_loc()
    if node.body_loc is not None:
        ctx.report(
            loc,
            f"{_func_name(node)} accepts at most one body: it already has one "
            f"(line {node.body_loc.line}); use either a trailing callable or a with block",
            where=node.where(),
        )
    node.body_loc = loc
    # A body runs after all (an argument refused as a possible body was not one): the rules
    # about an empty body apply again.
    node.body_rejected = False
    ctx.stack.append(node)


def exit_with_body(node: ScopeNode) -> None:
    ctx = current_context()
    if ctx.stack and ctx.stack[-1] is node:
        ctx.stack.pop()
    else:  # pragma: no cover - only reachable by calling __exit__ by hand
        raise RuntimeError(f"{_func_name(node)}: with block closed out of order")


def _func_name(node: ScopeNode) -> str:
    return node.func or type(node).__name__
