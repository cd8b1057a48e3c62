"""What the registry keeps of a catalog entry between requests: its admission, and its
declaration as JSON text.

Every call reads its toolset's entry, so the registry keeps the entries it read or wrote
parsed. A parsed declaration of 2,000 tools is about 160,000 objects (lists, dicts, pydantic
models) that CPython's cyclic garbage collector walks at every full collection, holding the
interpreter lock: with a few large toolsets kept, each collection stalled the service's event
loop, and every request on it, for 0.3 to 0.7 s. Nothing the registry does per request reads a
declaration's tools: a call is checked against the toolset's compiled specs (cached by
fingerprint), a resolve sends the declaration's text, a listing or search reads its name,
description and tags. So a kept entry holds those and the text (a ``str``, which the collector
never tracks), and the declaration is parsed from its text only when asked for
(:attr:`KeptEntry.toolset`), through a cache of a few.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pydantic import PrivateAttr

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.lru import LRU
from agentgen.runtime.registry.admission import Admission, CatalogEntry

__all__ = ["PARSED_KEPT", "KeptDeclaration", "KeptEntry", "keep", "parsed"]

#: How many declarations stay parsed (by their text): a declaration is parsed only to compile
#: it again (its specs left the registry's cache) or for a caller that asks for it whole.
PARSED_KEPT = 2
_PARSED: LRU[str, ToolsetDeclaration] = LRU(PARSED_KEPT)
#: The registry's caches are shared by the threads of the process (each LocalRegistry serves on
#: a thread of its own; worker threads parse large bodies): parsing happens outside the lock.
_LOCK = threading.Lock()


def parsed(text: str) -> ToolsetDeclaration:
    """The declaration whose JSON text (``model_dump_json()``) is ``text``: equal to the one
    that text was made from. Shared: never change it."""
    with _LOCK:
        toolset = _PARSED.get(text)
    if toolset is None:
        made = ToolsetDeclaration.model_validate_json(text)
        with _LOCK:
            toolset = _PARSED.put(text, made)
    return toolset


@dataclass(frozen=True, slots=True, eq=True)
class KeptDeclaration:
    """A declaration as the registry keeps it: what listings and searches read, and its text."""

    name: str
    description: str | None
    tags: tuple[str, ...]
    #: Exactly ``toolset.model_dump_json()``: the resolve answer and the stored entry hold it.
    text: str

    @classmethod
    def of(cls, toolset: ToolsetDeclaration, text: str) -> KeptDeclaration:
        return cls(toolset.name, toolset.description, tuple(toolset.tags), text)


class KeptEntry(Admission):
    """A catalog entry as the registry keeps it: the admission (which the admission rules read
    and copy, carrying the declaration along) and its :class:`KeptDeclaration`."""

    _declaration: KeptDeclaration = PrivateAttr()

    @classmethod
    def of(cls, admission: Admission, declaration: KeptDeclaration) -> KeptEntry:
        kept = cls.model_construct(admission.model_fields_set, **_fields(admission))
        kept._declaration = declaration
        return kept

    @property
    def declaration(self) -> KeptDeclaration:
        return self._declaration

    @property
    def toolset(self) -> ToolsetDeclaration:
        """The declaration, parsed from its text (the last few stay parsed). Shared: never
        change it."""
        return parsed(self._declaration.text)

    def entry(self) -> CatalogEntry:
        """The whole entry, as parsing its stored form gives it."""
        return CatalogEntry.model_construct(
            self.model_fields_set | {"toolset"}, toolset=self.toolset, **_fields(self)
        )

    def stored(self) -> str:
        """Exactly ``self.entry().model_dump_json()``, without parsing the declaration: the
        declaration is the entry's last field."""
        head = self.model_dump_json()
        return f'{head[:-1]},"toolset":{self._declaration.text}}}'


def _fields(admission: Admission) -> dict[str, Any]:
    return {name: getattr(admission, name) for name in Admission.model_fields}


def keep(entry: CatalogEntry, text: str | None = None) -> KeptEntry:
    """``entry`` as the registry keeps it; ``text`` is its declaration's JSON text if made
    already. The declaration just parsed stays parsed, as the most recently used."""
    made = entry.toolset.model_dump_json() if text is None else text
    with _LOCK:
        _PARSED.put(made, entry.toolset)
    return KeptEntry.of(entry, KeptDeclaration.of(entry.toolset, made))
