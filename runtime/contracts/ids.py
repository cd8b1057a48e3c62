"""Identities: agent IDs, tool IDs, toolset registration names and default titles.

Tool IDs are fixed at generation time (``toolset.tool``); they are what a model sees once
sanitised for a provider, what policies name, and what histories record.
"""

from __future__ import annotations

import re

__all__ = ["agent_id", "humanize_title", "local_name", "registration_name", "tool_id"]

_WORD_BREAK = re.compile(r"[_\-\s]+")


def agent_id(service: str, agent: str) -> str:
    return f"{service}.{agent}"


def tool_id(toolset: str, tool: str) -> str:
    return f"{toolset}.{tool}"


def registration_name(service: str, toolset: str) -> str:
    """The name a toolset is registered (and published) under: ``service.toolset``."""
    return f"{service}.{toolset}"


def local_name(identifier: str) -> str:
    """The part after the last dot: ``records.search`` → ``search``."""
    return identifier.rsplit(".", 1)[-1]


def humanize_title(name: str) -> str:
    """The default title of a tool: ``analyze_sensor_patterns`` → ``Analyze Sensor Patterns``.

    Only the last dotted segment counts; ``_``, ``-`` and spaces separate words; each word gets
    its first character upper-cased and keeps the rest (``get_HTTP_status`` → ``Get HTTP Status``).
    """
    words = [w for w in _WORD_BREAK.split(local_name(name)) if w]
    return " ".join(w[0].upper() + w[1:] for w in words)
