"""Fields added to the runtime's wire values after workers without them were deployed.

The runtime's dataclasses cross between processes that may run different releases while an
application upgrades (a durable engine's payloads: one worker plans, another reads the answer,
a client reads the result). A reader refuses a field it does not know, and a durable workflow
that cannot read its input is retried until a newer worker takes it. So a field added to a wire
value carries :data:`ADDED` in its metadata and is left out of a payload while it holds its
default: a value that does not use what the field adds is written exactly as the release before
wrote it, and only values that use it need readers that know it. Fields added before this rule
(``CallRef``'s deadlines, ``PlanTask.activity``, ``RunState.activities``,
``TemporalSettings.max_payload_bytes``) are written always, as every release since wrote them.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

__all__ = ["ADDED", "is_added"]

#: The metadata of a field added to a wire value (``field(default=..., metadata=ADDED)``).
ADDED: MappingProxyType[str, Any] = MappingProxyType({"agentgen.added": True})


def is_added(field: dataclasses.Field[Any]) -> bool:
    """Whether ``field`` was added to a wire value (left out of payloads at its default)."""
    return bool(field.metadata.get("agentgen.added"))
