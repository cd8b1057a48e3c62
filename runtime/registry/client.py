"""The consumer side of a tool registry: what the runtime asks of a registry service.

A registry lists toolsets, resolves one to its full declaration plus the registration token of
the admission it was read from, and runs calls against exactly that admission. Applications
pass a client and a result stream to ``Runtime.register_registry``; the embedded and Redis
registries implement these protocols, and tests use in-memory fakes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol, runtime_checkable

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.toolset_text import ToolsetText
from agentgen.runtime.failures import CodedError

__all__ = [
    "MAX_CALL_DEPTH",
    "BatchResolver",
    "CallOutcome",
    "CallRef",
    "ErrorCode",
    "RegistryClient",
    "RegistryError",
    "ResolvedToolset",
    "ResultStream",
    "ToolCallMeta",
]

#: Most registry calls one call may be nested in (its ``call_depth``): a provider that runs an
#: agent makes that agent's registry calls one deeper than the call it serves, so agents
#: published through a registry that call each other in a cycle end here instead of recursing
#: across processes without end.
MAX_CALL_DEPTH = 8

ErrorCode = str
"""Registry error codes are open strings; the runtime reacts to these:

``not_found``, ``validation_error``, ``service_unavailable``, ``call_not_admitted`` (the
admission the call was made against was replaced before publication), ``admission_conflict``
(a retry found the admission replaced), ``no_provider`` (no provider serves the toolset: the
call did not run), ``outcome_unknown`` (the call may have run; never retry it)."""


class RegistryError(CodedError):
    """A registry refused or failed a request; ``code`` says how."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, init=False)
class ResolvedToolset:
    """One active catalog read: the declaration and the token of the admission it came from.

    ``ResolvedToolset(toolset, registration_token, digest=None)`` takes the declaration parsed,
    or kept as the text it came in (a :class:`ToolsetText`; :attr:`declared` is what was
    given). A client that keeps the answers it read should keep them as text: parsed, every
    tool of every answer is dozens of objects the consumer's garbage collector walks at each
    full collection. Planning catalogs parse such a toolset when they compile it, and
    :attr:`toolset` parses a fresh copy each time it is read.

    ``digest`` is optional: a client that parsed ``toolset`` from a registry's answer may set
    it to the SHA-256 (hex) of exactly the bytes it parsed. Planning catalogs then recognise an
    unchanged toolset by it, without hashing every tool again. It must change whenever the
    declaration does; leave it ``None`` when the client cannot vouch for that (for instance
    when it hands out objects that callers may have changed).
    """

    registration_token: str
    digest: str | None
    #: The declaration, parsed or as text, as the client gave it.
    declared: ToolsetDeclaration | ToolsetText = field(repr=False)

    def __init__(
        self,
        toolset: ToolsetDeclaration | ToolsetText,
        registration_token: str,
        digest: str | None = None,
    ) -> None:
        object.__setattr__(self, "registration_token", registration_token)
        object.__setattr__(self, "digest", digest)
        object.__setattr__(self, "declared", toolset)

    @property
    def toolset(self) -> ToolsetDeclaration:
        """The declaration (parsed afresh at each read when it was kept as text; one that does
        not parse then raises ``ContractError`` naming its tool)."""
        declared = self.declared
        return declared.declaration() if isinstance(declared, ToolsetText) else declared


@dataclass(frozen=True)
class ToolCallMeta:
    run_id: str
    tool_call_id: str
    session_id: str = ""
    parent_tool_call_id: str = ""
    #: Trusted run labels the tool's contract requires (never shown to models).
    labels: Mapping[str, str] = field(default_factory=dict)
    #: How many registry calls the calling run is nested in (0 for a run no registry call
    #: started): a provider running an agent hands it one more (see ``MAX_CALL_DEPTH``).
    call_depth: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))


@dataclass(frozen=True)
class CallRef:
    """The identity of an admitted call; a retry must return exactly the same one (same
    tool-use ID, token, deadline and expiry)."""

    tool_use_id: str
    registration_token: str
    #: When the call must have run, and when its result is forgotten (milliseconds since the
    #: epoch on the registry's clock; 0 when the registry does not say).
    execution_deadline_ms: int = 0
    result_expires_at_ms: int = 0


@dataclass(frozen=True)
class CallOutcome:
    """What the result stream says about a call."""

    status: Literal["completed", "failed", "overloaded", "outcome_unknown"]
    #: JSON text of the tool's result (``completed``) or of its error (``failed``).
    payload_json: str = "null"
    message: str = ""


class RegistryClient(Protocol):
    async def list_toolsets(self) -> list[str]: ...

    async def resolve_toolset(self, name: str) -> ResolvedToolset: ...

    async def call_resolved_tool(
        self,
        *,
        toolset: str,
        tool: str,
        payload_json: str,
        meta: ToolCallMeta,
        expected_registration_token: str,
    ) -> CallRef: ...

    async def retry_tool(self, ref: CallRef, *, expected_registration_token: str) -> CallRef: ...


@runtime_checkable
class BatchResolver(Protocol):
    """An optional capability of a :class:`RegistryClient`: resolve many toolsets in one read.

    Planning catalogs that read a whole registry use it when the client has it (one request
    instead of a list and one resolve per toolset); other clients are read toolset by toolset.
    """

    async def resolve_toolsets(
        self, names: Sequence[str] | None = None
    ) -> list[tuple[str, ResolvedToolset | RegistryError]]:
        """Each toolset of ``names``, or of every active toolset (by name, as
        ``list_toolsets`` would name them) when ``names`` is None, with the listing and every
        resolution coming from the registry's one read. Each entry holds what
        ``resolve_toolset`` would have returned, or the error it would have raised (a missing
        or withdrawn toolset: ``not_found``)."""
        ...


class ResultStream(Protocol):
    async def await_result(self, ref: CallRef) -> CallOutcome: ...
