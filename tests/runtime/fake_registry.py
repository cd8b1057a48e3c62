"""An in-memory registry for runtime tests: the consumer protocol, with admission tokens.

Providers publish toolsets (a handler answers calls); each publication gets a registration
token; republishing replaces the admission. Calls are admitted only against the exact current
token (``call_not_admitted`` otherwise); an overload can be injected to exercise retries, and
a toolset left without providers (``no_provider``, when admitting or while the call waits).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import registration_token
from agentgen.runtime.contracts.wire import fingerprint
from agentgen.runtime.registry.client import (
    CallOutcome,
    CallRef,
    RegistryError,
    ResolvedToolset,
    ToolCallMeta,
)

Handler = Callable[[str, Any, ToolCallMeta], Awaitable[Any]]


@dataclass
class Admission:
    declaration: ToolsetDeclaration
    token: str
    handler: Handler


@dataclass
class FakeRegistry:
    admissions: dict[str, Admission] = field(default_factory=dict)
    resolves: list[str] = field(default_factory=list)
    lists: int = 0
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    outcomes: dict[str, CallOutcome] = field(default_factory=dict)
    #: Tool-use IDs whose next result is "overloaded" (once each).
    overload: set[str] = field(default_factory=set)
    #: Replace the admission right after the next resolve of this toolset (race injection).
    replace_after_resolve: dict[str, ToolsetDeclaration] = field(default_factory=dict)
    fail_list: Exception | None = None
    fail_resolve: dict[str, Exception] = field(default_factory=dict)
    remove_after_list: set[str] = field(default_factory=set)
    #: Toolsets no provider serves: calls are refused at admission ("admission"), or admitted
    #: and then ended because the last provider left before taking them ("queued").
    unserved: dict[str, str] = field(default_factory=dict)
    #: Admitted calls that ended without running, by tool-use ID: what awaiting them raises.
    ended: dict[str, RegistryError] = field(default_factory=dict)

    def publish(
        self, declaration: ToolsetDeclaration, handler: Handler, revision: str = "r1"
    ) -> str:
        token = registration_token(fingerprint(declaration), revision)
        self.admissions[declaration.name] = Admission(declaration, token, handler)
        return token

    def unpublish(self, name: str) -> None:
        del self.admissions[name]

    async def list_toolsets(self) -> list[str]:
        self.lists += 1
        if self.fail_list is not None:
            raise self.fail_list
        names = list(self.admissions)
        for name in self.remove_after_list:
            self.admissions.pop(name, None)
        return names

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        self.resolves.append(name)
        if name in self.fail_resolve:
            raise self.fail_resolve[name]
        admission = self.admissions.get(name)
        if admission is None:
            raise RegistryError("not_found", f'toolset "{name}" not found')
        resolved = ResolvedToolset(
            ToolsetDeclaration.model_validate(admission.declaration.to_json()), admission.token
        )
        replacement = self.replace_after_resolve.pop(name, None)
        if replacement is not None:
            self.publish(replacement, admission.handler, revision="r2")
        return resolved

    async def call_resolved_tool(
        self,
        *,
        toolset: str,
        tool: str,
        payload_json: str,
        meta: ToolCallMeta,
        expected_registration_token: str,
    ) -> CallRef:
        admission = self.admissions.get(toolset)
        if admission is None:
            raise RegistryError("not_found", f'toolset "{toolset}" not found')
        if admission.token != expected_registration_token:
            raise RegistryError("call_not_admitted", "the admission was replaced")
        unserved = f"toolset {toolset!r} has no live provider; the call did not run"
        if self.unserved.get(toolset) == "admission":
            raise RegistryError("no_provider", unserved)
        use_id = hashlib.sha256(f"{meta.run_id}\0{meta.tool_call_id}".encode()).hexdigest()
        ref = CallRef(use_id, admission.token)
        if self.unserved.get(toolset) == "queued":
            self.ended[use_id] = RegistryError("no_provider", unserved)
            return ref
        self.calls.append((tool, payload_json, admission.token))
        value = await admission.handler(tool, json.loads(payload_json), meta)
        self.outcomes[use_id] = CallOutcome("completed", json.dumps(value))
        return ref

    async def retry_tool(self, ref: CallRef, *, expected_registration_token: str) -> CallRef:
        current = {a.token for a in self.admissions.values()}
        if expected_registration_token not in current:
            raise RegistryError("admission_conflict", "the admission was replaced")
        return ref

    async def await_result(self, ref: CallRef) -> CallOutcome:
        await asyncio.sleep(0)
        if ref.tool_use_id in self.ended:
            raise self.ended[ref.tool_use_id]
        if ref.tool_use_id in self.overload:
            self.overload.discard(ref.tool_use_id)
            return CallOutcome("overloaded")
        return self.outcomes[ref.tool_use_id]
