"""The registry service: an ASGI application (FastAPI) over :class:`RegistryOperations`.

``create_app`` builds it for a store; ``agentgen registry serve`` runs it with uvicorn. Every
operation is a ``POST`` of a typed JSON body under ``/v1`` (``GET /health`` and ``GET
/openapi.json`` aside). Every refusal is a 4xx answer whose body is ``{"error": {"code": ...,
"message": ...}}`` with a machine-readable code (``docs/registry.md`` lists them); only an
unreachable store answers 503, and a fault of the registry itself 500 ``internal_error`` (with
the same body). Bodies larger than the configured limit (1 MiB by default) are
refused before they are parsed. FastAPI declares the operations and publishes their OpenAPI
document; :mod:`.dispatch` serves them (the same checks, without FastAPI's per-request cost).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import typing
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

from fastapi import Depends, FastAPI, Header, Request, Security
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentgen.runtime.registry import api
from agentgen.runtime.registry.admission import (
    IDENTIFIER,
    Admission,
    CallRequest,
    Limits,
    Registration,
)
from agentgen.runtime.registry.auth import Principal, TokenTable
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.dispatch import (
    OFF_LOOP_BYTES,
    Dispatch,
    Endpoint,
    Route,
    error_answer,
    validation_answer,
)
from agentgen.runtime.registry.kept import KeptEntry
from agentgen.runtime.registry.operations import Completion, RegistryOperations
from agentgen.runtime.registry.store import Store, StoreError
from agentgen.runtime.registry.stores import open_store

__all__ = ["DEFAULT_MAX_BODY", "ServiceConfig", "create_app"]

DEFAULT_MAX_BODY = 1 << 20


@dataclass(frozen=True)
class ServiceConfig:
    #: Largest request body accepted, in bytes.
    max_body_bytes: int = DEFAULT_MAX_BODY
    #: Longest a long poll (claims, results) waits before answering.
    max_wait_ms: int = 10_000


def _error(code: str, message: str) -> Response:
    answer = error_answer(code, message)
    return Response(answer.body, status_code=answer.status, media_type="application/json")


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": api.ErrorResponse, "description": ", ".join(sorted(codes))}
    for status, codes in {
        s: {c for c, t in api.ERROR_STATUS.items() if t == s}
        for s in set(api.ERROR_STATUS.values())
    }.items()
}


@dataclass(frozen=True)
class _Answer:
    """An admission's resolve answer, encoded once: its bytes, as text, and their SHA-256."""

    body: bytes
    text: str
    digest: str


_RESOLVED: OrderedDict[tuple[str, str], _Answer] = OrderedDict()
_RESOLVED_KEPT = 2048

#: An admission's resolve answer is named by (schema fingerprint, registration token): the
#: fingerprint covers every field of the declaration.
_Key = tuple[str, str]


def _key(entry: Admission) -> _Key:
    return (entry.schema_fingerprint, entry.registration_token)


def _encode(entry: KeptEntry) -> _Answer:
    """Exactly ``api.ResolveResponse(toolset=..., registration_token=...).model_dump_json()``,
    around the declaration's text the registry made when it was registered (serialising 2,000
    tools holds the interpreter for about 60 ms, even in a worker thread)."""
    token = json.dumps(entry.registration_token)
    body = f'{{"toolset":{entry.declaration.text},"registration_token":{token}}}'
    encoded = body.encode()
    return _Answer(encoded, body, hashlib.sha256(encoded).hexdigest())


async def _resolved(entries: list[KeptEntry]) -> dict[_Key, _Answer]:
    """The resolve answers of admissions, each encoded once. Those not encoded yet are encoded
    in a worker thread: a toolset of 2,000 tools takes about 60 ms, and the event loop serves
    every long poll of the registry."""
    answers: dict[_Key, _Answer] = {}
    missing: dict[_Key, KeptEntry] = {}
    for entry in entries:
        key = _key(entry)
        kept = _RESOLVED.get(key)
        if kept is None:
            missing[key] = entry
        else:
            answers[key] = kept
    if missing:
        encoded = await asyncio.to_thread(lambda: [_encode(e) for e in missing.values()])
        for key, answer in zip(missing, encoded, strict=True):
            answers[key] = _RESOLVED.setdefault(key, answer)
        while len(_RESOLVED) > _RESOLVED_KEPT:
            _RESOLVED.popitem(last=False)
    return answers


