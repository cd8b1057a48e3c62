"""The admission rules of the registry, independent of where its state is stored.

Every function here is pure: it takes the current catalog entry and call record (as read inside
one store transaction), the store's clock and a request, and returns the records to write and
the answer, or raises :class:`RegistryError` with the code a client sees. Stores only make the
read-decide-write atomic, so the SQLite and Redis registries follow exactly the same rules.

Registrations. A provider publishes a toolset's full declaration with the schema fingerprint it
computed, a revision and its provider/incarnation identity. The registry re-derives the
fingerprint and refuses a mismatch; invalid JSON Schemas and schema-only declarations are
refused before anything is written. The registration token is a function of the fingerprint,
the revision and the wire protocol version, so an identical registration gets the identical token
and only adds a lease. A different registration replaces the current one only once every lease
of the current one has expired or been released (``admission_blocked`` until then); the
replaced token is retired and never admitted again (``admission_retired``).

Calls. A call is admitted only against the exact registration token the consumer resolved. Its
identity is derived from (run ID, tool call ID): repeating the call attaches to the same record,
and the same identity with another payload is a conflict, never a second call. Until a provider
claims it the call belongs to its admission: if that admission is replaced or withdrawn first,
the call ends ``call_not_admitted`` (it never runs against another contract). Once claimed it
belongs to that provider lease: it completes with the provider's result, or ends
``outcome_unknown`` if the lease is lost first (it may have run; nobody runs it again).

Providers. A call is only worth queueing while some provider may take it: a toolset with no
live, non-draining lease (every provider's lease expired, was released or is draining) refuses
a new call at once with ``no_provider``, and a call still waiting in line when its toolset's
last such lease ends is ended ``no_provider`` by whoever looks at it next (the waiting
consumer, within a second). No provider can have taken either (claiming needs a routable
lease, decided in the same transaction), so the call did not run; nothing waits out the call
timeout for a provider that is not there. There is no grace period: a provider that restarts
without a gap starts its new incarnation before stopping the old one (the same registration
adds a lease), and a crashed one keeps its lease until it expires, time enough for its
replacement to register.

Callers. A call also belongs to the consumer principal (token name) that made it: its result,
its retry and attaching to it again are that principal's (and an admin's) alone. Its ID is a
hash of (run ID, tool call ID), which another application can guess, so to anyone else a result
or a retry answers exactly as a call that does not exist; calling with its identity is refused
as the conflict it is. Records stored before calls had callers have none: only an admin sees
them (the principal of an open registry is one).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agentgen.runtime.contracts import compiler
from agentgen.runtime.contracts.canonical import canonical_bytes
from agentgen.runtime.contracts.declarations import ContractError, ToolsetDeclaration, shown
from agentgen.runtime.contracts.fingerprint import (
    HEX64,
    REVISION_PATTERN,
    WIRE_PROTOCOL_VERSION,
    registration_token,
    schema_fingerprint,
)
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.versions import VERSION_RULE, version_problem
from agentgen.runtime.registry.auth import Principal
from agentgen.runtime.registry.client import MAX_CALL_DEPTH, RegistryError

__all__ = [
    "DELIVERABLE",
    "IDENTIFIER",
    "MAX_CALL_DEPTH",
    "MAX_SETTLE_MS",
    "MAX_TOOL_USE_ID_LENGTH",
    "NOT_RUN",
    "TERMINAL",
    "USE_DOMAIN",
    "Admission",
    "CallMeta",
    "CallRecord",
    "CallRequest",
    "CallState",
    "CatalogEntry",
    "Decision",
    "Lease",
    "Limits",
    "Registration",
    "ResultStatus",
    "admit",
    "call_digest",
    "catalog_key",
    "check_entry",
    "check_registration",
    "claim",
    "compile_toolset",
    "complete",
    "drain",
    "give_back_unrun",
    "lease_key",
    "missing_call",
    "overload",
    "record_key",
    "register",
    "release",
    "renew",
    "retry",
    "routable",
    "settle",
    "tool_use_id",
    "unregister",
    "visible_to",
]

#: Provider IDs, incarnation IDs and claim operation IDs: printable, bounded, no separators.
IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+\-]{0,127}$")
MAX_TOOL_USE_ID_LENGTH = 256
#: Longest a draining lease stays valid to finish its calls (a provider's ``drain_seconds``).
MAX_SETTLE_MS = 10 * 60_000
USE_DOMAIN = b"agentgen/tool-registry-use/v1\x00"

#: What a consumer waiting for a call hears: ``pending`` until the call ends or is overloaded.
ResultStatus = Literal[
    "pending",
    "overloaded",
    "completed",
    "failed",
    "outcome_unknown",
    "call_not_admitted",
    "no_provider",
]
CallState = Literal[ResultStatus, "claimed"]
#: States a consumer waits for: the call ended, or its provider asked for a retry.
DELIVERABLE: frozenset[str] = frozenset(
    {"overloaded", "completed", "failed", "outcome_unknown", "call_not_admitted", "no_provider"}
)
TERMINAL: frozenset[str] = frozenset(
    {"completed", "failed", "outcome_unknown", "call_not_admitted", "no_provider"}
)


class _Record(BaseModel):
    # Persisted records are read back strictly: a value that does not match exactly is corrupt.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Lease(_Record):
    expires_at_ms: int
    draining: bool = False


class Admission(_Record):
    """A toolset's admission: its catalog entry but the declaration. The rules below read and
    change only this; the registry keeps the declaration beside it as JSON text
    (:mod:`.kept`), since a parsed 2,000-tool declaration is 160,000 objects that Python's
    garbage collector walks at every full collection."""

    state: Literal["active", "retired"]
    schema_fingerprint: str
    revision: str
    wire_protocol_version: int
    registration_token: str
    registered_at_ms: int
    #: Leases by ``provider_id + "\\x00" + incarnation_id``.
    provider_leases: dict[str, Lease] = Field(default_factory=dict)
    #: Tokens replaced or withdrawn: never admitted again.
    retired_tokens: list[str] = Field(default_factory=list)


class CatalogEntry(Admission):
    """One toolset's admission and declaration, stored under ``toolset:<name>``."""

    toolset: ToolsetDeclaration


