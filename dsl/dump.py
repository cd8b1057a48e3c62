"""A plain-data view of a design tree, without source locations.

Two designs that declare the same things (one with callables, one with ``with`` blocks, or the
same file loaded twice) dump to equal values; references to other expressions (the toolset a
``Use`` consumes, a source's registry) appear as their names, so the view has no cycles.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentgen.dsl.expr import RegistryExpr, RootExpr, ToolsetExpr
from agentgen.dsl.location import SourceLoc

_SKIPPED = frozenset(
    {"loc", "parent", "body_loc", "body_rejected", "refused", "rejected_names", "evaluation"}
    | {"rejected_decls"}
)
# Fields holding references to expressions declared (and dumped) elsewhere.
_REFERENCES = frozenset({"target", "registry", "toolset"})


def dump(root: RootExpr) -> dict[str, Any]:
    return {
        "registries": [_value(r) for r in root.registries],
        "toolsets": [_value(t) for t in root.toolsets],
        "services": [_value(s) for s in root.services],
    }


def _ref(value: object) -> object:
    if isinstance(value, ToolsetExpr | RegistryExpr):
        return value.eval_name()
    return _value(value)


def _value(value: object) -> Any:
    if isinstance(value, SourceLoc):
        return None
    if isinstance(value, type):
        # The module of a design's classes is named per load; the class is what it declares.
        schema = getattr(value, "model_json_schema", None)
        return {"class": value.__qualname__, "schema": schema() if schema else None}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"_": type(value).__name__}
        for field in dataclasses.fields(value):
            if field.name in _SKIPPED or field.name.endswith("_loc"):
                continue
            item = getattr(value, field.name)
            if field.name in _REFERENCES:
                out[field.name] = _ref(item)
            elif field.name == "publish_to":
                out[field.name] = [_ref(registry) for registry, _ in item]
            else:
                out[field.name] = _value(item)
        return out
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    return value