def _resolve_many(
    found: list[tuple[str, KeptEntry | None]],
    known: dict[str, str],
    answers: dict[_Key, _Answer],
) -> bytes:
    entries = []
    for name, entry in found:
        if entry is None:
            entries.append(
                api.ResolvedEntry(
                    name=name, status="not_found", message=f'toolset "{name}" not found'
                )
            )
            continue
        answer = answers[_key(entry)]
        if known.get(name) == answer.digest:
            entries.append(api.ResolvedEntry(name=name, status="unchanged"))
        else:
            entries.append(api.ResolvedEntry(name=name, status="resolved", answer=answer.text))
    return api.ResolveManyResponse(toolsets=entries).model_dump_json().encode()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _not_json(result_json: str) -> api.ErrorBody | None:
    """Why ``result_json`` is refused, or None. Parsed as strictly as payloads are: ``NaN``
    and ``Infinity``, which Python's parser takes, are not JSON, and a consumer's parser
    refuses them."""
    try:
        json.loads(result_json, parse_constant=_refuse_constant)
    except ValueError:
        return api.ErrorBody(code="validation_error", message="result_json is not JSON")
    except RecursionError:
        return api.ErrorBody(
            code="validation_error",
            message="result_json is nested too deeply (the registry's JSON parser gives up)",
        )
    return None


async def _malformed(results: list[str]) -> list[api.ErrorBody | None]:
    """Why each result is refused for not being JSON, or None. Checked in a worker thread when
    the results are large (a registry whose body limit admits 5 MB registrations admits as much
    in results: 0.8 MB of records take about 6 ms to parse)."""
    if sum(len(result) for result in results) >= OFF_LOOP_BYTES:
        return await asyncio.to_thread(lambda: [_not_json(result) for result in results])
    return [_not_json(result) for result in results]


def _error_body(error: RegistryError | None) -> api.ErrorBody | None:
    return None if error is None else api.ErrorBody(code=error.code, message=error.message)


def _checked_store(store: object) -> Store:
    """``store`` if it has a :class:`Store`'s methods: anything else failed only when the
    application started, with the AttributeError the first missing method raised
    (``LocalRegistry(5)``: "'int' object has no attribute 'open'")."""
    methods = [name for name, value in vars(Store).items() if callable(value) and name[0] != "_"]
    missing = [name for name in methods if not callable(getattr(store, name, None))]
    if missing:
        lacks = "" if missing == methods else f", which has no {', '.join(missing)}"
        raise TypeError(
            f"the registry store must be a Store (an object with {', '.join(methods)}) or a "
            "description ('memory', 'sqlite:PATH' or 'redis://HOST:PORT/DB'); got "
            f"{type(store).__name__} {store!r}{lacks}"
        )
    return cast(Store, store)


