"""The registry's HTTP client (httpx2), for consumers and providers.

:class:`HttpRegistryClient` implements the runtime's :class:`RegistryClient` protocol (and the
provider operations the SDK uses); :class:`HttpResultStream` implements :class:`ResultStream` by
long-polling a call's outcome. So a live registry is wired exactly like any other::

    client = HttpRegistryClient("http://127.0.0.1:9090", token=...)
    rt.register_registry("company", client, HttpResultStream(client))

or, from a design's generated settings, ``connect_registry(rt, REGISTRIES["company"])``.

Every request is safe to repeat (registrations are idempotent, calls attach by their identity,
claims carry an operation ID, completions repeat exactly), so transport failures and 503
answers are retried with exponential backoff (the design's ``Retry`` settings); every refusal
is raised as :class:`RegistryError` with the registry's machine-readable code.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import WIRE_PROTOCOL_VERSION
from agentgen.runtime.contracts.validation_errors import first_error
from agentgen.runtime.registry import api
from agentgen.runtime.registry.admission import CallMeta
from agentgen.runtime.registry.answers import kept_answer
from agentgen.runtime.registry.client import (
    CallOutcome,
    CallRef,
    RegistryError,
    ResolvedToolset,
    ToolCallMeta,
)
from agentgen.runtime.registry.client_options import (
    bearer_token_problem,
    checked_wait_ms,
    retry_problem,
    retry_type_problem,
)
from agentgen.runtime.telemetry.spans import registry_retry
from agentgen.runtime.visible import visible

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "ENV_TOKEN",
    "HttpRegistryClient",
    "HttpResultStream",
    "RegistryConnections",
    "RetryPolicy",
    "connect_registries",
    "connect_registry",
]

#: The bearer token a client sends when none is given.
ENV_TOKEN = "AGENTGEN_REGISTRY_TOKEN"
DEFAULT_TIMEOUT = 10.0
#: Resolve answers a client keeps (by toolset) to be told they are unchanged.
KEPT_ANSWERS = 4096
#: Outcomes that came back with their call a client keeps until the result stream asks.
KEPT_EARLY_OUTCOMES = 4096
#: Most times a retry's backoff doubles (far past any ``backoff_max`` in use).
_MAX_DOUBLINGS = 64
#: Most characters of a failed answer's error message a client repeats.
_FAILURE_CHARS = 1000
#: Shortest time (seconds) from one poll for a call's outcome to the next when the first was
#: answered ``pending``: a poll that does not wait (``poll_ms=0``) is answered at once.
_POLL_INTERVAL = 0.1
#: Sent with every claim: this client reads a claimed call's ``meta.call_depth``.
_READS_CALL_DEPTH = {api.CALL_DEPTH_HEADER: "1"}
B = TypeVar("B", bound=BaseModel)
T = TypeVar("T")
V = TypeVar("V")


class _RetrySettings(Protocol):
    @property
    def max_retries(self) -> int: ...

    @property
    def backoff_base(self) -> float: ...

    @property
    def backoff_max(self) -> float: ...


class _Runtime(Protocol):
    """What :func:`connect_registry` needs of a ``Runtime``."""

    def registry(self, name: str) -> object: ...

    def register_registry(
        self, name: str, registry_client: Any, result_stream: Any, *, settings: Any = None
    ) -> None: ...


class _Settings(Protocol):
    """A generated ``RegistrySettings`` (``gen/registries.py``)."""

    @property
    def name(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def timeout(self) -> float | None: ...

    @property
    def retry(self) -> _RetrySettings | None: ...


@dataclass(frozen=True)
class RetryPolicy:
    """Retry a failed request ``max_retries`` times, waiting ``backoff_base * 2**attempt``
    (at most ``backoff_max``) seconds, with jitter, between attempts.

    Held to the design's ``Retry`` bounds when built (``ValueError`` naming the option, and
    ``TypeError`` for an option of the wrong type, as every public constructor does): a
    policy built by hand, or from settings written by hand, took a billion retries or a day's
    backoff and held a provider or a command through an outage for days."""

    max_retries: int = 3
    backoff_base: float = 0.1
    backoff_max: float = 2.0

    def __post_init__(self) -> None:
        wrong_type = retry_type_problem(self.max_retries, self.backoff_base, self.backoff_max)
        if wrong_type is not None:
            raise TypeError(f"RetryPolicy {wrong_type}")
        problem = retry_problem(self.max_retries, self.backoff_base, self.backoff_max)
        if problem is not None:
            raise ValueError(f"RetryPolicy {problem}")

    def delay(self, attempt: int) -> float:
        # The exponent is capped: a wait that outlasts a thousand attempts (a result stream
        # or a provider waiting out a long outage) overflowed a float computing 2**attempt.
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** min(attempt, _MAX_DOUBLINGS))
        return float(ceiling * (0.5 + random.random() / 2))


class _Closing:
    """``async with`` closes it (:meth:`aclose`)."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


