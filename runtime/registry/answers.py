"""Resolve answers as a registry client keeps them: as the text they came in.

A client keeps the last ``/toolsets/resolve`` answer of each toolset (to name its digest in a
batch resolve, and hand it out again when the registry says it is unchanged). It reads only
the answer's registration token and the toolset's own fields when the answer arrives; the tools
stay text (:class:`~agentgen.runtime.contracts.toolset_text.ToolsetText`) until a planning
catalog compiles them, one toolset at a time.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict

from agentgen.runtime.contracts.toolset_text import ToolsetText
from agentgen.runtime.registry import api
from agentgen.runtime.registry.client import ResolvedToolset

__all__ = ["kept_answer"]


class _Toolset(BaseModel):
    """A toolset's own fields (its tools are skipped, not parsed into objects); they are
    checked as the declaration's when the catalog reads them, and again against the parsed
    declaration when it is compiled."""

    model_config = ConfigDict(extra="ignore")

    name: str
    description: str | None = None
    version: str | None = None
    tags: list[str] = []


class _Answer(BaseModel):
    """A resolve answer's token and toolset fields."""

    model_config = ConfigDict(extra="forbid")

    toolset: _Toolset
    registration_token: api.Token


def kept_answer(content: bytes) -> ResolvedToolset:
    """A ``/toolsets/resolve`` answer, kept as text, with the SHA-256 of ``content`` as its
    digest. Raises pydantic's ``ValidationError`` when the answer's token or toolset fields
    are not what the protocol promises (its tools are checked when they are compiled)."""
    answer = _Answer.model_validate_json(content)
    toolset = answer.toolset
    text = ToolsetText(
        content,
        within="toolset",
        name=toolset.name,
        version=toolset.version,
        description=toolset.description,
        tags=toolset.tags,
    )
    return ResolvedToolset(text, answer.registration_token, hashlib.sha256(content).hexdigest())
