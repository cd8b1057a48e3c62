"""A DSL function called with arguments its signature does not take.

``FromRegistry(Company)``, ``Agent("a")``, ``Retry(3, backoff=1)``: Python refuses the call
before the DSL function runs, with a ``TypeError`` raised at the design's line, and the design
stops there. Shown as the design's own exception it read as a crash (a traceback, no caret, no
word on how to call the function); it is a design error at the call instead, saying how the
function is called. The design ran only up to that call, so no whole-tree rule runs on it (they
would report what the rest of the design declares as missing); the errors its earlier calls
reported come out with it.
"""

from __future__ import annotations

import inspect
import re
import sys
from types import TracebackType

from agentgen.dsl.arguments import argument_loc
from agentgen.dsl.errors import DesignError
from agentgen.dsl.location import SourceLoc, code_loc

__all__ = ["misused_call"]

#: How Python words a call its signature refuses: ``Name() missing 1 required positional
#: argument: 'x'``, ``got an unexpected keyword argument 'y'``, ``takes 1 positional argument
#: but 2 were given``, ``got multiple values for argument 'z'``.
_REFUSED = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)\(\) (?:missing \d+ required|got an unexpected keyword|"
    r"takes \d+|takes from \d+|got multiple values|got some positional-only)"
)

#: Calls whose positional arguments mean several things: their forms, as docs/dsl.md gives them.
_FORMS = {
    "Toolset": (
        "Toolset(name, body), Toolset(FromRegistry(registry, toolset)) or "
        "Toolset(name, FromExternalMCP(service, toolset), body)"
    ),
    "Tool": "Tool(name, description, body), or Tool(name) to select a tool in a Use",
}


def _call_form(name: str, function: object) -> str:
    """How ``function`` is called: ``Retry(max_retries, backoff_base=0.1, backoff_max=5.0)``;
    a trailing ``*args`` is the body."""
    if name in _FORMS:
        return _FORMS[name]
    assert callable(function)
    parts: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            parts.append("body" if parameter.name == "args" else f"*{parameter.name}")
        elif parameter.default is parameter.empty:
            parts.append(parameter.name)
        else:
            parts.append(f"{parameter.name}={parameter.default!r}")
    return f"{name}({', '.join(parts)})"


def _innermost(exc: BaseException) -> TracebackType | None:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def misused_call(exc: BaseException, where: str = "") -> DesignError | None:
    """``exc`` as a design error when it is Python refusing the arguments of a call of a DSL
    function made by the design (the innermost frame is the design's, calling it); else None."""
    if not isinstance(exc, TypeError):
        return None
    match = _REFUSED.match(str(exc))
    tb = _innermost(exc)
    if match is None or tb is None:
        return None
    name = match["name"]
    dsl = sys.modules.get("agentgen.dsl")
    function = getattr(dsl, name, None) if name in getattr(dsl, "__all__", ()) else None
    frame = tb.tb_frame
    # The name must be the DSL function where the design called it (not a function of its own
    # called the same).
    if function is None or not any(
        scope.get(name) is function for scope in (frame.f_locals, frame.f_globals)
    ):
        return None
    loc: SourceLoc = code_loc(frame.f_code, tb.tb_lasti, tb.tb_lineno)
    keyword = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
    if keyword is not None:  # the caret goes under the keyword it does not take
        loc = argument_loc(loc, None, keyword[1])
    return DesignError(
        loc,
        where,
        f"{exc}; call it as {_call_form(name, function)}. The design stopped at this call: "
        "fix it to have the rest of the design checked",
    )
