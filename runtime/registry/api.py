"""The registry's HTTP API: request and response bodies, shared by the service and its client.

Every body is a strict pydantic model (unknown fields refused), so the service validates what
arrives and the published OpenAPI document (``GET /openapi.json``) says exactly what is
accepted. Payloads and results travel as JSON text (``payload_json``, ``result_json``): the
registry compares and validates the exact bytes the caller sent.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import WIRE_PROTOCOL_VERSION
from agentgen.runtime.registry.admission import IDENTIFIER, CallMeta, ResultStatus

__all__ = [
    "API_PREFIX",
    "CALL_DEPTH_HEADER",
    "CLAIM_OPERATION_HEADER",
    "ERROR_STATUS",
    "MAX_CLAIM_CALLS",
    "MAX_PAYLOAD",
    "MAX_REVISION_CHARS",
    "MAX_WAIT_MS",
    "TIME_HEADER",
    "CallRefBody",
    "CallRequestBody",
    "CheckAdmissionRequest",
    "CheckAdmissionResponse",
    "ClaimRequest",
    "ClaimResponse",
    "ClaimedCallBody",
    "CompleteManyRequest",
    "CompleteManyResponse",
    "CompleteRequest",
    "CompletionBody",
    "CompletionOutcome",
    "DrainRequest",
    "ErrorBody",
    "ErrorResponse",
    "GiveBackRequest",
    "GiveBackResponse",
    "HealthResponse",
    "LeaseRequest",
    "LeaseResponse",
    "ListRequest",
    "ListResponse",
    "OkResponse",
    "OverloadRequest",
    "RegisterRequest",
    "RegisterResponse",
    "RenewRequest",
    "ResolveManyRequest",
    "ResolveManyResponse",
    "ResolveRequest",
    "ResolveResponse",
    "ResolvedEntry",
    "ResultRequest",
    "ResultResponse",
    "RetryRequest",
    "UnregisterRequest",
]

API_PREFIX = "/v1"

#: HTTP status of every error code the registry answers with.
ERROR_STATUS: dict[str, int] = {
    "malformed_json": 400,
    "unauthenticated": 401,
    "forbidden": 403,
    "not_found": 404,
    "unknown_route": 404,
    "method_not_allowed": 405,
    "admission_blocked": 409,
    "admission_retired": 409,
    "admission_conflict": 409,
    "call_not_admitted": 409,
    "call_conflict": 409,
    "no_provider": 409,
    "provider_lease_lost": 409,
    "body_too_large": 413,
    "unsupported_media_type": 415,
    "validation_error": 422,
    "service_unavailable": 503,
    #: A fault of the registry itself (its log has the traceback): clients retry it as a 5xx.
    "internal_error": 500,
}

Token = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="a registration token")]
UseId = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="a call's tool-use ID")]
Name = Annotated[str, Field(min_length=1, max_length=256, description="a toolset name")]
Ident = Annotated[str, Field(pattern=IDENTIFIER.pattern, max_length=128)]
Millis = Annotated[int, Field(ge=0, le=2**53)]
MAX_PAYLOAD = 1_000_000
#: Most calls one claim takes, and longest a long poll may ask to wait.
MAX_CLAIM_CALLS = 256
MAX_WAIT_MS = 60_000
#: Longest revision a provider may register under (it names the provider's build).
MAX_REVISION_CHARS = 256
#: The answer header carrying the registry's clock (Unix milliseconds) when it answered: the
#: deadlines and expiries it hands out are on that clock, so clients measure them against it
#: rather than against their own (which may be minutes off). Older services do not send it.
TIME_HEADER = "x-registry-time-ms"
#: The request header of ``/providers/overload`` naming the claim operation that took the call
#: (its ``claim_operation_id``): an overload of an earlier claim of the call (a transport retry
#: arriving after the call was retried and claimed again) then changes nothing. A header, not a
#: body field: bodies refuse unknown fields, so an older registry would refuse the overload of
#: a newer provider; it ignores the header (and a newer registry hears an older provider, which
#: sends none, as before: the lease alone is checked).
CLAIM_OPERATION_HEADER = "x-claim-operation-id"
#: The request header of ``/providers/claim`` by which a provider says it reads a claimed call's
#: ``meta.call_depth`` (value ``1``). Without it the registry leaves the field out of the calls
#: it hands over (an older provider's strict models would refuse the whole claim for it), and
#: that provider runs them as it always did, at depth 0. A header for the same reason as
#: :data:`CLAIM_OPERATION_HEADER`: an older registry ignores it (and never sends the field).
CALL_DEPTH_HEADER = "x-reads-call-depth"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Body):
    code: str = Field(description="machine-readable: see docs/registry.md")
    message: str


class ErrorResponse(_Body):
    error: ErrorBody


class OkResponse(_Body):
    ok: Literal[True] = True


class HealthResponse(_Body):
    status: Literal["ok"] = "ok"
    store: str
    time_ms: int


class RegisterRequest(_Body):
    toolset: ToolsetDeclaration
    schema_fingerprint: Token
    revision: Annotated[str, Field(min_length=1, max_length=MAX_REVISION_CHARS)]
    provider_id: Ident
    incarnation_id: Ident
    lease_ms: Annotated[int, Field(ge=1, le=2**31)]
    wire_protocol_version: int = WIRE_PROTOCOL_VERSION


class RegisterResponse(_Body):
    registration_token: Token
    schema_fingerprint: Token
    lease_expires_at_ms: Millis


class LeaseRequest(_Body):
    toolset: Name
    registration_token: Token
    provider_id: Ident
    incarnation_id: Ident


class RenewRequest(LeaseRequest):
    lease_ms: Annotated[int, Field(ge=1, le=2**31)]


class DrainRequest(LeaseRequest):
    settle_ms: Annotated[int, Field(ge=0, le=2**31)]


class LeaseResponse(_Body):
    lease_expires_at_ms: Millis


class UnregisterRequest(_Body):
    toolset: Name
    expected_registration_token: Token


class ListRequest(_Body):
    tags: Annotated[list[Annotated[str, Field(max_length=256)]], Field(max_length=64)] = []


class ListResponse(_Body):
    toolsets: list[str]


class SearchRequest(_Body):
    """Find toolsets by text: ``query`` is looked for, ignoring case and read in Unicode NFKC,
    in each active toolset's name, description and tags (a substring, not words: ``pay``
    finds ``payments``)."""

    query: Annotated[str, Field(min_length=1, max_length=256)]
    tags: Annotated[list[Annotated[str, Field(max_length=256)]], Field(max_length=64)] = []


class ResolveRequest(_Body):
    toolset: Name


class ResolveResponse(_Body):
    toolset: ToolsetDeclaration
    registration_token: Token


#: The SHA-256 (hex) of a resolve answer, as a client received it.
Digest = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of an answer")]
#: Most toolsets one batch resolve names, or reports digests for.
MAX_BATCH_TOOLSETS = 16_384


class ResolveManyRequest(_Body):
    """Resolve several toolsets (or every active one) in one read.

    ``known`` gives, by toolset name, the SHA-256 of the ``/toolsets/resolve`` answer the client
    holds; a toolset whose answer would be exactly that is reported ``unchanged`` without it.
    """

    #: The toolsets to resolve; ``null`` resolves every active toolset (what ``/toolsets/list``
    #: without tags names), listing and resolving in the same read.
    toolsets: Annotated[list[Name], Field(max_length=MAX_BATCH_TOOLSETS)] | None = None
    known: Annotated[dict[Name, Digest], Field(max_length=MAX_BATCH_TOOLSETS)] = {}


class ResolvedEntry(_Body):
    name: str
    #: ``resolved``: ``answer`` is the toolset's resolve answer; ``unchanged``: it is byte for
    #: byte the one whose digest the client gave; ``not_found``: missing or withdrawn.
    status: Literal["resolved", "unchanged", "not_found"]
    #: Exactly the JSON text ``/toolsets/resolve`` answers for this toolset (a
    #: ``ResolveResponse``): its SHA-256 is the digest to give back in ``known``.
    answer: str | None = None
    message: str = ""


class ResolveManyResponse(_Body):
    toolsets: list[ResolvedEntry]


class CheckAdmissionRequest(_Body):
    toolset: Name
    expected_registration_token: Token


class CheckAdmissionResponse(_Body):
    ready: bool


class CallRequestBody(_Body):
    toolset: Name
    tool: Annotated[str, Field(min_length=1, max_length=256)]
    payload_json: Annotated[str, Field(max_length=MAX_PAYLOAD)]
    meta: CallMeta
    expected_registration_token: Token
    wire_protocol_version: int = WIRE_PROTOCOL_VERSION
    #: Wait up to this long for the outcome and return it with the reference (one round trip
    #: for a quick tool); 0 returns the reference at once. The service caps it.
    wait_ms: Annotated[int, Field(ge=0, le=60_000)] = 0


class ResultResponse(_Body):
    status: ResultStatus
    result_json: str | None = None
    message: str = ""


class CallRefBody(_Body):
    tool_use_id: UseId
    registration_token: Token
    execution_deadline_ms: Millis
    result_expires_at_ms: Millis
    #: The outcome, when the call asked to wait and it came in time.
    result: ResultResponse | None = None


class RetryRequest(_Body):
    tool_use_id: UseId
    expected_registration_token: Token


class ResultRequest(_Body):
    tool_use_id: UseId
    registration_token: Token
    #: How long to wait for the result; the service caps it (see its ``max_wait_ms``).
    wait_ms: Annotated[int, Field(ge=0, le=60_000)] = 10_000


class ClaimRequest(LeaseRequest):
    max_calls: Annotated[int, Field(ge=1, le=MAX_CLAIM_CALLS)] = 16
    wait_ms: Annotated[int, Field(ge=0, le=MAX_WAIT_MS)] = 10_000
    #: Repeating a request with the same ID returns what it claimed (transport retries).
    claim_operation_id: Ident


class GiveBackRequest(LeaseRequest):
    """Give back, unrun, the calls a claim operation of this lease took: the provider could
    not read the answer handing them over (nor its replay), so none of them ran."""

    claim_operation_id: Ident


class GiveBackResponse(_Body):
    #: How many calls were given back (each ended ``failed`` with code ``not_run``).
    calls: int


class ClaimedCallBody(_Body):
    tool_use_id: UseId
    tool: str
    payload_json: str
    meta: CallMeta
    registration_token: Token
    execution_deadline_ms: Millis


class ClaimResponse(_Body):
    calls: list[ClaimedCallBody]


class CompleteRequest(_Body):
    toolset: Name
    tool_use_id: UseId
    provider_id: Ident
    incarnation_id: Ident
    status: Literal["completed", "failed"]
    result_json: Annotated[str, Field(max_length=MAX_PAYLOAD)]
    message: Annotated[str, Field(max_length=4096)] = ""


class CompletionBody(_Body):
    tool_use_id: UseId
    status: Literal["completed", "failed"]
    result_json: Annotated[str, Field(max_length=MAX_PAYLOAD)]
    message: Annotated[str, Field(max_length=4096)] = ""


class CompleteManyRequest(_Body):
    """Several results of one provider lease in one request (each judged on its own)."""

    toolset: Name
    provider_id: Ident
    incarnation_id: Ident
    completions: Annotated[list[CompletionBody], Field(min_length=1, max_length=256)]


class CompletionOutcome(_Body):
    tool_use_id: UseId
    #: Why this result was refused (what ``/providers/complete`` would have answered), or null.
    error: ErrorBody | None = None


class CompleteManyResponse(_Body):
    #: One outcome per completion, in the request's order.
    completions: list[CompletionOutcome]


class OverloadRequest(_Body):
    toolset: Name
    tool_use_id: UseId
    provider_id: Ident
    incarnation_id: Ident