#: Refusals the registry never answers itself (it has no request timeout and no rate limit):
#: a 408 or 429 comes from what stands between client and registry (a proxy, a gateway) and
#: says to ask again later, so it is retried as a 5xx is, never taken for the registry's
#: ``protocol_error`` (which stops a provider for good).
_PASSING_REFUSALS = frozenset({408, 429})


def _says_later(status: int) -> bool:
    """Whether an HTTP status says to ask again later (a 5xx, or a 408 or 429 from what
    stands between client and registry): the registry out of reach, never a protocol error."""
    return status >= 500 or status in _PASSING_REFUSALS


#: What a refusal whose body is no registry error means, by its HTTP status. The registry
#: answers every refusal with its JSON error body (an unknown path too: ``unknown_route``), so
#: such a page comes from a proxy or gateway in front of it (or another service at the URL):
#:
#: - 401 and 403: the gateway refused the request's credentials. Asking again cannot change
#:   that: ``unauthenticated`` and ``forbidden``, as the registry's own refusals, which stop a
#:   provider with an error naming the URL and saying to check the credentials;
#: - 404: the gateway has no route to the registry: one being deployed or reconfigured (its
#:   routes come back), or a URL that is not the registry's root. Retried as a 5xx is
#:   (``service_unavailable`` once the retries are spent): a provider rides out the deploy
#:   instead of stopping for good, and one whose URL is wrong stops when its lease, which no
#:   renewal reaches, runs out. Where the client first asks (a registration, a consumer's
#:   call) the retries are few and the error names the page;
#: - 413: the gateway's body limit is below the registry's: ``body_too_large``, as the
#:   registry's own (a provider then completes the call with ``result_too_large``).
#:
#: Any other such page (400, 405, 415...) is a ``protocol_error``.
_PAGE_CODES = {401: "unauthenticated", 403: "forbidden", 413: "body_too_large"}


def _page_code(status: int) -> str:
    """The error code of a refusal with ``status`` whose body is no registry error."""
    if _says_later(status) or status == 404:
        return "service_unavailable"
    return _PAGE_CODES.get(status, "protocol_error")