#: An admission as the caller holds it (the registry's kept entry): the lease rules give back a
#: copy of the same type, so what the caller keeps beside it is carried over.
A = TypeVar("A", bound=Admission)


class CallMeta(_Record):
    run_id: str = Field(min_length=1, max_length=256)
    tool_call_id: str = Field(min_length=1, max_length=256)
    session_id: str = Field(default="", max_length=256)
    parent_tool_call_id: str = Field(default="", max_length=256)
    labels: dict[str, str] = Field(default_factory=dict)
    #: How many registry calls this call is nested in (0: made by a run no registry call
    #: started; absent on the wire means 0). Left out of every encoding while 0, so that
    #: peers and stored records older than the field read it, and a call's digest is the one
    #: it had before the field existed.
    call_depth: int = Field(
        default=0,
        ge=0,
        le=MAX_CALL_DEPTH,
        exclude_if=lambda depth: depth == 0,
        description="how many registry calls this call is nested in (a provider running an "
        f"agent makes its calls one deeper); at most {MAX_CALL_DEPTH}, absent means 0",
    )


class CallRecord(_Record):
    """One admitted call, stored under ``call:<tool_use_id>`` until ``expires_at_ms``."""

    tool_use_id: str
    toolset: str
    tool: str
    payload_json: str
    meta: CallMeta
    digest: str
    registration_token: str
    execution_deadline_ms: int
    expires_at_ms: int
    state: CallState
    #: The consumer principal (token name) that made the call; None in records stored before
    #: calls had callers (only an admin sees those).
    caller: str | None = None
    #: The lease that claimed the call (immutable once set).
    owner: str | None = None
    claim_operation_id: str | None = None
    overloads: int = 0
    result_json: str | None = None
    message: str = ""


@dataclass(frozen=True)
class Limits:
    """The registry's bounds, in milliseconds of the store's clock."""

    min_lease_ms: int = 45_000
    max_lease_ms: int = 24 * 3600_000
    #: How long an admitted call may wait for, and run on, a provider.
    call_timeout_ms: int = 10 * 60_000
    #: How long a call's record (and its result) outlives its execution deadline.
    result_retention_ms: int = 5 * 60_000
    max_settle_ms: int = MAX_SETTLE_MS


@dataclass(frozen=True)
class Registration:
    toolset: ToolsetDeclaration
    schema_fingerprint: str
    revision: str
    provider_id: str
    incarnation_id: str
    lease_ms: int
    wire_protocol_version: int = WIRE_PROTOCOL_VERSION