def create_app(
    store: Store | str,
    *,
    tokens: TokenTable | None = None,
    limits: Limits | None = None,
    config: ServiceConfig | None = None,
) -> FastAPI:
    """The registry as an ASGI application. The store is opened, and its persisted catalog
    verified, when the application starts (a corrupt entry stops the start, naming its key)."""
    the_store = open_store(store) if isinstance(store, str) else _checked_store(store)
    operations = RegistryOperations(the_store, limits)
    table = tokens or TokenTable()
    settings = config or ServiceConfig()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await the_store.open()
        try:
            await operations.verify_catalog()
            yield
        finally:
            await the_store.close()

    app = FastAPI(
        title="agentgen tool registry",
        version=api.API_PREFIX.strip("/"),
        description=(
            "Providers publish toolsets and serve their calls; consumers list, resolve and call "
            "them. Every refusal is a 4xx with {'error': {'code', 'message'}}."
        ),
        lifespan=lifespan,
        responses=_ERRORS,
        # FastAPI's /docs and /redoc pages load their scripts from a public CDN, without a
        # token: a registry on a private network publishes /openapi.json only.
        docs_url=None,
        redoc_url=None,
    )
    app.state.operations = operations

    @app.exception_handler(RegistryError)
    async def registry_error(request: Request, exc: RegistryError) -> Response:
        return _error(exc.code, exc.message)

    @app.exception_handler(StoreError)
    async def store_error(request: Request, exc: StoreError) -> Response:
        return _error("service_unavailable", str(exc))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        # The last resort: a fault of the registry still answers with its error body, not a
        # bare "Internal Server Error" (the server logs the traceback).
        return _error(
            "internal_error",
            f"the registry failed to answer {request.method} {request.url.path} "
            f"({type(exc).__name__}); its log has the details: please report it",
        )

    @app.exception_handler(StarletteHTTPException)
    async def routing_error(request: Request, exc: StarletteHTTPException) -> Response:
        # FastAPI's own refusals (an unknown path or method) get the registry's error body too.
        where = f"{request.method} {request.url.path}"
        if exc.status_code == 405:
            allowed = next((v for k, v in (exc.headers or {}).items() if k.lower() == "allow"), "")
            answer = error_answer(
                "method_not_allowed",
                f"{where}: this path accepts only {allowed} (the registry's "
                f"operations are POSTs under {api.API_PREFIX}; GET /openapi.json lists them)",
            )
        elif exc.status_code == 404:
            answer = error_answer(
                "unknown_route",
                f"{where}: no such registry operation (GET /openapi.json lists them; is the "
                "registry URL the service's root, without a path?)",
            )
        else:
            return await http_exception_handler(request, exc)
        return Response(
            answer.body,
            status_code=exc.status_code,
            headers=exc.headers,
            media_type="application/json",
        )

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        answer = validation_answer(exc.errors())
        return Response(answer.body, status_code=answer.status, media_type="application/json")

    async def principal(request: Request) -> Principal:
        return table.authenticate(request.headers.get("authorization"))

    # The document says what the service requires: with tokens, every operation under /v1 a
    # bearer token (a client generated from it sends one); an open registry, none.
    bearer = HTTPBearer(
        auto_error=False,
        scheme_name="bearer",
        description="a registry token (docs/registry.md, Tokens and roles); a missing, unknown "
        "or revoked one is refused 401 unauthenticated, one outside its role 403 forbidden",
    )

    async def secured(
        request: Request,
        _token: HTTPAuthorizationCredentials | None = Security(bearer),  # noqa: B008
    ) -> Principal:
        return table.authenticate(request.headers.get("authorization"))

    Who = Depends(principal if table.empty else secured)

    def wait(ms: int) -> int:
        return min(ms, settings.max_wait_ms)

    #: Every operation, served by :class:`Dispatch` (FastAPI declares and documents them).
    routes: dict[str, Route] = {}

    def post(
        path: str, summary: str, *, headers: dict[str, str] | None = None, **options: Any
    ) -> Callable[[Endpoint], Any]:
        """Declare an operation; ``headers`` are the request headers its endpoint reads (its
        keyword argument by header name), which FastAPI documents from its signature."""

        def declare(endpoint: Endpoint) -> Any:
            full = f"{api.API_PREFIX}{path}"
            request = typing.get_type_hints(endpoint)["body"]
            routes[full] = Route(request, endpoint, headers or {})
            return app.post(full, summary=summary, **options)(endpoint)

        return declare

    @app.get("/health", response_model=api.HealthResponse, summary="the registry and its store")
    async def health() -> api.HealthResponse:
        now = await operations.health()
        return api.HealthResponse(store=the_store.description, time_ms=now)

    # ------------------------------------------------------------------ providers

    @post("/providers/register", "publish a toolset (or add a replica's lease)")
    async def register(body: api.RegisterRequest, who: Principal = Who) -> api.RegisterResponse:
        who.require_provider(body.toolset.name)
        done = await operations.register(
            Registration(
                toolset=body.toolset,
                schema_fingerprint=body.schema_fingerprint,
                revision=body.revision,
                provider_id=body.provider_id,
                incarnation_id=body.incarnation_id,
                lease_ms=body.lease_ms,
                wire_protocol_version=body.wire_protocol_version,
            )
        )
        return api.RegisterResponse(
            registration_token=done.registration_token,
            schema_fingerprint=done.schema_fingerprint,
            lease_expires_at_ms=done.lease_expires_at_ms,
        )

    @post("/providers/renew", "extend a provider lease")
    async def renew(body: api.RenewRequest, who: Principal = Who) -> api.LeaseResponse:
        who.require_provider(body.toolset)
        expires = await operations.renew(
            body.toolset,
            body.registration_token,
            body.provider_id,
            body.incarnation_id,
            body.lease_ms,
        )
        return api.LeaseResponse(lease_expires_at_ms=expires)

    @post("/providers/drain", "stop routing new calls to a lease")
    async def drain(body: api.DrainRequest, who: Principal = Who) -> api.LeaseResponse:
        who.require_provider(body.toolset)
        expires = await operations.drain(
            body.toolset,
            body.registration_token,
            body.provider_id,
            body.incarnation_id,
            body.settle_ms,
        )
        return api.LeaseResponse(lease_expires_at_ms=expires)

    @post("/providers/release", "give a lease up")
    async def release(body: api.LeaseRequest, who: Principal = Who) -> api.OkResponse:
        who.require_provider(body.toolset)
        await operations.release(
            body.toolset, body.registration_token, body.provider_id, body.incarnation_id
        )
        return api.OkResponse()

    @post("/providers/unregister", "withdraw a toolset's current admission")
    async def unregister(body: api.UnregisterRequest, who: Principal = Who) -> api.OkResponse:
        who.require_provider(body.toolset)
        await operations.unregister(body.toolset, body.expected_registration_token)
        return api.OkResponse()

    @post(
        "/providers/claim",
        "take calls to run (long poll)",
        headers={api.CALL_DEPTH_HEADER: "reads_call_depth"},
    )
    async def claim(
        body: api.ClaimRequest,
        who: Principal = Who,
        reads_call_depth: str | None = Header(
            default=None,
            alias=api.CALL_DEPTH_HEADER,
            description="1: the provider reads meta.call_depth (without it the claimed calls "
            "leave it out, for providers older than the field)",
        ),
    ) -> api.ClaimResponse:
        who.require_provider(body.toolset)
        # An older provider refuses a field it does not know, and with it every call of the
        # claim: it gets the calls as it knew them.
        depths = reads_call_depth == "1"
        calls = await operations.claim(
            body.toolset,
            body.registration_token,
            body.provider_id,
            body.incarnation_id,
            body.max_calls,
            wait(body.wait_ms),
            body.claim_operation_id,
        )
        return api.ClaimResponse(
            calls=[
                api.ClaimedCallBody(
                    tool_use_id=c.tool_use_id,
                    tool=c.tool,
                    payload_json=c.payload_json,
                    meta=c.meta if depths else c.meta.model_copy(update={"call_depth": 0}),
                    registration_token=c.registration_token,
                    execution_deadline_ms=c.execution_deadline_ms,
                )
                for c in calls
            ]
        )

    @post(
        "/providers/give_back",
        "end, as not run, the calls a claim took whose answer the provider could not read",
    )
    async def give_back(body: api.GiveBackRequest, who: Principal = Who) -> api.GiveBackResponse:
        who.require_provider(body.toolset)
        count = await operations.give_back_unrun(
            body.toolset,
            body.registration_token,
            body.provider_id,
            body.incarnation_id,
            body.claim_operation_id,
        )
        return api.GiveBackResponse(calls=count)

    @post("/providers/complete", "record a call's result")
    async def complete(body: api.CompleteRequest, who: Principal = Who) -> api.OkResponse:
        who.require_provider(body.toolset)
        [malformed] = await _malformed([body.result_json])
        if malformed is not None:
            raise RegistryError(malformed.code, malformed.message)
        await operations.complete(
            body.toolset,
            body.tool_use_id,
            body.provider_id,
            body.incarnation_id,
            body.status,
            body.result_json,
            body.message,
        )
        return api.OkResponse()

    @post(
        "/providers/complete_many",
        "record several results of one lease at once (each judged as /providers/complete would)",
    )
    async def complete_many(
        body: api.CompleteManyRequest, who: Principal = Who
    ) -> api.CompleteManyResponse:
        who.require_provider(body.toolset)
        # Each result is judged on its own: one that is not JSON is refused alone.
        malformed = await _malformed([done.result_json for done in body.completions])
        refusals = iter(
            await operations.complete_many(
                body.toolset,
                body.provider_id,
                body.incarnation_id,
                [
                    Completion(done.tool_use_id, done.status, done.result_json, done.message)
                    for done, bad in zip(body.completions, malformed, strict=True)
                    if bad is None
                ],
            )
        )
        answers = [
            api.CompletionOutcome(
                tool_use_id=done.tool_use_id, error=bad or _error_body(next(refusals))
            )
            for done, bad in zip(body.completions, malformed, strict=True)
        ]
        return api.CompleteManyResponse(completions=answers)

    @post(
        "/providers/overload",
        "give a claimed call back unrun (the consumer may retry)",
        headers={api.CLAIM_OPERATION_HEADER: "claim_operation_id"},
    )
    async def overload(
        body: api.OverloadRequest,
        who: Principal = Who,
        claim_operation_id: str | None = Header(
            default=None,
            alias=api.CLAIM_OPERATION_HEADER,
            description="the claim operation that took the call: an overload of an earlier "
            "claim of it changes nothing (without it, only the lease is checked)",
        ),
    ) -> api.OkResponse:
        who.require_provider(body.toolset)
        if claim_operation_id is not None and not IDENTIFIER.match(claim_operation_id):
            raise RegistryError(
                "validation_error",
                f"header {api.CLAIM_OPERATION_HEADER} {claim_operation_id[:200]!r} must match "
                f"{IDENTIFIER.pattern} (the claim_operation_id of the claim that took the call)",
            )
        await operations.report_overload(
            body.toolset,
            body.tool_use_id,
            body.provider_id,
            body.incarnation_id,
            claim_operation_id=claim_operation_id,
        )
        return api.OkResponse()

    # ------------------------------------------------------------------ consumers

    @post("/toolsets/list", "names of the active toolsets having every given tag")
    async def list_toolsets(body: api.ListRequest, who: Principal = Who) -> api.ListResponse:
        who.require_consumer()
        return api.ListResponse(toolsets=await operations.list_toolsets(body.tags))

    @post(
        "/toolsets/search",
        "names of the active toolsets whose name, description or a tag contains the query "
        "(ignoring case), having every given tag",
    )
    async def search_toolsets(body: api.SearchRequest, who: Principal = Who) -> api.ListResponse:
        who.require_consumer()
        return api.ListResponse(toolsets=await operations.search_toolsets(body.query, body.tags))

    @post(
        "/toolsets/resolve",
        "a toolset's declaration and admission token, from one read",
        response_model=api.ResolveResponse,
    )
    async def resolve(body: api.ResolveRequest, who: Principal = Who) -> Response:
        who.require_consumer()
        entry = await operations.resolve_entry(body.toolset)
        # Resolved at every planning activity: an admission's answer is encoded once.
        answer = (await _resolved([entry]))[_key(entry)]
        return Response(answer.body, media_type="application/json")

    @post(
        "/toolsets/resolve_many",
        "several toolsets (or every active one) from one read; unchanged answers omitted",
        response_model=api.ResolveManyResponse,
    )
    async def resolve_many(body: api.ResolveManyRequest, who: Principal = Who) -> Response:
        who.require_consumer()
        found = await operations.resolve_many(body.toolsets)
        answers = await _resolved([entry for _, entry in found if entry is not None])
        size = sum(len(answer.body) for answer in answers.values())
        if size >= OFF_LOOP_BYTES:
            # Each answer is escaped into a JSON string: 5 MB of answers take about 15 ms.
            encoded = await asyncio.to_thread(_resolve_many, found, body.known, answers)
        else:
            encoded = _resolve_many(found, body.known, answers)
        return Response(encoded, media_type="application/json")

    @post("/toolsets/check_admission", "whether an admission is current and has a provider")
    async def check_admission(
        body: api.CheckAdmissionRequest, who: Principal = Who
    ) -> api.CheckAdmissionResponse:
        who.require_any(body.toolset)
        ready = await operations.check_admission(body.toolset, body.expected_registration_token)
        return api.CheckAdmissionResponse(ready=ready)

    @post("/calls", "call a tool against the exact admission it was resolved from")
    async def call(body: api.CallRequestBody, who: Principal = Who) -> api.CallRefBody:
        who.require_consumer()
        request = CallRequest(
            toolset=body.toolset,
            tool=body.tool,
            payload_json=body.payload_json,
            meta=body.meta,
            expected_registration_token=body.expected_registration_token,
            wire_protocol_version=body.wire_protocol_version,
            caller=who,
        )
        if not body.wait_ms:
            return api.CallRefBody(**await operations.call(request))
        ref, outcome = await operations.call_and_wait(request, wait(body.wait_ms))
        answer = api.CallRefBody(**ref)
        if outcome.status != "pending":
            answer.result = api.ResultResponse(
                status=outcome.status, result_json=outcome.result_json, message=outcome.message
            )
        return answer

    @post("/calls/retry", "retry an overloaded call under the same admission")
    async def retry(body: api.RetryRequest, who: Principal = Who) -> api.CallRefBody:
        who.require_consumer()
        ref = await operations.retry(body.tool_use_id, body.expected_registration_token, caller=who)
        return api.CallRefBody(**ref)

    @post("/calls/result", "wait for a call's outcome (long poll)")
    async def result(body: api.ResultRequest, who: Principal = Who) -> api.ResultResponse:
        who.require_consumer()
        outcome = await operations.await_result(
            body.tool_use_id, body.registration_token, wait(body.wait_ms), caller=who
        )
        return api.ResultResponse(
            status=outcome.status, result_json=outcome.result_json, message=outcome.message
        )

    app.add_middleware(
        Dispatch, routes=routes, authenticate=table.authenticate, limit=settings.max_body_bytes
    )
    return app
