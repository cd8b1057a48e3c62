"""What every DSL function does first: find the context, record the caller's line, check the
scope, and sort its positional arguments into values and an optional trailing body."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, overload

from agentgen.dsl.arguments import argument_loc
from agentgen.dsl.eval import EvalContext, context, run_body
from agentgen.dsl.expr import Expr
from agentgen.dsl.location import SourceLoc, caller_loc
from agentgen.dsl.names import lone_surrogate, name_problem, q

E = TypeVar("E", bound=Expr)
A = TypeVar("A", bound=Expr)
B = TypeVar("B", bound=Expr)
C = TypeVar("C", bound=Expr)
D = TypeVar("D", bound=Expr)


class Invalid:
    """Returned by value constructors (``FromRegistry``...) whose arguments were rejected.

    The error is already reported; consumers of the value skip it silently so that one mistake
    does not cascade into several messages.
    """

    def __repr__(self) -> str:
        return "<invalid>"


INVALID = Invalid()


def describe_scope(expr: Expr | None) -> str:
    return "at the top level of the design" if expr is None else f"inside {expr.eval_name()}"


#: One argument of a DSL call: its 0-based position, and its name when it may be passed as a
#: keyword (``(1, "backoff_base")``); see :meth:`Call.arg_loc`.
Arg = tuple[int | None, str | None]


@dataclass
class Call:
    """One DSL call in progress."""

    ctx: EvalContext
    loc: SourceLoc
    func: str

    @property
    def scope(self) -> Expr | None:
        return self.ctx.current()

    def error(
        self, message: str, *, arg: Arg | None = None, related: tuple[SourceLoc, ...] = ()
    ) -> None:
        """Report ``message`` at the call, or at the argument ``arg`` it is about."""
        self.ctx.report(self.arg_loc(arg), message, related=related)

    def arg_loc(self, arg: Arg | None) -> SourceLoc:
        """Where the argument ``arg`` (its 0-based position, and its name if it may be given
        as a keyword) is written; the whole call for None, or when that cannot be told. An
        error about one argument carets that argument, on its own line when the call spans
        several. Found only when an error is reported: the file is parsed then."""
        return self.loc if arg is None else argument_loc(self.loc, *arg)

    def scope_error(self, belongs: str) -> None:
        self.error(f"{self.func} is not valid {describe_scope(self.scope)}; it belongs {belongs}")

    @overload
    def expect(self, kinds: tuple[type[A]], belongs: str) -> A | None: ...
    @overload
    def expect(self, kinds: tuple[type[A], type[B]], belongs: str) -> A | B | None: ...
    @overload
    def expect(self, kinds: tuple[type[A], type[B], type[C]], belongs: str) -> A | B | C | None: ...
    @overload
    def expect(
        self, kinds: tuple[type[A], type[B], type[C], type[D]], belongs: str
    ) -> A | B | C | D | None: ...
    def expect(self, kinds: tuple[type[Expr], ...], belongs: str) -> Expr | None:
        """The current scope if it is one of ``kinds``; otherwise report a scope error."""
        scope = self.scope
        if isinstance(scope, kinds):
            return scope
        self.scope_error(belongs)
        return None

    def at_top_level(self, belongs: str = "at the top level of the design") -> bool:
        if self.scope is None:
            return True
        self.scope_error(belongs)
        return False

    def name(
        self, kind: str, value: object, *, mcp_tool: bool = False, arg: Arg | None = None
    ) -> str | None:
        problem = name_problem(kind, value, mcp_tool=mcp_tool)
        if problem is not None:
            self.error(problem, arg=arg)
            return None
        assert isinstance(value, str)
        return value

    def text(
        self,
        what: str,
        value: object,
        *,
        allow_empty: bool = False,
        arg: Arg | None = None,
        spread: bool = False,
    ) -> str | None:
        """``value`` when it is a usable text, else None (reported). ``spread``: the call takes
        its texts as separate arguments (``Tags("a", "b")``), so a list says so."""
        if not isinstance(value, str):
            hint = (
                f"; pass each {what} as an argument of its own: "
                f"{self.func}({', '.join(map(q, value))})"
                if spread
                and isinstance(value, list | tuple)
                and value
                and all(isinstance(v, str) for v in value)
                else ""
            )
            self.error(
                f"{self.func} {what} must be a string, got {type(value).__name__}{hint}", arg=arg
            )
            return None
        if not allow_empty and not value.strip():
            self.error(f"{self.func} {what} cannot be empty", arg=arg)
            return None
        surrogate = lone_surrogate(value)
        if surrogate is not None:
            self.error(f"{self.func} {what} contains {surrogate}; remove it", arg=arg)
            return None
        return value

    def repeat_of(self, owner: Expr) -> SourceLoc | None:
        """Where this function was first called on ``owner``, or None when this is the first
        call (then recorded, whatever its arguments). A setting's repeat is one whether or not
        the first was refused: checked before the value, it is reported in the same run,
        rather than the second being taken silently and the repeat surfacing once the first
        is fixed."""
        first = owner.given_at.get(self.func)
        if first is None:
            owner.given_at[self.func] = self.loc
        return first

    def repeated(self, owner: Expr | None, what: str) -> bool:
        """Whether this call repeats a single-value setting of ``owner`` (:meth:`repeat_of`);
        a repeat is reported naming ``what`` it is set for, the first's line, and what to do:
        one message for every such setting (tools', confirmations', paging's, policies')."""
        if owner is None:
            return False
        first = self.repeat_of(owner)
        if first is None:
            return False
        self.error(
            f"{self.func} is already set for {what} (line {first.line}); keep one",
            related=(first,),
        )
        return True

    def attach_once(self, owner: Expr | None, attr: str, expr: Expr) -> None:
        """Set ``owner.<attr>`` to ``expr`` unless it is set already (then say where)."""
        if owner is None:
            return
        previous = getattr(owner, attr)
        if previous is not None:
            self.error(f"{owner.eval_name()} already has a {self.func} (line {previous.loc.line})")
        else:
            setattr(owner, attr, expr)

    def add_unique(self, owner: Expr, items: list[str], values: tuple[str, ...], what: str) -> None:
        """Append each non-empty string of ``values`` to ``items``, reporting repeats."""
        if not values:
            self.error(f"{self.func} needs at least one {what}")
        for position, value in enumerate(values):
            text = self.text(what, value, arg=(position, None), spread=True)
            if text is None:
                continue
            if text in items:
                self.error(
                    f"{what} {q(text)} is repeated on {owner.eval_name()}; give each once",
                    arg=(position, None),
                )
                continue
            items.append(text)

    def split_body(self, args: tuple[object, ...]) -> tuple[list[object], object | None]:
        """Separate the optional trailing body from the other positional arguments.

        The body is the last argument when it is callable; any other callable argument means
        more than one body was given.
        """
        values = list(args)
        body: object | None = None
        if values and callable(values[-1]) and not isinstance(values[-1], Expr):
            body = values.pop()
        extra_bodies = [v for v in values if callable(v) and not isinstance(v, Expr)]
        if extra_bodies:
            self.error(f"{self.func} accepts at most one body (a trailing callable)")
            values = [v for v in values if v not in extra_bodies]
        return values, body

    def too_many(self, values: list[object], expected: str, first: int) -> None:
        """Report ``values``, the arguments beyond ``expected``, at the first of them
        (``first``: its position among the call's arguments)."""
        hint = next((h for h in map(self.called_body_hint, values) if h), "")
        self.error(
            f"{self.func} takes {expected}; got {len(values)} extra argument(s){hint}",
            arg=(first, None),
        )

    def called_body_hint(self, value: object) -> str:
        """What to do when ``value`` is what a body returned rather than the body: the DSL
        call in it already ran, outside this scope (``Use(Records, Deferred("search"))``)."""
        if isinstance(value, Expr) and value.func:
            return (
                f": the result of {value.func}(...), which ran before {self.func} did; pass a "
                f"body for {self.func} to run: lambda: {value.func}(...)"
            )
        if value is None:
            return (
                f": None, what a call returned before {self.func} ran; pass a body for "
                f"{self.func} to run: a lambda, or a function itself (body, not body())"
            )
        return ""


def begin(func: str) -> Call:
    ctx = context()
    loc = caller_loc()
    ctx.callers.add(loc.file)
    return Call(ctx, loc, func)


def open_scope(call: Call, expr: E, body: object | None) -> E:
    """Run ``body`` (if any) with ``expr`` as the current scope and return ``expr``.

    Without a body the caller may still use ``expr`` in a ``with`` block.
    """
    if body is not None:
        run_body(call.ctx, expr, body, call.func)
    return expr


Body = Callable[[], object]