@dataclass(frozen=True)
class CallRequest:
    toolset: str
    tool: str
    payload_json: str
    meta: CallMeta
    expected_registration_token: str
    wire_protocol_version: int = WIRE_PROTOCOL_VERSION
    #: Who makes the call: it becomes theirs (required: no default that would see every call).
    caller: Principal = field(kw_only=True)


@dataclass(frozen=True)
class Decision:
    """What a rule decided: records to write (a ``None`` entry deletes nothing: it is left
    out) and the error to raise after writing them, if any."""

    entry: Admission | None = None
    record: CallRecord | None = None
    error: RegistryError | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def catalog_key(name: str) -> str:
    return f"toolset:{name}"


def record_key(use_id: str) -> str:
    return f"call:{use_id}"


def lease_key(provider_id: str, incarnation_id: str) -> str:
    return f"{provider_id}\x00{incarnation_id}"


def tool_use_id(run_id: str, tool_call_id: str) -> str:
    """The identity of a call: only (run ID, tool call ID), so a retry of the same model call
    attaches to the same record on any registry node."""
    run, call = run_id.encode(), tool_call_id.encode()
    body = USE_DOMAIN + struct.pack(">Q", len(run)) + run + struct.pack(">Q", len(call)) + call
    return hashlib.sha256(body).hexdigest()


def call_digest(request: CallRequest) -> str:
    """What makes two requests the same call: toolset, tool, exact payload bytes, metadata
    and the admission they were made against."""
    body = {
        "toolset": request.toolset,
        "tool": request.tool,
        "payload": request.payload_json,
        "meta": request.meta.model_dump(),
        "token": request.expected_registration_token,
    }
    return hashlib.sha256(canonical_bytes(body)).hexdigest()


def _invalid(message: str) -> RegistryError:
    return RegistryError("validation_error", message)


def _check_wire(version: int) -> None:
    if version != WIRE_PROTOCOL_VERSION:
        raise _invalid(
            f"tool registry wire protocol version must be {WIRE_PROTOCOL_VERSION}, got {version}"
        )


def compile_toolset(toolset: ToolsetDeclaration) -> dict[str, ToolSpec]:
    """Compile every tool of a declaration (its JSON Schemas and consumer contract), as a
    consumer will: a declaration no consumer could use is refused at registration."""
    specs: dict[str, ToolSpec] = {}
    for tool in toolset.tools:
        if tool.name in specs:
            raise _invalid(f"toolset {toolset.name!r} declares tool {tool.name!r} twice")
        try:
            specs[tool.name] = compiler.compile(tool, toolset=toolset.name)
        except ContractError as exc:
            raise _invalid(f"invalid tool schema: {exc}") from None
    if not specs:
        raise _invalid(f"toolset {toolset.name!r} declares no tools")
    return specs


def check_registration(
    request: Registration,
    limits: Limits,
    compiled: Callable[[str], dict[str, ToolSpec] | None] = lambda fingerprint: None,
) -> tuple[str, dict[str, ToolSpec]]:
    """Everything checked before any side effect; returns the registration token and the
    toolset's compiled specs (compiling is one of the checks). ``compiled`` returns the specs
    already compiled for a schema fingerprint, if any: a toolset registered again (a provider
    restarting) is not compiled again (2,000 tools: half a second)."""
    _check_wire(request.wire_protocol_version)
    for what, value in (
        ("provider_id", request.provider_id),
        ("incarnation_id", request.incarnation_id),
    ):
        if not IDENTIFIER.match(value):
            raise _invalid(f"{what} {value!r} must match {IDENTIFIER.pattern}")
    if not REVISION_PATTERN.match(request.revision):
        raise _invalid(
            f"revision {request.revision!r} must match {REVISION_PATTERN.pattern} (letters, "
            "digits and ._:/@+-, at most 256 characters)"
        )
    _check_lease(request.lease_ms, limits)
    version = request.toolset.version
    problem = None if version is None else version_problem(version)
    if problem is not None:
        raise _invalid(
            f"toolset {request.toolset.name!r}: version {shown(version)} cannot be published: "
            f"a toolset's version is {VERSION_RULE}, as consumers pin it ({problem}); publish "
            "the version as consumers pin it (without the surrounding spaces), or none"
        )
    derived = schema_fingerprint(request.toolset)
    # Only a declaration that compiled is kept under its fingerprint, so one that does not
    # compile is still refused for that first.
    specs = compiled(derived) or compile_toolset(request.toolset)
    if request.schema_fingerprint != derived:
        raise _invalid(
            f"schema fingerprint of toolset {request.toolset.name!r} does not match its "
            f"declaration: the provider sent {request.schema_fingerprint!r}, the registry "
            f"derived {derived!r}; publish the fingerprint of exactly what you register"
        )
    return registration_token(derived, request.revision, request.wire_protocol_version), specs


