"""``Deferred``: which tools of a consumed source reach the model only through tool search.

The selection belongs to the consuming ``Use`` (never to a shared ``Toolset`` or an ``Export``)
and changes when definitions are loaded, never what is permitted. The rules are checked in
call order, like the original: a call that breaks one records nothing.
"""

from __future__ import annotations

from agentgen.dsl.call import begin
from agentgen.dsl.expr import (
    DeferredExpr,
    ExportExpr,
    RegistryExpr,
    ServiceExpr,
    ToolsetExpr,
    UseExpr,
)
from agentgen.dsl.names import q


def Deferred(*names: str) -> None:
    """Load this consumer's tools on demand: all of them (no names) or the named local tools.

    ``Use(Records, Deferred)`` and ``Use(Records, lambda: Deferred())`` both defer everything.
    """
    call = begin("Deferred")
    scope = call.scope
    if isinstance(scope, ToolsetExpr):
        call.error(
            "Deferred must appear inside a consuming Use(...) body: the selection belongs to "
            f"the consumer, not to the definition of {scope.eval_name()}"
        )
        return
    if isinstance(scope, ExportExpr):
        owner = "a service Export" if isinstance(scope.parent, ServiceExpr) else "an agent Export"
        call.error(
            "Deferred must appear inside a consuming Use(...) body: the selection belongs to "
            f"the consumer, not to {owner}"
        )
        return
    use = call.expect((UseExpr,), "inside a consuming Use(...) body")
    if use is None or use.target is None:
        return
    target = use.target
    if names and isinstance(target, RegistryExpr):
        call.error(
            "Deferred cannot select named tools from a whole registry (its tools are resolved "
            "at run time); use Deferred()"
        )
        return
    if names and isinstance(target, ToolsetExpr) and target.is_registry:
        call.error(
            f"Deferred cannot select named tools from FromRegistry toolset {q(target.name)} "
            "(its tools are resolved at run time); use Deferred()"
        )
        return
    if not names:
        named = use.deferred_names
        if named:
            call.error(
                "Deferred() (every tool) cannot be combined with named Deferred(...) in the "
                f"same Use (named selection at line {named[0][1].line})"
            )
            return
        use.deferred.append(DeferredExpr(call.loc, ()))
        return
    if use.defers_all:
        first = next(d for d in use.deferred if not d.names)
        call.error(
            "Deferred(...) with names cannot be combined with Deferred() (every tool) in the "
            f"same Use (Deferred() at line {first.loc.line})"
        )
        return
    seen = {name: loc for name, loc in use.deferred_names}
    accepted: list[str] = []
    ok = True
    given: tuple[object, ...] = names  # a design may pass anything; say what was wrong
    for position, name in enumerate(given):
        arg = (position, None)
        if not isinstance(name, str):
            hint = (
                f"; pass each name as an argument of its own: Deferred({', '.join(map(q, name))})"
                if isinstance(name, list | tuple) and name and all(isinstance(n, str) for n in name)
                else ""
            )
            call.error(
                f"Deferred tool names must be strings, got {type(name).__name__}{hint}", arg=arg
            )
            ok = False
        elif not name:
            call.error("Deferred tool name cannot be empty", arg=arg)
            ok = False
        elif name in seen:
            call.error(
                f"Deferred tool name {q(name)} is repeated (first selected at line "
                f"{seen[name].line})",
                arg=arg,
                related=(seen[name],),
            )
            ok = False
        elif name in accepted:
            call.error(f"Deferred tool name {q(name)} is repeated in the same call", arg=arg)
            ok = False
        else:
            accepted.append(name)
    if ok:
        use.deferred.append(DeferredExpr(call.loc, tuple(accepted)))


__all__ = ["Deferred"]