class HttpRegistryClient(_Closing):
    """A connection to one registry service; close it with :meth:`aclose` (or ``async with``)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        name: str = "",
        call_wait_ms: int | None = None,
    ) -> None:
        import httpx2

        given: object = url  # the annotation is not checked at run time
        if not isinstance(given, str):  # urlsplit failed on it with a bare AttributeError
            owner = f"registry {name!r}" if name else "HttpRegistryClient"
            raise TypeError(
                f"{owner}: the URL must be a string such as 'http://127.0.0.1:9090', not "
                f"{type(given).__name__}"
            )
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"registry {name or url!r}: {url!r} is not an http(s) URL; agentgen's registry "
                "service speaks HTTP (run `agentgen registry serve` and point the design's URL "
                "at it, or pass url=...)"
            )
        self.url = url.rstrip("/")
        # Messages and logs name the registry without the password of a URL that has one
        # (``https://user:secret@host``): errors travel to logs, traces and run outcomes.
        host = parts.netloc.rpartition("@")[2]
        self.shown_url = urlunsplit(parts._replace(netloc=host)).rstrip("/")
        self.name = name or host
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        if retry is not None and not isinstance(retry, RetryPolicy):
            # Only a RetryPolicy is held to the design's Retry bounds when built.
            raise TypeError(
                f"registry {self.name!r}: retry must be a RetryPolicy(max_retries, "
                f"backoff_base, backoff_max), not {type(retry).__name__}"
            )
        self.retry = retry or RetryPolicy()
        #: How long a call waits for its outcome before returning only its reference: a
        #: second, well within the request timeout (the runtime bounds each call request by
        #: the registry's Timeout).
        self.call_wait_ms = (
            checked_wait_ms(call_wait_ms, "call_wait_ms", f"registry {self.name!r}")
            if call_wait_ms is not None
            else min(1_000, int(self.timeout * 250))
        )
        #: Outcomes that came back with their call, until the result stream asks for them
        #: (the oldest first). A run cancelled between the call and its wait never asks: at
        #: most KEPT_EARLY_OUTCOMES are kept, and an outcome forgotten is asked of the
        #: registry, which keeps it for the call's result retention.
        self._early: dict[str, api.ResultResponse] = {}
        #: The last resolve answer of each toolset (least recently resolved first), so that a
        #: batch resolve can name what it holds and be answered ``unchanged``; kept as text
        #: (see :mod:`~agentgen.runtime.registry.answers`).
        self._answers: dict[str, ResolvedToolset] = {}
        source = "token="
        if token is None:
            source, token = f"${ENV_TOKEN}", os.environ.get(ENV_TOKEN) or None
        headers = {"content-type": "application/json"}
        secret: object = token  # the annotation is not checked at run time
        if secret is not None and not isinstance(secret, str):  # iterated as characters below
            raise TypeError(
                f"registry {self.name!r}: the bearer token must be a string, not "
                f"{type(secret).__name__} (the token is not shown here)"
            )
        if token:
            problem = bearer_token_problem(token)
            if problem is not None:
                raise ValueError(
                    f"registry {self.name!r}: the bearer token given by {source} cannot be "
                    f"sent: {problem}. A token is visible ASCII only; one read from a file "
                    "often ends with a newline: strip it where the token is read (the token "
                    "is not shown here)"
                )
            headers["authorization"] = f"Bearer {token}"
        if transport is None:
            # TCP_NODELAY: a request goes out as headers then body; with Nagle's algorithm the
            # body waits for the server's delayed ACK (about 40 ms) on every request.
            transport = httpx2.AsyncHTTPTransport(
                limits=httpx2.Limits(max_connections=256, max_keepalive_connections=64),
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            )
        self._http = httpx2.AsyncClient(
            base_url=self.url, headers=headers, timeout=self.timeout, transport=transport
        )
        self._headers = httpx2.Headers({"accept": "application/json", **headers})
        self._urls: dict[str, httpx2.URL] = {}
        #: The registry's clock minus this process's monotonic clock, in seconds, from its
        #: last answer that said (``api.TIME_HEADER``); None until then.
        self._clock_offset: float | None = None

    @classmethod
    def from_settings(
        cls, settings: _Settings, *, token: str | None = None, url: str | None = None
    ) -> HttpRegistryClient:
        """A client for a design's ``Registry(...)``: its URL (unless ``url`` is given), its
        ``Timeout`` and ``Retry`` settings. An ``APIVersion`` other than the one this client
        speaks is refused rather than ignored: the design asked for an API it would not get."""
        spoken = api.API_PREFIX.strip("/")
        version = getattr(settings, "api_version", spoken)
        if version != spoken:
            raise ValueError(
                f"registry {settings.name!r}: the design asks for API version {version!r}; "
                f"agentgen's registry client speaks {spoken!r} (the service's "
                f"{api.API_PREFIX}/... API): remove APIVersion from the Registry or set "
                f"APIVersion({spoken!r}), or connect a client of your own"
            )
        retry = settings.retry
        try:
            policy = (
                RetryPolicy(retry.max_retries, retry.backoff_base, retry.backoff_max)
                if retry is not None
                else None
            )
        except (TypeError, ValueError) as exc:
            # Settings written or edited by hand: name the registry whose Retry is at fault.
            raise type(exc)(
                f"registry {settings.name!r}: its Retry settings cannot be used: {exc}; "
                "regenerate them from the design or give values within these bounds"
            ) from None
        return cls(
            url or settings.url,
            token=token,
            timeout=settings.timeout,
            retry=policy,
            name=settings.name,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def registry_time_ms(self) -> float:
        """The registry's clock now (Unix milliseconds): what its last answer said it was
        (``api.TIME_HEADER``), carried forward by this process's monotonic clock.

        Call deadlines and result expiries are on the registry's clock; this host's may be
        minutes off (a provider ahead would fail every call at once, a consumer ahead declare
        a running call's outcome unknown). Before any answer, or from a registry too old to
        send its clock, it is this host's clock."""
        if self._clock_offset is None:
            return time.time() * 1000
        return (time.monotonic() + self._clock_offset) * 1000

    # ------------------------------------------------------------------ transport

    async def _post(
        self,
        path: str,
        body: BaseModel,
        answer: type[B],
        *,
        wait_ms: int = 0,
        headers: Mapping[str, str] | None = None,
    ) -> B:
        return await self._exchange(
            path, body, answer.model_validate_json, wait_ms=wait_ms, headers=headers
        )

    async def _exchange(
        self,
        path: str,
        body: BaseModel,
        read: Callable[[bytes], T],
        *,
        wait_ms: int = 0,
        headers: Mapping[str, str] | None = None,
    ) -> T:
        """The answer, as ``read`` reads its bytes (a pydantic ``ValidationError`` it raises
        is the registry's ``protocol_error``)."""
        import httpx2

        content = body.model_dump_json(exclude_unset=False).encode()
        timeout = self.timeout + wait_ms / 1000
        attempt = 0
        while True:
            problem: str
            kind: str  # what went wrong without the words that came with it (telemetry's)
            try:
                response = await self._send(path, content, timeout, headers)
            except httpx2.LocalProtocolError as exc:
                raise self._unsendable(path, exc) from None
            except httpx2.TransportError as exc:
                kind = type(exc).__name__
                problem = f"{kind}: {exc}"
            except httpx2.DecodingError as exc:
                raise self._undecodable(path, exc) from None
            else:
                if _says_later(response.status_code):
                    kind = f"HTTP {response.status_code}"
                    problem = f"{kind}: {_failure_text(response)}"
                elif 300 <= response.status_code < 400:
                    raise self._redirected(response)
                elif response.status_code >= 400:
                    refusal = self._refusal(response)
                    if refusal.code != "service_unavailable":
                        raise refusal
                    # A gateway's page saying it has no route to the registry (a 404 that
                    # is no registry error): asked again, as a 5xx.
                    kind = f"HTTP {response.status_code}"
                    problem = f"{kind}: {_page_text(response)}"
                else:
                    try:
                        return read(response.content)
                    except ValidationError as exc:
                        raise RegistryError(
                            "protocol_error",
                            f"registry {self.name!r} answered {path} with an unexpected body: "
                            f"{first_error(exc)}",
                        ) from None
            if attempt >= self.retry.max_retries:
                raise RegistryError(
                    "service_unavailable",
                    f"registry {self.name!r} at {self.shown_url}: {path} failed after "
                    f"{attempt + 1} attempt(s): {problem}",
                )
            delay = self.retry.delay(attempt)
            registry_retry(self.name, path, attempt + 1, kind, delay, detail=problem)
            await asyncio.sleep(delay)
            attempt += 1

    async def _send(
        self,
        path: str,
        content: bytes,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        """One POST, built once per path and sent as it is: every request is the same kind
        (JSON to a fixed URL), so building it through the client's merging of URLs, headers and
        cookies, which cost about as much as the exchange itself, is skipped. The client still
        sends it (its transport, or a proxy the environment names)."""
        import httpx2

        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx2.URL(f"{self.url}{api.API_PREFIX}{path}")
        sent = self._headers
        if headers:
            sent = self._headers.copy()
            sent.update(headers)
        request = httpx2.Request(
            "POST",
            url,
            headers=sent,
            content=content,
            extensions={"timeout": httpx2.Timeout(timeout).as_dict()},
        )
        response = await self._http.send(request)
        stamp = response.headers.get(api.TIME_HEADER)
        if stamp is not None and stamp.isdigit():
            self._clock_offset = int(stamp) / 1000 - time.monotonic()
        return response

    def _unsendable(self, path: str, exc: httpx2.LocalProtocolError) -> RegistryError:
        """httpx refused to send the request: the same request fails the same way, so it is
        not retried, and httpx's words are not repeated (they quote the offending header,
        which may be the bearer token)."""
        return RegistryError(
            "protocol_error",
            f"registry {self.name!r} at {self.shown_url}: {path} could not be sent: httpx "
            f"refused the request as malformed ({type(exc).__name__}; its text is not shown, as "
            "it may quote the Authorization header). Check the headers this client sends (its "
            "token) and the transport it was given",
        )

    def _undecodable(self, path: str, exc: httpx2.DecodingError) -> RegistryError:
        """The answer's body does not decode as its ``Content-Encoding`` says: an answer that
        cannot be read, as one of an unexpected shape (httpx raised its own exception, which
        escaped every caller, the provider SDK's claim loop included)."""
        return RegistryError(
            "protocol_error",
            f"registry {self.name!r} at {self.shown_url} answered {path} with a body that "
            f"cannot be decoded as its Content-Encoding says ({type(exc).__name__}: {exc}): "
            "check what stands between this client and the registry (a proxy rewriting "
            "answers)",
        )

    def _redirected(self, response: httpx2.Response) -> RegistryError:
        """A redirect (an http URL a gateway sends to https, a moved host): not followed, since
        a POST redirected may lose its body or be sent twice; its body was read as an answer,
        and the error said only that it had an unexpected shape."""
        location = visible(response.headers.get("location", "")[:200]) or "nowhere said"
        return RegistryError(
            "protocol_error",
            f"registry {self.name!r} at {self.shown_url} answered "
            f"{_api_path(response.request.url.path)} with HTTP {response.status_code}, a "
            f"redirect to {location}, which the client does not follow: set the registry's URL "
            "to where it redirects (https:// for a gateway that sends http there)",
        )

    def _refusal(self, response: httpx2.Response) -> RegistryError:
        try:
            error = api.ErrorResponse.model_validate_json(response.content).error
        except ValidationError:
            # Not the registry's words: a gateway's page, read by its status (_PAGE_CODES).
            # One that says "later" (/health is not retried) is the registry out of reach.
            status = response.status_code
            answered = (
                f"registry {self.name!r} at {self.shown_url} answered "
                f"{_api_path(response.request.url.path)} with HTTP {status} and"
            )
            code = _page_code(status)
            if code in ("unauthenticated", "forbidden"):
                return RegistryError(
                    code,
                    f"{answered} a page that is no registry error: a proxy or gateway in front "
                    "of the registry refused the request's credentials. Check the credentials "
                    f"this client sends (its bearer token: token= or ${ENV_TOKEN}) and what "
                    f"the gateway at that URL requires: {visible(response.text[:200])}",
                )
            if code == "body_too_large":
                return RegistryError(
                    code,
                    f"{answered} a page that is no registry error: a proxy or gateway in front "
                    "of the registry refused the request's body as too large (its limit is "
                    "below the registry's --max-body; raise it, nginx's client_max_body_size "
                    f"for instance): {visible(response.text[:200])}",
                )
            return RegistryError(code, f"{answered} {_page_text(response)}")
        if error.code in ("unauthenticated", "forbidden"):
            # A token problem is the configuration of one registry's client: say which one.
            return RegistryError(
                error.code, f"registry {self.name!r} at {self.shown_url}: {error.message}"
            )
        return RegistryError(error.code, error.message)

    # ------------------------------------------------------------------ consumers

    async def list_toolsets(self, tags: Sequence[str] = ()) -> list[str]:
        answer = await self._post(
            "/toolsets/list", api.ListRequest(tags=list(tags)), api.ListResponse
        )
        return answer.toolsets

    async def search_toolsets(self, query: str, tags: Sequence[str] = ()) -> list[str]:
        """Names of the active toolsets whose name, description or a tag contains ``query``
        (ignoring case), having every tag of ``tags``: for people and tools that browse a
        registry (planning activities read it by name or whole)."""
        answer = await self._post(
            "/toolsets/search", api.SearchRequest(query=query, tags=list(tags)), api.ListResponse
        )
        return answer.toolsets

    async def resolve_toolset(self, name: str) -> ResolvedToolset:
        """The toolset and its admission token, with the digest of the answer it was read
        from (planning catalogs recognise an unchanged toolset by it). The answer is kept as
        text (:class:`~agentgen.runtime.contracts.toolset_text.ToolsetText`): its token and
        the toolset's own fields are read now, its tools when they are compiled."""
        resolved = await self._exchange(
            "/toolsets/resolve", api.ResolveRequest(toolset=name), kept_answer
        )
        return self._keep(name, resolved)

    def _keep(self, name: str, resolved: ResolvedToolset) -> ResolvedToolset:
        _keep_latest(self._answers, name, resolved, KEPT_ANSWERS)
        return resolved

    async def resolve_toolsets(
        self, names: Sequence[str] | None = None
    ) -> list[tuple[str, ResolvedToolset | RegistryError]]:
        """Resolve ``names`` (every active toolset when None) in one request, which names the
        digest of every answer this client holds: the registry answers ``unchanged`` for
        those whose answer would be byte for byte the same, and the held answer is handed out
        again (the runtime never changes a resolved toolset). Answers are handed out as text
        (:class:`~agentgen.runtime.contracts.toolset_text.ToolsetText`): their tools are
        parsed and checked when a planning catalog compiles them."""
        held = self._answers
        # The answers this request names, as they are now: "unchanged" means unchanged from
        # these. Other requests of the client (concurrent activities) may keep other answers
        # meanwhile, an older one among them when its reply was the slower.
        named = {
            n: r
            for n, r in (held.items() if names is None else ((n, held.get(n)) for n in names))
            if r is not None and r.digest
        }
        known = {n: r.digest for n, r in named.items() if r.digest}
        answer = await self._post(
            "/toolsets/resolve_many",
            api.ResolveManyRequest(toolsets=None if names is None else list(names), known=known),
            api.ResolveManyResponse,
        )
        if names is not None and [e.name for e in answer.toolsets] != list(names):
            raise RegistryError(
                "protocol_error",
                f"registry {self.name!r} answered a batch resolve with other toolsets than asked",
            )
        out: list[tuple[str, ResolvedToolset | RegistryError]] = []
        for entry in answer.toolsets:
            name = entry.name
            if entry.status == "not_found":
                held.pop(name, None)
                out.append((name, RegistryError("not_found", entry.message)))
            elif entry.status == "unchanged":
                resolved = named.get(name)
                if resolved is None:
                    raise RegistryError(
                        "protocol_error",
                        f"registry {self.name!r} answered toolset {name!r} unchanged, but this "
                        "client holds no answer for it",
                    )
                out.append((name, self._keep(name, resolved)))
            else:
                content = (entry.answer or "").encode()
                try:
                    resolved = kept_answer(content)
                except ValidationError as exc:
                    raise RegistryError(
                        "protocol_error",
                        f"registry {self.name!r} answered toolset {name!r} with an unexpected "
                        f"body: {first_error(exc)}",
                    ) from None
                out.append((name, self._keep(name, resolved)))
        return out

    async def check_admission(self, name: str, expected_registration_token: str) -> bool:
        answer = await self._post(
            "/toolsets/check_admission",
            api.CheckAdmissionRequest(
                toolset=name, expected_registration_token=expected_registration_token
            ),
            api.CheckAdmissionResponse,
        )
        return answer.ready

    async def call_resolved_tool(
        self,
        *,
        toolset: str,
        tool: str,
        payload_json: str,
        meta: ToolCallMeta,
        expected_registration_token: str,
    ) -> CallRef:
        answer = await self._post(
            "/calls",
            api.CallRequestBody(
                toolset=toolset,
                tool=tool,
                payload_json=payload_json,
                meta=CallMeta(
                    run_id=meta.run_id,
                    tool_call_id=meta.tool_call_id,
                    session_id=meta.session_id,
                    parent_tool_call_id=meta.parent_tool_call_id,
                    labels=dict(meta.labels),
                    call_depth=meta.call_depth,
                ),
                expected_registration_token=expected_registration_token,
                wire_protocol_version=WIRE_PROTOCOL_VERSION,
                wait_ms=self.call_wait_ms,
            ),
            api.CallRefBody,
            wait_ms=self.call_wait_ms,
        )
        ref = _ref(answer)
        if answer.result is not None:
            _keep_latest(self._early, ref.tool_use_id, answer.result, KEPT_EARLY_OUTCOMES)
        return ref

    async def retry_tool(self, ref: CallRef, *, expected_registration_token: str) -> CallRef:
        answer = await self._post(
            "/calls/retry",
            api.RetryRequest(
                tool_use_id=ref.tool_use_id,
                expected_registration_token=expected_registration_token,
            ),
            api.CallRefBody,
        )
        return _ref(answer)

    async def poll_result(self, ref: CallRef, *, wait_ms: int = 10_000) -> api.ResultResponse:
        """One long poll for a call's outcome (``pending`` when it has none yet); an outcome
        that came back with the call itself is answered without asking again."""
        early = self._early.pop(ref.tool_use_id, None)
        if early is not None:
            return early
        return await self._post(
            "/calls/result",
            api.ResultRequest(
                tool_use_id=ref.tool_use_id,
                registration_token=ref.registration_token,
                wait_ms=wait_ms,
            ),
            api.ResultResponse,
            wait_ms=wait_ms,
        )

    # ------------------------------------------------------------------ providers

    async def register(
        self,
        toolset: ToolsetDeclaration,
        *,
        schema_fingerprint: str,
        revision: str,
        provider_id: str,
        incarnation_id: str,
        lease_ms: int,
    ) -> api.RegisterResponse:
        return await self._post(
            "/providers/register",
            api.RegisterRequest(
                toolset=toolset,
                schema_fingerprint=schema_fingerprint,
                revision=revision,
                provider_id=provider_id,
                incarnation_id=incarnation_id,
                lease_ms=lease_ms,
            ),
            api.RegisterResponse,
        )

    def _lease(
        self, toolset: str, token: str, provider_id: str, incarnation_id: str
    ) -> dict[str, str]:
        return {
            "toolset": toolset,
            "registration_token": token,
            "provider_id": provider_id,
            "incarnation_id": incarnation_id,
        }

    async def renew(
        self, toolset: str, token: str, provider_id: str, incarnation_id: str, lease_ms: int
    ) -> int:
        answer = await self._post(
            "/providers/renew",
            api.RenewRequest(
                **self._lease(toolset, token, provider_id, incarnation_id), lease_ms=lease_ms
            ),
            api.LeaseResponse,
        )
        return answer.lease_expires_at_ms

    async def drain(
        self, toolset: str, token: str, provider_id: str, incarnation_id: str, settle_ms: int
    ) -> int:
        answer = await self._post(
            "/providers/drain",
            api.DrainRequest(
                **self._lease(toolset, token, provider_id, incarnation_id), settle_ms=settle_ms
            ),
            api.LeaseResponse,
        )
        return answer.lease_expires_at_ms

    async def release(
        self, toolset: str, token: str, provider_id: str, incarnation_id: str
    ) -> None:
        await self._post(
            "/providers/release",
            api.LeaseRequest(**self._lease(toolset, token, provider_id, incarnation_id)),
            api.OkResponse,
        )

    async def unregister(self, toolset: str, expected_registration_token: str) -> None:
        await self._post(
            "/providers/unregister",
            api.UnregisterRequest(
                toolset=toolset, expected_registration_token=expected_registration_token
            ),
            api.OkResponse,
        )

    async def claim(
        self,
        toolset: str,
        token: str,
        provider_id: str,
        incarnation_id: str,
        *,
        max_calls: int,
        wait_ms: int,
        operation_id: str,
    ) -> list[api.ClaimedCallBody]:
        answer = await self._post(
            "/providers/claim",
            api.ClaimRequest(
                **self._lease(toolset, token, provider_id, incarnation_id),
                max_calls=max_calls,
                wait_ms=wait_ms,
                claim_operation_id=operation_id,
            ),
            api.ClaimResponse,
            wait_ms=wait_ms,
            headers=_READS_CALL_DEPTH,
        )
        return answer.calls

    async def give_back(
        self,
        toolset: str,
        token: str,
        provider_id: str,
        incarnation_id: str,
        *,
        claim_operation_id: str,
    ) -> int:
        """End, as not run, the calls claim operation ``claim_operation_id`` took and this
        lease still holds (their answer could not be read, so none ran); how many. A registry
        older than the request answers ``unknown_route``."""
        answer = await self._post(
            "/providers/give_back",
            api.GiveBackRequest(
                **self._lease(toolset, token, provider_id, incarnation_id),
                claim_operation_id=claim_operation_id,
            ),
            api.GiveBackResponse,
        )
        return answer.calls

    async def complete(
        self,
        toolset: str,
        tool_use_id: str,
        provider_id: str,
        incarnation_id: str,
        *,
        status: Literal["completed", "failed"],
        result_json: str,
        message: str = "",
    ) -> None:
        await self._post(
            "/providers/complete",
            api.CompleteRequest(
                toolset=toolset,
                tool_use_id=tool_use_id,
                provider_id=provider_id,
                incarnation_id=incarnation_id,
                status=status,
                result_json=result_json,
                message=message[:4096],
            ),
            api.OkResponse,
        )

    async def report_overload(
        self,
        toolset: str,
        tool_use_id: str,
        provider_id: str,
        incarnation_id: str,
        *,
        claim_operation_id: str | None = None,
    ) -> None:
        """Give a claimed call back unrun. ``claim_operation_id`` (the claim that took it)
        travels in a header (``api.CLAIM_OPERATION_HEADER``), which a registry too old to
        read it ignores."""
        headers = {}
        if claim_operation_id is not None:
            headers[api.CLAIM_OPERATION_HEADER] = claim_operation_id
        await self._post(
            "/providers/overload",
            api.OverloadRequest(
                toolset=toolset,
                tool_use_id=tool_use_id,
                provider_id=provider_id,
                incarnation_id=incarnation_id,
            ),
            api.OkResponse,
            headers=headers,
        )

    async def complete_many(
        self,
        toolset: str,
        provider_id: str,
        incarnation_id: str,
        completions: Sequence[api.CompletionBody],
    ) -> list[RegistryError | None]:
        """Several results of one lease in one request; per completion, None or the refusal
        :meth:`complete` would have raised."""
        answer = await self._post(
            "/providers/complete_many",
            api.CompleteManyRequest(
                toolset=toolset,
                provider_id=provider_id,
                incarnation_id=incarnation_id,
                completions=list(completions),
            ),
            api.CompleteManyResponse,
        )
        if [c.tool_use_id for c in answer.completions] != [c.tool_use_id for c in completions]:
            raise RegistryError(
                "protocol_error",
                f"registry {self.name!r} answered a batch completion for other calls than sent",
            )
        return [
            None if c.error is None else RegistryError(c.error.code, c.error.message)
            for c in answer.completions
        ]

    async def health(self) -> api.HealthResponse:
        import httpx2

        try:
            response = await self._http.get("/health")
        except httpx2.LocalProtocolError as exc:
            raise self._unsendable("/health", exc) from None
        except httpx2.TransportError as exc:
            raise RegistryError(
                "service_unavailable", f"registry {self.name!r} at {self.shown_url}: {exc}"
            ) from None
        except httpx2.DecodingError as exc:
            raise self._undecodable("/health", exc) from None
        if 300 <= response.status_code < 400:
            raise self._redirected(response)
        if response.status_code >= 400:
            raise self._refusal(response)
        try:
            return api.HealthResponse.model_validate_json(response.content)
        except ValidationError as exc:
            raise RegistryError(
                "protocol_error",
                f"registry {self.name!r} at {self.shown_url} answered /health with an "
                f"unexpected body: {first_error(exc)}; is the URL that of an agentgen registry?",
            ) from None


def _failure_text(response: httpx2.Response) -> str:
    """What a failed answer says: the registry's error whole (a store it cannot reach is named
    with what to check, which the first 200 characters of its JSON cut off mid-sentence), or
    the start of any other body (a proxy's error page)."""
    try:
        error = api.ErrorResponse.model_validate_json(response.content).error
    except ValidationError:
        return response.text[:200]
    return f"{error.code}: {error.message[:_FAILURE_CHARS]}"


def _page_text(response: httpx2.Response) -> str:
    """What a page that is no registry error is, with its start."""
    why = (
        "a gateway without a route to the registry, as while it is deployed, or a URL that is "
        "not the registry's root"
        if response.status_code == 404
        else "a proxy's or another service's page"
    )
    return (
        f"a body that is no registry error ({why}; check the URL and what stands between): "
        f"{visible(response.text[:200])}"
    )


def _keep_latest(kept: dict[str, V], key: str, value: V, limit: int) -> None:
    """Keep ``value`` as the latest under ``key``, forgetting the oldest beyond ``limit``."""
    kept.pop(key, None)
    kept[key] = value
    if len(kept) > limit:
        del kept[next(iter(kept))]


def _ref(body: api.CallRefBody) -> CallRef:
    return CallRef(
        body.tool_use_id,
        body.registration_token,
        body.execution_deadline_ms,
        body.result_expires_at_ms,
    )


class HttpResultStream:
    """Waits for call outcomes by long-polling the registry that admitted them."""

    def __init__(self, client: HttpRegistryClient, *, poll_ms: int = 10_000) -> None:
        self.client = client
        #: Checked here: a wait the API cannot carry would fail only once a call was admitted.
        self.poll_ms = checked_wait_ms(
            poll_ms, "poll_ms", f"result stream of registry {client.name!r}"
        )

    async def await_result(self, ref: CallRef) -> CallOutcome:
        """The admitted call's outcome. Asking for it is safe to repeat, so an outage of the
        registry shorter than the call's result retention is waited out (retrying with the
        client's backoff) instead of ending the wait while the call runs on."""
        outage = 0  # failed polls in a row
        while True:
            asked = time.monotonic()
            try:
                answer = await self.client.poll_result(ref, wait_ms=self.poll_ms)
            except RegistryError as exc:
                if exc.code != "service_unavailable" or not ref.result_expires_at_ms:
                    raise
                self._check_retained(ref)
                delay = self.client.retry.delay(self.client.retry.max_retries + outage)
                outage += 1
                registry_retry(
                    self.client.name, "/calls/result", outage, "service_unavailable", delay,
                    detail=exc.message,
                )  # fmt: skip
                await asyncio.sleep(delay)
                continue
            outage = 0
            if answer.status == "pending":
                self._check_retained(ref)
                rest = asked + _POLL_INTERVAL - time.monotonic()
                if rest > 0:
                    # Answered sooner than _POLL_INTERVAL (a poll that does not wait): pause
                    # for the rest of it, rather than asking again at once, a thousand times
                    # a second for as long as the call runs.
                    await asyncio.sleep(rest)
                continue
            # Ended without running: the admission was replaced, or no provider was left.
            if answer.status == "call_not_admitted":
                raise RegistryError("call_not_admitted", answer.message)
            if answer.status == "no_provider":
                raise RegistryError("no_provider", answer.message)
            return CallOutcome(answer.status, answer.result_json or "null", answer.message)

    def _check_retained(self, ref: CallRef) -> None:
        # The expiry is on the registry's clock, so it is compared with that clock (carried
        # forward from its last answer through an outage).
        expires = ref.result_expires_at_ms
        if expires and self.client.registry_time_ms() > expires:
            raise RegistryError(
                "outcome_unknown",
                f"call {ref.tool_use_id} outlived its result retention without an outcome; it "
                "may have run",
            )


def connect_registry(
    rt: _Runtime,
    settings: _Settings,
    *,
    token: str | None = None,
    url: str | None = None,
) -> HttpRegistryClient | None:
    """Register a design's ``Registry(...)`` with ``rt`` as a live HTTP registry (client and
    result stream), unless ``rt`` already has a registry of that name (another agent's
    generated ``connect`` registered it, or the application its own client): that one is
    kept. Returns the new client (close it when the application stops), or None if kept."""
    if _registered(rt, settings.name):
        return None
    client = HttpRegistryClient.from_settings(settings, token=token, url=url)
    _register(rt, settings, client)
    return client


def _registered(rt: _Runtime, name: str) -> bool:
    try:
        rt.registry(name)
    except LookupError:
        return False
    return True


def _register(rt: _Runtime, settings: _Settings, client: HttpRegistryClient) -> None:
    # The settings go to the runtime too: its bound on each request is the same Timeout.
    rt.register_registry(settings.name, client, HttpResultStream(client), settings=settings)


class RegistryConnections(_Closing):
    """The clients :func:`connect_registries` made (a registry the runtime already had is not
    among them: its owner closes it). Each holds a pool of connections; close them when the
    application stops, with :meth:`aclose` or ``async with``."""

    def __init__(self, clients: Sequence[HttpRegistryClient] = ()) -> None:
        self.clients = tuple(clients)

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


def connect_registries(
    rt: _Runtime,
    settings: Mapping[str, _Settings],
    reads: Sequence[str],
    *,
    token: str | None = None,
    urls: Mapping[str, str] | None = None,
) -> RegistryConnections:
    """Connect the registries an agent ``reads`` (by :func:`connect_registry`), with the
    design's ``settings`` by name; ``urls`` replaces a registry's URL by name. A name in
    ``urls`` that is no registry of the design raises ``ValueError`` before anything is
    connected: a misspelt name would otherwise leave the design's URL in use without a word.
    Every client is made (and so checked: its URL, token and options) before any is registered:
    one that cannot be made raises with none of them registered, and none holding a connection
    (a client opens its first connection with its first request). Returns the clients made, to
    close when the application stops."""
    urls = urls or {}
    unknown = sorted(set(urls) - set(settings))
    if unknown:
        raise ValueError(
            f"registry_tools.connect: urls names {unknown}, no registry of the design; its "
            f"registries: {sorted(settings)} (the names of Registry(...), not URLs)"
        )
    made: dict[str, tuple[_Settings, HttpRegistryClient]] = {}
    for name in reads:
        wanted = settings[name]
        if wanted.name in made or _registered(rt, wanted.name):
            continue
        client = HttpRegistryClient.from_settings(wanted, token=token, url=urls.get(name))
        made[wanted.name] = (wanted, client)
    for wanted, client in made.values():
        _register(rt, wanted, client)
    return RegistryConnections([client for _, client in made.values()])


def _api_path(path: str) -> str:
    """The request's path as the client's other messages name it (``/toolsets/list``)."""
    return path.split(api.API_PREFIX, 1)[-1] if api.API_PREFIX in path else path