def _check_lease(lease_ms: int, limits: Limits) -> None:
    if not limits.min_lease_ms <= lease_ms <= limits.max_lease_ms:
        raise _invalid(
            f"lease duration {lease_ms} ms is outside the registry's bounds "
            f"[{limits.min_lease_ms}, {limits.max_lease_ms}] ms"
        )


def _live_leases(entry: Admission, now_ms: int) -> dict[str, Lease]:
    return {k: v for k, v in entry.provider_leases.items() if v.expires_at_ms > now_ms}


def routable(entry: Admission, now_ms: int) -> list[str]:
    """Leases that may take new calls: live and not draining."""
    return sorted(k for k, v in _live_leases(entry, now_ms).items() if not v.draining)


def register(entry: A | None, request: Registration, token: str, now_ms: int) -> A | Admission:
    """Admit a (checked) registration against the current entry; see the module docstring.
    The same registration again gives a copy of ``entry`` (its declaration is the same); a
    new one, its new admission (the registry keeps ``request.toolset`` beside it)."""
    key = lease_key(request.provider_id, request.incarnation_id)
    lease = Lease(expires_at_ms=now_ms + request.lease_ms)
    name = request.toolset.name
    if entry is not None and token in entry.retired_tokens:
        raise RegistryError(
            "admission_retired",
            f"toolset {name!r}: registration token {token} was retired (replaced or "
            "unregistered) and can never be admitted again; register a new revision",
        )
    if entry is not None and entry.state == "active" and entry.registration_token == token:
        existing = entry.provider_leases.get(key)
        if existing is not None and existing.draining:
            raise RegistryError(
                "provider_lease_lost",
                f"toolset {name!r}: provider incarnation {request.incarnation_id!r} is "
                "draining; a draining incarnation cannot register again (start a new one)",
            )
        leases = {**_live_leases(entry, now_ms), key: lease}
        return entry.model_copy(update={"provider_leases": leases})
    retired = list(entry.retired_tokens) if entry is not None else []
    if entry is not None and entry.state == "active":
        live = _live_leases(entry, now_ms)
        if live:
            until = max(v.expires_at_ms for v in live.values())
            raise RegistryError(
                "admission_blocked",
                f"toolset {name!r} is admitted under another registration with {len(live)} "
                f"live provider lease(s) (the last expires in {until - now_ms} ms); a "
                "different registration replaces it only after they expire or are released",
            )
        retired.append(entry.registration_token)
    return Admission(
        state="active",
        schema_fingerprint=request.schema_fingerprint,
        revision=request.revision,
        wire_protocol_version=request.wire_protocol_version,
        registration_token=token,
        registered_at_ms=now_ms,
        provider_leases={key: lease},
        retired_tokens=retired,
    )


def _lease_of(entry: A | None, name: str, token: str, key: str, now_ms: int) -> tuple[A, Lease]:
    if entry is None:
        raise RegistryError("not_found", f'toolset "{name}" not found')
    lease = entry.provider_leases.get(key)
    if (
        entry.state != "active"
        or entry.registration_token != token
        or lease is None
        or lease.expires_at_ms <= now_ms
    ):
        raise RegistryError(
            "provider_lease_lost",
            f"toolset {name!r}: this provider's lease under token {token} is gone (expired, "
            "released, replaced or unregistered); stop serving, do not register again",
        )
    return entry, lease


