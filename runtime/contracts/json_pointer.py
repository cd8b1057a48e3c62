"""JSON Pointers (RFC 6901) into a parsed JSON document: the part of a local ``$ref`` after
``#``. Shared by the generator (which refuses a ``$ref`` that does not resolve) and the
runtime (which follows references when it compares two schemas)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["resolve_pointer"]


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value ``pointer`` (``""`` or ``/a/0/b``) names in ``document``.

    Raises ``LookupError`` when it names nothing; nothing outside ``document`` is consulted.
    """
    node = document
    for token in pointer.split("/")[1:]:
        part = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise LookupError(f"JSON pointer {pointer!r} names nothing (at {token!r})")
    return node
