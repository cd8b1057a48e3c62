"""Accepted calls and the contract each one keeps.

When a planning activity accepts a tool call, the call saves the spec it was accepted under,
its fixed pagination partner (if any) and, for registry tools, the registration token of the
admission it was resolved from. Confirmation, payload decoding, result validation and restore
all use that saved contract, never the current catalog: a provider replaced in between cannot
change what an accepted call means.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentgen.runtime.contracts.cache import default_cache
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.messages import ToolCallPart

__all__ = ["AcceptedCall", "RegistryBinding"]


@dataclass(frozen=True)
class RegistryBinding:
    """Where a dynamic tool came from: registry, toolset, and the admission it was read from.

    ``declaration`` is the tool's wire declaration as resolved (the saved contract); a restored
    call compiles it again (or finds it compiled) instead of reading the registry.
    """

    registry: str
    toolset: str
    registration_token: str
    declaration: Mapping[str, Any]
    partner_declaration: Mapping[str, Any] | None = None
    #: The toolset's published version when the call was accepted ("" when unversioned).
    version: str = ""


@dataclass(frozen=True)
class AcceptedCall:
    call: ToolCallPart
    spec: ToolSpec
    #: The fixed pagination partner (continuation or source tool), when the tool pages.
    partner: ToolSpec | None = None
    binding: RegistryBinding | None = None

    def to_json(self) -> dict[str, Any]:
        """A checkpoint of the call: enough to restore it without any catalog."""
        data: dict[str, Any] = {
            "call": {
                "call_id": self.call.call_id,
                "tool_id": self.call.tool_id,
                "arguments": self.call.arguments,
            },
            "tool": self.spec.id,
            "toolset": self.spec.toolset,
        }
        if self.partner is not None:
            data["partner"] = self.partner.id
        if self.binding is not None:
            data["binding"] = {
                "registry": self.binding.registry,
                "toolset": self.binding.toolset,
                "registration_token": self.binding.registration_token,
                "version": self.binding.version,
                "declaration": dict(self.binding.declaration),
                "partner_declaration": dict(self.binding.partner_declaration)
                if self.binding.partner_declaration is not None
                else None,
            }
        return data

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], compiled: Callable[[str], ToolSpec | None]
    ) -> AcceptedCall:
        """Restore a checkpoint. Compiled tools come from ``compiled`` (the agent's generated
        specs); registry tools are compiled again from their saved declarations."""
        call = ToolCallPart(**data["call"])
        raw = data.get("binding")
        if raw is None:
            spec = compiled(data["tool"])
            if spec is None:
                raise LookupError(f"checkpoint names tool {data['tool']!r}, which is not compiled")
            partner_id = data.get("partner")
            partner = compiled(partner_id) if partner_id else None
            return cls(call, spec, partner)
        binding = RegistryBinding(
            raw["registry"],
            raw["toolset"],
            raw["registration_token"],
            raw["declaration"],
            raw.get("partner_declaration"),
            raw.get("version", ""),
        )
        cache = default_cache()
        spec = cache.restore(binding.declaration, toolset=data["toolset"]).spec
        partner = (
            cache.restore(binding.partner_declaration, toolset=data["toolset"]).spec
            if binding.partner_declaration is not None
            else None
        )
        return cls(call, spec, partner, binding)