def renew(
    entry: A | None,
    name: str,
    token: str,
    key: str,
    lease_ms: int,
    now_ms: int,
    limits: Limits,
) -> A:
    """Extend a live, routable lease; never uploads definitions, never a new token."""
    _check_lease(lease_ms, limits)
    entry, lease = _lease_of(entry, name, token, key, now_ms)
    if lease.draining:
        raise RegistryError(
            "provider_lease_lost", f"toolset {name!r}: a draining lease cannot be renewed"
        )
    leases = {
        **_live_leases(entry, now_ms),
        key: Lease(expires_at_ms=max(lease.expires_at_ms, now_ms + lease_ms)),
    }
    return entry.model_copy(update={"provider_leases": leases})


def drain(
    entry: A | None,
    name: str,
    token: str,
    key: str,
    settle_ms: int,
    now_ms: int,
    limits: Limits,
) -> A:
    """Stop routing new calls to a lease; it stays valid ``settle_ms`` to finish its calls.

    A lease drains once: draining it again (a transport retry, a second stop) never moves its
    end later, or a provider draining in a loop would keep a lease nobody routes to alive for
    good, holding back the next revision's admission. It may move it earlier (``settle_ms=0``:
    done already)."""
    if not 0 <= settle_ms <= limits.max_settle_ms:
        raise _invalid(f"settle duration {settle_ms} ms must be in [0, {limits.max_settle_ms}]")
    entry, lease = _lease_of(entry, name, token, key, now_ms)
    ends = now_ms + settle_ms
    if lease.draining:
        ends = min(ends, lease.expires_at_ms)
    leases = {
        **_live_leases(entry, now_ms),
        key: Lease(expires_at_ms=ends, draining=True),
    }
    return entry.model_copy(update={"provider_leases": leases})


def release(entry: A | None, name: str, token: str, key: str, now_ms: int) -> A:
    """Remove a lease; calls it claimed and did not complete end ``outcome_unknown``."""
    if entry is None:
        raise RegistryError("not_found", f'toolset "{name}" not found')
    if entry.registration_token != token or key not in entry.provider_leases:
        return entry  # released already (or replaced since): releasing again changes nothing
    leases = {k: v for k, v in _live_leases(entry, now_ms).items() if k != key}
    return entry.model_copy(update={"provider_leases": leases})


def unregister(entry: A | None, name: str, expected_token: str) -> A:
    """Withdraw the current admission (its token is retired for good)."""
    if entry is None:
        raise RegistryError("not_found", f'toolset "{name}" not found')
    if entry.state == "retired" and entry.registration_token == expected_token:
        return entry  # repeating an unregister with the same token succeeds
    if entry.state != "active" or entry.registration_token != expected_token:
        raise RegistryError(
            "admission_conflict",
            f"toolset {name!r}: token {expected_token} is not the current admission "
            f"({entry.registration_token if entry.state == 'active' else 'none: unregistered'}); "
            "resolve the toolset again",
        )
    return entry.model_copy(
        update={
            "state": "retired",
            "provider_leases": {},
            "retired_tokens": [*entry.retired_tokens, entry.registration_token],
        }
    )


def check_entry(key: str, raw: str) -> CatalogEntry:
    """Read a persisted catalog entry strictly: its key, fingerprint and token must all be
    what its declaration gives (raises ValueError saying what is wrong)."""
    entry = CatalogEntry.model_validate_json(raw)
    if key != catalog_key(entry.toolset.name):
        raise ValueError(f"holds toolset {entry.toolset.name!r}")
    derived = schema_fingerprint(entry.toolset)
    if entry.schema_fingerprint != derived:
        raise ValueError(
            f"schema fingerprint {entry.schema_fingerprint} differs from its declaration's "
            f"{derived}"
        )
    token = registration_token(derived, entry.revision, entry.wire_protocol_version)
    if entry.registration_token != token:
        raise ValueError(f"registration token {entry.registration_token} is not {token}")
    for retired in entry.retired_tokens:
        if not HEX64.match(retired):
            raise ValueError(f"retired token {retired!r} is not a token")
    return entry


# --------------------------------------------------------------------------------------- calls


def _ref(record: CallRecord) -> dict[str, Any]:
    return {
        "tool_use_id": record.tool_use_id,
        "registration_token": record.registration_token,
        "execution_deadline_ms": record.execution_deadline_ms,
        "result_expires_at_ms": record.expires_at_ms,
    }


def visible_to(record: CallRecord, principal: Principal) -> bool:
    """Whether ``principal`` may see the call: the consumer that made it, or an admin (the
    principal of an open registry is one). A record without a caller is an admin's alone."""
    return principal.role == "admin" or (
        record.caller is not None and record.caller == principal.name
    )


