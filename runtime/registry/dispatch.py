"""Serving the registry's operations: the HTTP checks and answers every ``/v1`` POST shares.

FastAPI declares the operations (their paths, typed bodies and the OpenAPI document); this
module serves them. Each call to a tool crosses the service several times (the call, the
provider's claim and its completion), and FastAPI's per-request machinery (a stack of
middlewares, dependency solving, parsing the body twice, validating the answer again) cost
more than the registry's own work, so :class:`Dispatch` runs the same endpoint functions
directly, with the checks and answers FastAPI gave, in this order:

1. a missing, unknown or revoked token: ``401 unauthenticated``, before the body is read (a
   client without a valid token never gets its bytes parsed or validated);
2. a body over the limit: ``413 body_too_large`` (before reading it when its length is
   declared); a body that is not ``application/json``: ``415 unsupported_media_type``;
3. a body that is not JSON: ``400 malformed_json``;
4. a body that does not match the operation's model: ``422 validation_error``. Steps 3 and 4
   run in a worker thread for a body of :data:`OFF_LOOP_BYTES` or more (a registration of 2,000
   tools, about 5 MB, takes half a second to parse and validate: on the event loop, every long
   poll and request of the registry would wait for it), on the loop for smaller ones (most
   bodies: a thread hop would cost more than parsing them);
5. the endpoint: its answer (a model, or bytes it encoded itself), or the refusal it raised
   (``RegistryError``: its code's status; an unreachable store: ``503 service_unavailable``);
   a request still running when the server's graceful shutdown ends (a long poll) is answered
   ``503 service_unavailable`` too.

Anything else (``GET /health``, ``/openapi.json``, unknown paths and methods) goes to FastAPI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from agentgen.runtime.contracts.json_values import vanishing_number
from agentgen.runtime.registry import api
from agentgen.runtime.registry.auth import Principal
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.store import StoreError

__all__ = [
    "OFF_LOOP_BYTES",
    "Dispatch",
    "Endpoint",
    "Route",
    "error_answer",
    "read_body",
    "validation_answer",
]

#: Called with the body and the principal, and with the request headers its route names (by
#: keyword; None when absent).
Endpoint = Callable[..., Awaitable[BaseModel | Response]]
_JSON = [(b"content-type", b"application/json")]
_TIME = api.TIME_HEADER.encode()
#: Bodies this large or larger are parsed and validated off the event loop. The densest bodies
#: (registrations: many small objects) cost about 0.1 ms per KiB, so a body just under it holds
#: the loop for about 2 ms, and a thread hop (about 0.1 ms) is small beside what it saves.
OFF_LOOP_BYTES = 16 * 1024


@dataclass(frozen=True)
class Route:
    """One operation: the model its body must match and the function that answers it."""

    request: type[BaseModel]
    endpoint: Endpoint
    #: Request headers the endpoint reads: its keyword argument, by header name (lower case).
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    async def send(self, send: Send) -> None:
        headers = [
            *_JSON,
            (b"content-length", str(len(self.body)).encode()),
            # The registry's clock, which its deadlines and expiries are on (api.TIME_HEADER).
            (_TIME, str(time.time_ns() // 1_000_000).encode()),
        ]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


def error_answer(code: str, message: str) -> Answer:
    body = api.ErrorResponse(error=api.ErrorBody(code=code, message=message))
    return Answer(api.ERROR_STATUS.get(code, 400), body.model_dump_json().encode())


def validation_answer(errors: Sequence[Mapping[str, Any]]) -> Answer:
    """A body that did not parse or match its model (FastAPI's locations start at "body")."""
    for error in errors:
        if error.get("type") == "json_invalid":
            # The parser's reason and place (never the input): "recursion limit exceeded at
            # line 1 column 202" says what to change in a body that is deeply nested JSON.
            reason = (error.get("ctx") or {}).get("error")
            return error_answer(
                "malformed_json",
                "the request body is not valid JSON" + (f" ({reason})" if reason else ""),
            )
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        parts.append(f"{where or '(body)'}: {error.get('msg')}")
    return error_answer("validation_error", "; ".join(parts))


async def read_body(scope: Scope, receive: Receive, send: Send, limit: int) -> bytes | None:
    """The request's JSON body, or None once a refusal (413, 415) was sent."""
    declared = b""
    media = b""
    for name, value in scope["headers"]:
        lowered = name.lower()
        if lowered == b"content-length":
            declared = value
        elif lowered == b"content-type":
            media = value
    if declared.isdigit() and int(declared) > limit:
        await _too_large(limit).send(send)
        return None
    kind = media.decode("latin-1").split(";")[0].strip().lower()
    if kind != "application/json":
        await error_answer(
            "unsupported_media_type",
            f"request bodies are JSON: send Content-Type: application/json, not "
            f"{kind or 'nothing'!r}",
        ).send(send)
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            await _too_large(limit).send(send)
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _too_large(limit: int) -> Answer:
    return error_answer("body_too_large", f"request bodies are limited to {limit} bytes")


class Dispatch:
    """ASGI middleware serving the registry's operations (see the module docstring); every
    other request goes to ``app``."""

    def __init__(
        self,
        app: ASGIApp,
        routes: Mapping[str, Route],
        authenticate: Callable[[str | None], Principal],
        limit: int,
    ) -> None:
        self.app = app
        self.routes = dict(routes)
        self.authenticate = authenticate
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self.routes.get(scope["path"]) if scope["type"] == "http" else None
        if route is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            who = self.authenticate(_authorization(scope))
        except RegistryError as exc:
            await error_answer(exc.code, exc.message).send(send)
            return
        body = await read_body(scope, receive, send, self.limit)
        if body is None:
            return
        try:
            answer = await self._answer(route, who, body, _headers(scope, route.headers))
        except asyncio.CancelledError:
            # uvicorn cancels the requests still running when its graceful shutdown is over
            # (long polls): they end with the answer clients retry, not a 500 and a traceback.
            answer = error_answer(
                "service_unavailable",
                "the registry is shutting down: retry (against it once it is back, or another "
                "registry sharing its store)",
            )
        await answer.send(send)

    async def _answer(
        self, route: Route, who: Principal, body: bytes, headers: Mapping[str, str | None]
    ) -> Answer:
        if len(body) >= OFF_LOOP_BYTES:
            parsed = await asyncio.to_thread(_parse, route.request, body)
        else:
            parsed = _parse(route.request, body)
        if isinstance(parsed, Answer):
            return parsed
        try:
            result = await route.endpoint(parsed, who, **headers)
        except RegistryError as exc:
            return error_answer(exc.code, exc.message)
        except StoreError as exc:
            return error_answer("service_unavailable", str(exc))
        if isinstance(result, Response):
            return Answer(result.status_code, bytes(result.body))
        return Answer(200, result.model_dump_json(by_alias=True).encode())


def _parse(model: type[BaseModel], body: bytes) -> BaseModel | Answer:
    """The body as the operation's model, or the refusal to answer (400 or 422): the refusal is
    made here too, since listing the errors of a large body is work of the same size."""
    if not body:
        return validation_answer([{"loc": ("body",), "msg": "Field required"}])
    if model is api.RegisterRequest and (vanished := vanishing_number(body)) is not None:
        # A declaration's numbers are read as doubles; this one would be stored, fingerprinted
        # and advertised as 0 unseen. (Other bodies keep theirs: call arguments are exact.)
        where, written = vanished
        shown = written if len(written) <= 40 else f"{written[:20]}...{written[-12:]}"
        message = (
            f"the number {shown} is not 0 but reads as 0 (declarations are read as doubles, "
            "and none is this close to zero): write 0 if 0 is meant"
        )
        return validation_answer([{"loc": ("body", *where), "msg": message}])
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        return validation_answer(exc.errors())


def _headers(scope: Scope, wanted: Mapping[str, str]) -> dict[str, str | None]:
    """The values of the headers a route reads, by its keyword arguments (None if absent)."""
    found: dict[str, str | None] = dict.fromkeys(wanted.values())
    if wanted:
        for name, value in scope["headers"]:
            keyword = wanted.get(name.decode("latin-1").lower())
            if keyword is not None:
                found[keyword] = value.decode("latin-1")
    return found


def _authorization(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            decoded: str = value.decode("latin-1")
            return decoded
    return None
