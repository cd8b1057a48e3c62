"""Verdicts on registry tools' JSON Schemas, remembered by the schemas' text.

Compiling a registry tool checks each of its schemas against the 2020-12 meta-schema and walks
it for references, reference cycles and patterns (see
:func:`~agentgen.runtime.contracts.compiler.compile`): most of what a cold catalog costs per
tool. The verdict is a function of the schema's JSON value, and a schema made of JSON's own
types only (:attr:`~agentgen.runtime.contracts.schema_inspection.Bounds.plain`) is exactly the
value its compact JSON text spells. Registries repeat schemas across tools (a shared page type,
an empty payload, one model behind several tools), so each verdict is kept under the SHA-256 of
that text: a schema that differs in any byte is another key, and is checked afresh. Schemas of
other types (tuples, subclasses, models) are always checked, never remembered.

The store is bounded (least recently used verdicts go first) and shared by threads; a verdict
is a few dozen bytes whatever the schema's size.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from agentgen.runtime.lru import LRU

__all__ = ["DEFAULT_MAX_VERDICTS", "SchemaVerdicts", "default_verdicts"]

#: Schema verdicts a store keeps (about 150 bytes each).
DEFAULT_MAX_VERDICTS = 1024


class SchemaVerdicts:
    """Verdicts on schemas by the SHA-256 of their compact JSON text, bounded, thread-safe."""

    def __init__(self, size: int = DEFAULT_MAX_VERDICTS) -> None:
        self._lock = threading.Lock()
        self._verdicts: LRU[bytes, str] = LRU(size)
        #: Schemas checked (no verdict was kept, or it could not be; also counts concurrent
        #: repeats).
        self.checks = 0
        #: Schemas whose kept verdict was served.
        self.hits = 0

    def __len__(self) -> int:
        return len(self._verdicts.entries)

    def clear(self) -> None:
        with self._lock:
            self._verdicts.entries.clear()

    def verdict(self, schema: Any, text: bytes, check: Callable[[Any], str], *, plain: bool) -> str:
        """``check(schema)``: the refusal's message, or ``""`` when the schema is valid.

        ``text`` is the schema's compact JSON (UTF-8); ``plain`` says the schema is made of
        JSON's own types only, so that the text stands for it and the verdict may be kept.
        Whatever ``check`` raises is raised, and nothing is kept.
        """
        if not plain:
            with self._lock:
                self.checks += 1
            return check(schema)
        key = hashlib.sha256(text).digest()
        with self._lock:
            found = self._verdicts.get(key)
            if found is not None:
                self.hits += 1
                return found
        verdict = check(schema)
        with self._lock:
            self.checks += 1
            return self._verdicts.put(key, verdict)


_default = SchemaVerdicts()


def default_verdicts() -> SchemaVerdicts:
    """The process-wide store :func:`~agentgen.runtime.contracts.compiler.compile` uses."""
    return _default