def missing_call(use_id: str) -> RegistryError:
    """A call that does not exist, or that is not the asker's: the same answer, so that a
    guessed ID tells nothing about another consumer's calls."""
    return RegistryError("not_found", f"call {use_id} not found (expired or never admitted)")


def _not_admitted(record: CallRecord) -> RegistryError:
    return RegistryError(
        "call_not_admitted",
        f"call {record.tool_use_id} to {record.tool}: admission {record.registration_token} of "
        f"toolset {record.toolset!r} was replaced or withdrawn before a provider took the "
        "call; it did not run",
    )


def _no_provider(record: CallRecord) -> RegistryError:
    return RegistryError("no_provider", record.message)


def _unserved(record: CallRecord, when: str) -> CallRecord:
    """``record`` ended ``no_provider``: its message names the toolset and what to do."""
    message = (
        f"call {record.tool_use_id} to {record.tool}: toolset {record.toolset!r} has no live "
        f"provider {when} (every provider lease expired, was released or is draining); the "
        f"call did not run: start or restart a provider of {record.toolset!r}, then call again"
    )
    return record.model_copy(update={"state": "no_provider", "message": message})


def admit(
    entry: Admission | None,
    record: CallRecord | None,
    request: CallRequest,
    now_ms: int,
    limits: Limits,
    specs: Mapping[str, ToolSpec] | None,
) -> Decision:
    """Attach to the call's record, or create it against the exact expected admission.

    ``specs`` are the compiled tools of ``entry`` (for payload validation).
    """
    _check_wire(request.wire_protocol_version)
    use_id = tool_use_id(request.meta.run_id, request.meta.tool_call_id)
    digest = call_digest(request)
    if record is not None and record.expires_at_ms > now_ms:
        if not visible_to(record, request.caller):
            # Checked before the digest: whether the payload matches is not told either.
            raise RegistryError(
                "call_conflict",
                f"call {use_id} (run {request.meta.run_id!r}, tool call "
                f"{request.meta.tool_call_id!r}) was made by another consumer; a tool call ID "
                "names one call: give each run a run ID of its own (unique, unguessable)",
            )
        if record.digest != digest:
            raise RegistryError(
                "call_conflict",
                f"call {use_id} (run {request.meta.run_id!r}, tool call "
                f"{request.meta.tool_call_id!r}) already exists with another toolset, tool, "
                "payload, metadata or admission; a tool call ID names one call",
            )
        settled = settle(record, entry, now_ms)
        current = settled or record
        if current.state == "call_not_admitted":
            return Decision(record=settled, error=_not_admitted(current), extra=_ref(current))
        if current.state == "no_provider":
            return Decision(record=settled, error=_no_provider(current), extra=_ref(current))
        return Decision(record=settled, extra=_ref(current))
    if entry is None or entry.state != "active":
        raise RegistryError("not_found", f'toolset "{request.toolset}" not found')
    if specs is None or request.tool not in specs:
        raise RegistryError(
            "not_found", f"toolset {request.toolset!r} has no tool {request.tool!r}"
        )
    if specs[request.tool].kind == "agent":
        raise RegistryError(
            "validation_error",
            f"tool {request.tool!r} is an agent exposed as a tool: consumers run it as a child "
            "run with the executor and configuration they saved, never through a registry call",
        )
    base = CallRecord(
        tool_use_id=use_id,
        toolset=request.toolset,
        tool=request.tool,
        payload_json=request.payload_json,
        meta=request.meta,
        digest=digest,
        registration_token=request.expected_registration_token,
        execution_deadline_ms=now_ms + limits.call_timeout_ms,
        expires_at_ms=now_ms + limits.call_timeout_ms + limits.result_retention_ms,
        state="pending",
        caller=request.caller.name,
    )
    if entry.registration_token != request.expected_registration_token:
        refused = base.model_copy(
            update={"state": "call_not_admitted", "message": "admission replaced"}
        )
        return Decision(record=refused, error=_not_admitted(refused), extra=_ref(refused))
    from agentgen.runtime.contracts.codecs import PayloadError

    try:
        specs[request.tool].payload.codec.decode(request.payload_json)
    except PayloadError as exc:
        issues = "; ".join(f"{i.path or '(root)'}: {i.message}" for i in exc.issues)
        raise RegistryError(
            "validation_error", f"payload of {request.tool} does not match its schema: {issues}"
        ) from None
    if not routable(entry, now_ms):
        # Kept like any call, so that repeating it gives this answer again, never a run.
        refused = _unserved(base, "to take it")
        return Decision(record=refused, error=_no_provider(refused), extra=_ref(refused))
    return Decision(record=base, extra={**_ref(base), "enqueue": True})


