"""JSON Pointers (RFC 6901) into a parsed JSON document, and local ``$ref`` fragments that
carry them. Shared by the generator (which refuses a ``$ref`` that does not resolve) and the
runtime (which follows references when it compares or reads schemas, and when it reads a
schema's argument names for a search document), so that all of them read a reference exactly
as the runtime's validator does; it sits below both contracts and search so both can use it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["format_pointer", "resolve_pointer", "resolve_reference"]

#: An array index as RFC 6901 spells it: ASCII digits, no leading zero.
_INDEX = re.compile(r"0|[1-9][0-9]*", re.ASCII)


def format_pointer(parts: Iterable[str | int]) -> str:
    """The JSON pointer of a path (keys and indexes), escaped as RFC 6901 says: ``""`` for the
    document itself, ``/a~1b/0`` for ``["a/b", 0]``."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value ``pointer`` (``""`` or ``/a/0/b``) names in ``document``.

    Raises ``LookupError`` when it names nothing; nothing outside ``document`` is consulted.
    """
    if pointer and not pointer.startswith("/"):
        raise LookupError(f"JSON pointer {pointer!r} names nothing (it must start with '/')")
    node = document
    for token in pointer.split("/")[1:]:
        part = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and _INDEX.fullmatch(part) and int(part) < len(node):
            node = node[int(part)]
        else:
            raise LookupError(f"JSON pointer {pointer!r} names nothing (at {token!r})")
    return node


def resolve_reference(document: Any, ref: str) -> Any:
    """The value a local ``$ref`` (``#`` followed by a JSON pointer, as a URI fragment) names in
    ``document``. The fragment is percent-decoded first (``#/$defs/My%20Type`` names the key
    ``My Type``), as URI fragments are.

    Raises ``LookupError`` for a reference that is not local or names nothing.
    """
    if not ref.startswith("#"):
        raise LookupError(f"reference {ref!r} is not local (it must start with '#')")
    try:
        pointer = unquote(ref[1:], errors="strict")
    except UnicodeDecodeError:
        message = f"reference {ref!r} names nothing (its %-escapes are not UTF-8)"
        raise LookupError(message) from None
    return resolve_pointer(document, pointer)
