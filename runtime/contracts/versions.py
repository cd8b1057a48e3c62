"""The one rule a toolset's version follows, published or pinned.

A provider publishes a toolset's version (``serve(version=...)``, the registry's registration),
and a consumer pins it (the DSL's ``Version(...)``, checked at generation): the two must agree,
or a provider publishes a version no consumer can pin (``" 1.0 "``: every pin of it is refused)
and a consumer pins one no provider can publish (every run fails ``VersionMismatchError``). The
provider SDK, the registry and the generator's check of pins all ask :func:`version_problem`.
(The DSL, which imports nothing of the runtime, refuses the surrounding spaces itself, where
the pin is written; the generator then applies this rule whole.)
"""

from __future__ import annotations

from pydantic import TypeAdapter, ValidationError

from agentgen.runtime.contracts.declarations import Line
from agentgen.runtime.contracts.limits import MAX_TEXT_CHARS

__all__ = ["VERSION_RULE", "version_problem"]

#: What a version is, for messages.
VERSION_RULE = (
    f"a non-empty single line of at most {MAX_TEXT_CHARS} characters without surrounding "
    "spaces or control or format characters"
)

_LINE: TypeAdapter[str] = TypeAdapter(Line)


def version_problem(version: object) -> str | None:
    """Why ``version`` can be neither published nor pinned (see :data:`VERSION_RULE`), or
    None when it can be both."""
    if not isinstance(version, str):
        return f"a version is a string, not {type(version).__name__}"
    if not version.strip():
        return "it is empty"
    if version != version.strip():
        return "it has surrounding spaces"
    try:
        _LINE.validate_python(version)
    except ValidationError as exc:
        return "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
    return None