def settle(record: CallRecord, entry: Admission | None, now_ms: int) -> CallRecord | None:
    """The record's state once the registry's facts are applied, or None if unchanged.

    A pending call whose admission is gone ends ``call_not_admitted``; one whose toolset has no
    routable lease left ends ``no_provider``; one nobody claimed before its deadline ends
    ``failed`` (none of these ran); a claimed call whose lease is lost, or that passed its
    deadline, ends ``outcome_unknown``.
    """
    if record.state == "pending":
        if (
            entry is None
            or entry.state != "active"
            or entry.registration_token != record.registration_token
        ):
            return record.model_copy(
                update={"state": "call_not_admitted", "message": "admission replaced"}
            )
        if not routable(entry, now_ms):
            return _unserved(record, "any more")
        if now_ms >= record.execution_deadline_ms:
            return record.model_copy(
                update={
                    "state": "failed",
                    "result_json": '{"code":"deadline_exceeded"}',
                    "message": "no provider took the call before its deadline; it did not run",
                }
            )
        return None
    if record.state == "claimed":
        lease = None
        if entry is not None and entry.registration_token == record.registration_token:
            lease = entry.provider_leases.get(record.owner or "")
        if lease is None or lease.expires_at_ms <= now_ms:
            return _unknown(record, "the provider that took the call lost its lease")
        if now_ms >= record.execution_deadline_ms:
            return _unknown(record, "the provider did not complete the call before its deadline")
    return None


def _unknown(record: CallRecord, why: str) -> CallRecord:
    return record.model_copy(
        update={
            "state": "outcome_unknown",
            "message": f"{why}; the call may have run: do not retry or issue a replacement",
        }
    )


def claim(
    record: CallRecord | None,
    entry: Admission | None,
    key: str,
    token: str,
    operation_id: str,
    now_ms: int,
) -> tuple[CallRecord | None, bool]:
    """Give a pending call to a routable lease. Returns the record to write (if changed) and
    whether this lease now owns it (a replay of the same claim operation owns it again)."""
    if record is None:
        return None, False
    if record.state == "claimed":
        mine = record.owner == key and record.claim_operation_id == operation_id
        return settle(record, entry, now_ms), mine
    settled = settle(record, entry, now_ms)
    if settled is not None:
        return settled, False
    if record.state != "pending" or entry is None or record.registration_token != token:
        return None, False
    if key not in routable(entry, now_ms):
        return None, False
    claimed = record.model_copy(
        update={"state": "claimed", "owner": key, "claim_operation_id": operation_id}
    )
    return claimed, True


def _owned(record: CallRecord | None, use_id: str, key: str) -> CallRecord:
    if record is None:
        raise missing_call(use_id)
    if record.owner != key:
        raise RegistryError(
            "provider_lease_lost", f"call {use_id} is not held by this provider's lease"
        )
    return record


def complete(
    record: CallRecord | None,
    entry: Admission | None,
    use_id: str,
    key: str,
    status: Literal["completed", "failed"],
    result_json: str,
    message: str,
    now_ms: int,
) -> CallRecord | None:
    """Record a provider's result; only the exact lease that claimed the call may, and only
    while it holds the lease. Repeating the same completion is accepted (nothing changes)."""
    record = _owned(record, use_id, key)
    if record.state in TERMINAL:
        if (record.state, record.result_json, record.message) == (status, result_json, message):
            return None
        raise RegistryError(
            "provider_lease_lost",
            f"call {use_id} already ended {record.state}: {record.message or 'completed'}",
        )
    if record.state != "claimed":
        raise RegistryError("provider_lease_lost", f"call {use_id} is {record.state}, not claimed")
    settled = settle(record, entry, now_ms)
    if settled is not None:
        return settled  # the lease was lost first: written, and reported as lost
    return record.model_copy(
        update={"state": status, "result_json": result_json, "message": message}
    )


