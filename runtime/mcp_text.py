"""Reading the text of an MCP tool result as the JSON value its declared ``Return`` describes.

Text carries no type: ``"2024"`` may be the string a ``-> str`` tool meant or a number,
``'["a","b"]'`` a whole list or the one item of a list rendered one block per item. Only the
tool's declared result schema can say which, so :func:`read_texts` reads the blocks by it; the
runtime then validates the value against that same schema, so a reading that guessed wrong
still cannot pass unchecked. Where two readings both fit the schema, the rules below pick one,
stated in :func:`read_texts` and in ``docs/runtime.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from agentgen.runtime.contracts.canonical import compact_json
from agentgen.runtime.contracts.codecs import (
    NestingError,
    SchemaCodec,
    decode_nested,
    encode_exact,
)
from agentgen.runtime.contracts.limits import MAX_MCP_TEXT_DEPTH
from agentgen.runtime.json_pointer import resolve_reference

__all__ = ["read_texts"]

Schema = Mapping[str, Any]

#: ``$ref`` hops followed to find what a schema declares (a cycle of references has no shape).
_MAX_HOPS = 16


def read_texts(texts: Sequence[str], schema: Schema | None) -> Any:
    """The JSON value of a result's text blocks, read by the declared result ``schema``.

    * A string result is the text of the one block, as it is (``"2024"``, ``"true"``).
    * An array result: several blocks are one item each, each read by the declared item type
      (the SDK's own ``MCPServer`` renders an unstructured list one block per item), no block
      is the empty array. One block whose text is a JSON array that is valid against the
      declared array type is that array (most servers serialize a whole result into one
      block); otherwise the one block is a one-item array, unless that is not valid either
      (the array then stays whole, so the result check names its items at fault).
    * A union (``anyOf``/``oneOf``, a list of ``type`` names), beside ``null``, is read by each
      alternative in turn; the one value that is valid against its alternative is the reading.
      Only one alternative beside ``null``: read by it, as though it stood alone.
    * Local references (``#/$defs/...``) are followed to what they declare.
    * Anything else, or a union where no reading or several different readings fit: no block
      is ``null``, one block its JSON value when the text is JSON (servers that predate
      structured output serialize results into text) else the text itself, several blocks the
      list of their values.

    Text holding JSON nested deeper than
    :data:`~agentgen.runtime.contracts.limits.MAX_MCP_TEXT_DEPTH` levels, wherever it is read
    as JSON, raises :class:`~agentgen.runtime.contracts.codecs.NestingError`.

    One block for a list of strings is ambiguous when its text is itself a JSON array of
    strings: ``'["a","b"]'`` is the whole list ``["a", "b"]`` or the one item ``'["a","b"]'``.
    It reads as the whole list. Servers that serialize a whole result into one text block are
    the common case (the TypeScript SDK's examples, most hand-written servers); a one-item
    list whose item is JSON array text is rare, and a reading as one item would turn every
    such ordinary server's answer into one string that still passes a ``list[str]`` check,
    unseen. A server that must send such items sends structured content, or the items as
    several blocks.
    """
    return _Reader(schema).texts(texts, schema)


class _Reader:
    """Readings of one result by one declared schema, with the schema's validator built only
    when a choice between readings needs it (cached per schema across calls)."""

    def __init__(self, root: Schema | None) -> None:
        self._root = root
        self._codec: SchemaCodec | None = None

    def texts(self, texts: Sequence[str], schema: Schema | None) -> Any:
        schema = self._resolve(schema)
        alternatives = self._alternatives(schema)
        if alternatives is not None:
            return self._choose(
                alternatives, lambda alt: self.texts(texts, alt), lambda: self._plain(texts)
            )
        if _shape(schema) == "array":
            assert schema is not None
            items = schema.get("items")
            item = items if isinstance(items, Mapping) else None
            each = [self.text(text, item) for text in texts]
            whole = _json(texts[0]) if len(texts) == 1 else None
            if isinstance(whole, list) and (
                self._admits(whole, schema) or not self._admits(each, schema)
            ):
                # Neither fits: the server sent a JSON array for an array, and the result
                # check names the items at fault rather than a one-item list of a list.
                return whole
            return each
        if not texts:
            return None
        if len(texts) == 1:
            return self.text(texts[0], schema)
        return [self.text(text, None) for text in texts]

    def text(self, text: str, schema: Schema | None) -> Any:
        """One block as one value of type ``schema``."""
        schema = self._resolve(schema)
        alternatives = self._alternatives(schema)
        if alternatives is not None:
            return self._choose(
                alternatives, lambda alt: self.text(text, alt), lambda: _json_or_text(text)
            )
        if _shape(schema) == "string":
            return text
        return _json_or_text(text)

    def _plain(self, texts: Sequence[str]) -> Any:
        if not texts:
            return None
        if len(texts) == 1:
            return _json_or_text(texts[0])
        return [_json_or_text(text) for text in texts]

    def _choose(
        self,
        alternatives: Sequence[Schema],
        read: Callable[[Schema], Any],
        plain: Callable[[], Any],
    ) -> Any:
        if len(alternatives) == 1:
            return read(alternatives[0])
        fitting: dict[str, Any] = {}
        for alternative in alternatives:
            value = read(alternative)
            if self._admits(value, alternative):
                fitting.setdefault(encode_exact(value), value)
        if len(fitting) == 1:
            return next(iter(fitting.values()))
        return plain()

    def _alternatives(self, schema: Schema | None) -> list[Schema] | None:
        """The non-null alternatives of a union schema (resolved), or None for no union."""
        if schema is None:
            return None
        declared = schema.get("type")
        if isinstance(declared, list):
            kinds = [kind for kind in declared if kind != "null"]
            if len(kinds) < 2:
                return None  # ``[X, "null"]`` reads as X: the shape rules below
            return [{**schema, "type": kind} for kind in kinds]
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list) and branches and "type" not in schema:
                resolved = [self._resolve(b) if isinstance(b, Mapping) else None for b in branches]
                if any(branch is None for branch in resolved):
                    return None
                found = [b for b in resolved if b is not None and not _is_null(b)]
                return found or None
        return None

    def _resolve(self, schema: Schema | None) -> Schema | None:
        """What ``schema`` declares, following local references (None for one that cannot be
        followed: another document, an anchor, a cycle)."""
        for _ in range(_MAX_HOPS):
            if schema is None:
                return None
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                return schema
            if not ref.startswith("#") or self._root is None:
                return None
            try:
                target = resolve_reference(self._root, ref)
            except LookupError:
                return None
            schema = target if isinstance(target, Mapping) else None
        return None

    def _admits(self, value: Any, part: Schema) -> bool:
        if self._root is None:
            return False
        if self._codec is None:
            self._codec = _codec(compact_json(_plain_dict(self._root)))
        return self._codec.admits(value, part)


@functools.lru_cache(maxsize=256)
def _codec(schema_json: str) -> SchemaCodec:
    from json import loads

    return SchemaCodec(loads(schema_json), "MCP tool result")


def _plain_dict(value: Any) -> Any:
    """The schema as plain JSON values (the executor hands it in read-only mappings)."""
    if isinstance(value, Mapping):
        return {key: _plain_dict(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_dict(item) for item in value]
    return value


def _is_null(schema: Schema) -> bool:
    return schema.get("type") == "null" or schema.get("const", ...) is None


def _json(text: str) -> Any:
    """The JSON value of ``text`` (``_NOT_JSON`` for text that is not JSON). Text holding JSON
    nested deeper than :data:`~agentgen.runtime.contracts.limits.MAX_MCP_TEXT_DEPTH` raises
    :class:`~agentgen.runtime.contracts.codecs.NestingError`: read as text it would pass a
    JSON value for a string unseen, and read as JSON it would exhaust the recursion limit of
    whatever reads it next."""
    try:
        return decode_nested(text, MAX_MCP_TEXT_DEPTH)
    except NestingError:
        raise
    except ValueError:
        return _NOT_JSON


_NOT_JSON = object()


def _json_or_text(text: str) -> Any:
    # Exact numbers, as the runtime's own codecs parse JSON (``1.10`` stays ``1.10``).
    value = _json(text)
    return text if value is _NOT_JSON else value


def _shape(schema: Schema | None) -> Literal["string", "array"] | None:
    """``string`` or ``array`` when ``schema`` (read at its top level) admits, beside ``null``,
    only strings or only arrays; else None."""
    if schema is None:
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        declared = [declared]
    if isinstance(declared, list):
        kinds = {kind for kind in declared if kind != "null"}
        if kinds == {"string"}:
            return "string"
        return "array" if kinds == {"array"} else None
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return "string"
    return None
