"""The registry service: an ASGI application (FastAPI) over :class:`RegistryOperations`.

``create_app`` builds it for a store; ``agentgen registry serve`` runs it with uvicorn. Every
operation is a ``POST`` of a typed JSON body under ``/v1`` (``GET /health`` and ``GET
/openapi.json`` aside). Every refusal is a 4xx answer whose body is ``{"error": {"code": ...,
"message": ...}}`` with a machine-readable code (``docs/registry.md`` lists them); only an
unreachable store answers 503. Bodies larger than the configured limit (1 MiB by default) are
refused before they are parsed.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentgen.runtime.registry import api
from agentgen.runtime.registry.admission import CallRequest, CatalogEntry, Limits, Registration
from agentgen.runtime.registry.auth import Principal, TokenTable
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.operations import RegistryOperations
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


def _error(code: str, message: str) -> JSONResponse:
    body = api.ErrorResponse(error=api.ErrorBody(code=code, message=message))
    return JSONResponse(body.model_dump(), status_code=api.ERROR_STATUS.get(code, 400))


class BodyLimit:
    """Refuses bodies over the limit (413) and non-JSON bodies (415) before any parsing."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        too_large = _error("body_too_large", f"request bodies are limited to {self.limit} bytes")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            await too_large(scope, receive, send)
            return
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            await _error(
                "unsupported_media_type",
                f"request bodies are JSON: send Content-Type: application/json, not "
                f"{media or 'nothing'!r}",
            )(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": api.ErrorResponse, "description": ", ".join(sorted(codes))}
    for status, codes in {
        s: {c for c, t in api.ERROR_STATUS.items() if t == s}
        for s in set(api.ERROR_STATUS.values())
    }.items()
}


_RESOLVED: OrderedDict[tuple[str, str], bytes] = OrderedDict()


def _resolved(entry: CatalogEntry) -> bytes:
    """The resolve answer of an admission, encoded once: the fingerprint covers every field of
    the declaration, so (fingerprint, token) names the answer exactly."""
    key = (entry.schema_fingerprint, entry.registration_token)
    body = _RESOLVED.get(key)
    if body is None:
        answer = api.ResolveResponse(
            toolset=entry.toolset, registration_token=entry.registration_token
        )
        body = _RESOLVED[key] = answer.model_dump_json().encode()
        if len(_RESOLVED) > 1024:
            _RESOLVED.popitem(last=False)
    return body


def create_app(
    store: Store | str,
    *,
    tokens: TokenTable | None = None,
    limits: Limits | None = None,
    config: ServiceConfig | None = None,
) -> FastAPI:
    """The registry as an ASGI application. The store is opened, and its persisted catalog
    verified, when the application starts (a corrupt entry stops the start, naming its key)."""
    the_store = open_store(store) if isinstance(store, str) else store
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
    )
    app.state.operations = operations

    @app.exception_handler(RegistryError)
    async def registry_error(request: Request, exc: RegistryError) -> JSONResponse:
        return _error(exc.code, exc.message)

    @app.exception_handler(StoreError)
    async def store_error(request: Request, exc: StoreError) -> JSONResponse:
        return _error("service_unavailable", str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return _error("malformed_json", "the request body is not valid JSON")
        parts = []
        for error in errors[:5]:
            where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
            parts.append(f"{where or '(body)'}: {error.get('msg')}")
        return _error("validation_error", "; ".join(parts))

    async def principal(request: Request) -> Principal:
        return table.authenticate(request.headers.get("authorization"))

    Who = Depends(principal)

    def wait(ms: int) -> int:
        return min(ms, settings.max_wait_ms)

    def post(path: str, summary: str) -> Callable[[Callable[..., Awaitable[Any]]], Any]:
        return app.post(f"{api.API_PREFIX}{path}", summary=summary)

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

    @post("/providers/claim", "take calls to run (long poll)")
    async def claim(body: api.ClaimRequest, who: Principal = Who) -> api.ClaimResponse:
        who.require_provider(body.toolset)
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
                    meta=c.meta,
                    registration_token=c.registration_token,
                    execution_deadline_ms=c.execution_deadline_ms,
                )
                for c in calls
            ]
        )

    @post("/providers/complete", "record a call's result")
    async def complete(body: api.CompleteRequest, who: Principal = Who) -> api.OkResponse:
        who.require_provider(body.toolset)
        try:
            json.loads(body.result_json)
        except ValueError:
            raise RegistryError("validation_error", "result_json is not JSON") from None
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

    @post("/providers/overload", "give a claimed call back unrun (the consumer may retry)")
    async def overload(body: api.OverloadRequest, who: Principal = Who) -> api.OkResponse:
        who.require_provider(body.toolset)
        await operations.report_overload(
            body.toolset, body.tool_use_id, body.provider_id, body.incarnation_id
        )
        return api.OkResponse()

    # ------------------------------------------------------------------ consumers

    @post("/toolsets/list", "names of the active toolsets having every given tag")
    async def list_toolsets(body: api.ListRequest, who: Principal = Who) -> api.ListResponse:
        who.require_consumer()
        return api.ListResponse(toolsets=await operations.list_toolsets(body.tags))

    @app.post(
        f"{api.API_PREFIX}/toolsets/resolve",
        summary="a toolset's declaration and admission token, from one read",
        response_model=api.ResolveResponse,
    )
    async def resolve(body: api.ResolveRequest, who: Principal = Who) -> Response:
        who.require_consumer()
        entry = await operations.resolve_entry(body.toolset)
        # Resolved at every planning activity: an admission's answer is encoded once.
        return Response(_resolved(entry), media_type="application/json")

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
        ref = await operations.call(
            CallRequest(
                toolset=body.toolset,
                tool=body.tool,
                payload_json=body.payload_json,
                meta=body.meta,
                expected_registration_token=body.expected_registration_token,
                wire_protocol_version=body.wire_protocol_version,
            )
        )
        answer = api.CallRefBody(**ref)
        if body.wait_ms:
            outcome = await operations.await_result(
                answer.tool_use_id, answer.registration_token, wait(body.wait_ms)
            )
            if outcome.status != "pending":
                answer.result = api.ResultResponse(
                    status=outcome.status,
                    result_json=outcome.result_json,
                    message=outcome.message,
                )
        return answer

    @post("/calls/retry", "retry an overloaded call under the same admission")
    async def retry(body: api.RetryRequest, who: Principal = Who) -> api.CallRefBody:
        who.require_consumer()
        ref = await operations.retry(body.tool_use_id, body.expected_registration_token)
        return api.CallRefBody(**ref)

    @post("/calls/result", "wait for a call's outcome (long poll)")
    async def result(body: api.ResultRequest, who: Principal = Who) -> api.ResultResponse:
        who.require_consumer()
        outcome = await operations.await_result(
            body.tool_use_id, body.registration_token, wait(body.wait_ms)
        )
        return api.ResultResponse(
            status=outcome.status, result_json=outcome.result_json, message=outcome.message
        )

    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    return app