def overload(
    record: CallRecord | None,
    entry: Admission | None,
    use_id: str,
    key: str,
    now_ms: int,
    operation_id: str | None = None,
) -> CallRecord | None:
    """A provider gives a claimed call back without running it; the consumer may retry.

    ``operation_id`` names the claim operation that took the call. An overload of another
    claim of it was applied already (a transport retry of an overload that arrives after the
    call was retried, and claimed again, perhaps by this very lease, which is running it now):
    it changes nothing, and neither does one repeated after it was applied. Without it (a
    provider older than the header carrying it) the lease alone is checked."""
    if operation_id is not None:
        if record is None:
            raise missing_call(use_id)
        if record.claim_operation_id != operation_id or record.state == "overloaded":
            return None
    record = _owned(record, use_id, key)
    if record.state != "claimed":
        raise RegistryError("provider_lease_lost", f"call {use_id} is {record.state}, not claimed")
    settled = settle(record, entry, now_ms)
    if settled is not None:
        return settled
    return record.model_copy(
        update={"state": "overloaded", "overloads": record.overloads + 1, "owner": None}
    )


#: The code a call given back unrun ends ``failed`` with (:func:`give_back_unrun`).
NOT_RUN = "not_run"


def give_back_unrun(
    record: CallRecord | None,
    entry: Admission | None,
    key: str,
    operation_id: str,
    now_ms: int,
) -> CallRecord | None:
    """A provider gives back a call of claim operation ``operation_id`` it never ran: the
    registry's answer handing the call over could not be read (nor its replay), so the call
    never reached the provider's executor. It ends ``failed`` with code :data:`NOT_RUN` (the
    call did not run: calling again is safe), rather than ``outcome_unknown`` when the lease
    ends. Only a call that claim operation of this lease still holds changes; one completed,
    given back or claimed again meanwhile is left as it is, and one whose lease was lost
    first ends ``outcome_unknown`` as any such call does."""
    if (
        record is None
        or record.state != "claimed"
        or record.owner != key
        or record.claim_operation_id != operation_id
    ):
        return None
    settled = settle(record, entry, now_ms)
    if settled is not None:
        return settled
    message = (
        f"{NOT_RUN}: call {record.tool_use_id} to {record.tool} of toolset {record.toolset!r}: "
        "the provider that took it could not read the registry's answer handing it over, so "
        "it never ran it, and stopped serving; the call did not run: it is safe to call again "
        "once a provider serves the toolset"
    )
    return record.model_copy(
        update={
            "state": "failed",
            "result_json": json.dumps({"code": NOT_RUN, "message": message}),
            "message": message,
        }
    )


def retry(
    record: CallRecord | None,
    entry: Admission | None,
    use_id: str,
    expected_token: str,
    now_ms: int,
    *,
    caller: Principal,
) -> Decision:
    """Put an overloaded call back in line under the same admission, deadline and expiry."""
    if record is None or not visible_to(record, caller):
        raise missing_call(use_id)
    if record.registration_token != expected_token:
        raise RegistryError(
            "admission_conflict",
            f"call {use_id} was admitted under {record.registration_token}, not {expected_token}",
        )
    if record.overloads == 0:
        raise RegistryError(
            "validation_error", f"call {use_id} was never overloaded: there is nothing to retry"
        )
    if record.state != "overloaded":
        return Decision(extra=_ref(record))  # retried already: the same call, unchanged
    if (
        entry is None
        or entry.state != "active"
        or entry.registration_token != record.registration_token
    ):
        raise RegistryError(
            "admission_conflict",
            f"call {use_id}: admission {expected_token} of toolset {record.toolset!r} was "
            "replaced; the call is not retried against another contract",
        )
    if now_ms >= record.execution_deadline_ms:
        ended = record.model_copy(
            update={
                "state": "failed",
                "result_json": '{"code":"deadline_exceeded"}',
                "message": "the call's deadline passed while it was overloaded; it did not run",
            }
        )
        return Decision(record=ended, extra=_ref(ended))
    if not routable(entry, now_ms):
        ended = _unserved(record, "to take it again")
        return Decision(record=ended, extra=_ref(ended))
    pending = record.model_copy(update={"state": "pending", "claim_operation_id": None})
    return Decision(record=pending, extra={**_ref(pending), "enqueue": True})
