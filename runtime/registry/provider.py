"""The provider SDK: publish a toolset to a registry and serve its calls.

:func:`serve_toolset` registers the toolset's full declaration with its fingerprint and a
revision (waiting while an older registration still holds live leases), renews its lease, claims
calls, runs each through the toolset's executor (for a generated toolset, its typed executor:
payloads decode into the generated models and results are checked against their contracts),
completes them, and on SIGTERM (or ``stop``) drains: the registry stops routing new calls to
this process, calls in hand finish, the lease is released. When the registry says the lease is
lost, the provider stops without registering again (a warning on the ``agentgen.registry``
logger says so): whatever it held ends ``outcome_unknown`` at the registry, and a new process (a
new incarnation) must take over. A renewal that fails is retried at once, with a short jittered
backoff, until the lease would have run out: an outage shorter than the lease costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import re
import signal
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from agentgen.runtime.agents.executors import (
    OutcomeUnknownError,
    ToolContext,
    ToolsetExecutor,
    implementation_problem,
    serving_registry_call,
)
from agentgen.runtime.contracts import compiler
from agentgen.runtime.contracts.codecs import PayloadError
from agentgen.runtime.contracts.declarations import ToolsetDeclaration, shown
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.versions import VERSION_RULE, version_problem
from agentgen.runtime.contracts.wire import fingerprint
from agentgen.runtime.cuts import cut
from agentgen.runtime.failures import message_of
from agentgen.runtime.registry import api
from agentgen.runtime.registry.admission import IDENTIFIER, MAX_SETTLE_MS
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.http_client import RetryPolicy
from agentgen.runtime.tasks import DeadlinePassed, stop_task, within_deadline

T = TypeVar("T")
_LOG = logging.getLogger("agentgen.registry.provider")

__all__ = [
    "BatchCompleter",
    "ClaimGiver",
    "ProviderClient",
    "ProviderSetupError",
    "RegistryClock",
    "ServeOptions",
    "ServeReport",
    "ToolOverloadedError",
    "checked_implementation",
    "serve_toolset",
]


class ToolOverloadedError(Exception):
    """Raise from an executor method to hand the call back unrun: the registry tells the
    consumer, which may retry it (with the same admission)."""


class ProviderSetupError(ValueError):
    """A provider process was handed something it cannot serve with; raised before anything
    is published, so no consumer is routed to a provider that would fail every call."""


def checked_implementation(impl: T, protocol: str, methods: Sequence[str], *, toolset: str) -> T:
    """``impl`` once it has every method of toolset ``toolset``'s tools (``methods`` of the
    generated ``protocol``).

    Generated ``provider.serve`` calls it before registering: ``None``, a class instead of an
    instance or an object without a tool's method raises :class:`ProviderSetupError` naming
    the toolset and what is missing, where it would otherwise be published and then fail each
    call with an ``AttributeError``."""
    problem = implementation_problem(impl, protocol, methods)
    if problem is not None:
        raise ProviderSetupError(f"provider of toolset {toolset!r}: the executor{problem}")
    return impl


class ProviderClient(Protocol):
    """What the SDK needs of a registry client (:class:`HttpRegistryClient` has it)."""

    async def register(
        self,
        toolset: ToolsetDeclaration,
        *,
        schema_fingerprint: str,
        revision: str,
        provider_id: str,
        incarnation_id: str,
        lease_ms: int,
    ) -> api.RegisterResponse: ...

    async def renew(
        self, toolset: str, token: str, provider_id: str, incarnation_id: str, lease_ms: int
    ) -> int: ...

    async def drain(
        self, toolset: str, token: str, provider_id: str, incarnation_id: str, settle_ms: int
    ) -> int: ...

    async def release(
        self, toolset: str, token: str, provider_id: str, incarnation_id: str
    ) -> None: ...

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
    ) -> list[api.ClaimedCallBody]: ...

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
    ) -> None: ...

    async def report_overload(
        self,
        toolset: str,
        tool_use_id: str,
        provider_id: str,
        incarnation_id: str,
        *,
        claim_operation_id: str | None = None,
    ) -> None:
        """Give a call back unrun; ``claim_operation_id`` is the claim operation that took it
        (the registry then ignores a stale repeat of the overload)."""
        ...


@runtime_checkable
class BatchCompleter(Protocol):
    """An optional capability of a :class:`ProviderClient` (:class:`HttpRegistryClient` has
    it): several completions of one lease in one request. With it, calls that finish while a
    completion is on its way go together in the next request."""

    async def complete_many(
        self,
        toolset: str,
        provider_id: str,
        incarnation_id: str,
        completions: Sequence[api.CompletionBody],
    ) -> list[RegistryError | None]: ...


@runtime_checkable
class ClaimGiver(Protocol):
    """An optional capability of a :class:`ProviderClient` (:class:`HttpRegistryClient` has
    it): give back, unrun, the calls a claim operation took whose answer could not be read.
    With it, those calls end ``failed`` (``not_run``: safe to call again) when serving stops,
    not ``outcome_unknown`` (may have run) with the lease."""

    async def give_back(
        self,
        toolset: str,
        token: str,
        provider_id: str,
        incarnation_id: str,
        *,
        claim_operation_id: str,
    ) -> int: ...


@runtime_checkable
class RegistryClock(Protocol):
    """An optional capability of a :class:`ProviderClient` (:class:`HttpRegistryClient` has
    it): the registry's clock. A claimed call's deadline is on that clock; without it, the
    provider measures deadlines with its own clock, which may be off."""

    def registry_time_ms(self) -> float: ...


_Pending = tuple[api.CompletionBody, int, "asyncio.Future[RegistryError | None]"]


class _Completions:
    """Sends completions as they come: one request at a time, carrying every completion that
    arrived meanwhile (at most :data:`_BATCH`, and at most :data:`_BATCH_BYTES` encoded, so
    that results which each fit the registry's body limit never exceed it together). A lone
    completion goes at once, as before. A batch refused whole (``body_too_large``: a registry
    with a smaller limit) is sent again one completion per request, so that each gets its own
    answer."""

    def __init__(self, send: Callable[[list[api.CompletionBody]], Awaitable[list[Any]]]) -> None:
        self._send = send
        self._pending: list[_Pending] = []
        self._sending = False

    async def complete(self, body: api.CompletionBody) -> None:
        """Record one completion; raises the registry's refusal of it, if any."""
        done: asyncio.Future[RegistryError | None] = asyncio.get_running_loop().create_future()
        self._pending.append((body, _encoded_size(body), done))
        if not self._sending:
            # Nothing on its way: send from here, at once (a new task would only run after
            # whatever this task's caller scheduled before, such as the next claim).
            await self._flush()
        refusal = await done
        if refusal is not None:
            raise refusal

    async def _flush(self) -> None:
        self._sending = True
        try:
            await self._send_pending()
        finally:
            self._sending = False

    async def _send_pending(self) -> None:
        while self._pending:
            count, size = 0, 0
            for _, encoded, _ in self._pending[:_BATCH]:
                if count and size + encoded > _BATCH_BYTES:
                    break
                count, size = count + 1, size + encoded
            batch, self._pending = self._pending[:count], self._pending[count:]
            outcomes = await self._outcomes(batch)
            if len(batch) > 1 and any(_too_large(outcome) for outcome in outcomes):
                # Refused whole for its size: each completion on its own gets its own answer.
                outcomes = [(await self._outcomes([one]))[0] for one in batch]
            for (_, _, done), outcome in zip(batch, outcomes, strict=True):
                if not done.done():
                    done.set_result(outcome)

    async def _outcomes(self, batch: list[_Pending]) -> list[RegistryError | None]:
        try:
            outcomes: list[RegistryError | None] = await self._send([body for body, _, _ in batch])
        except RegistryError as exc:
            return [exc] * len(batch)
        except Exception as exc:  # the client failed: each completion is retried or lost
            failure = RegistryError("service_unavailable", f"{type(exc).__name__}: {exc}")
            return [failure] * len(batch)
        return outcomes


def _encoded_size(body: api.CompletionBody) -> int:
    """The bytes ``body`` takes in a request, or more. A small one is bounded by its length
    (a character takes at most 6 bytes escaped), which leaves the most a request carries
    (:data:`_BATCH`) within :data:`_BATCH_BYTES`; a larger one is encoded to be measured."""
    bound = 6 * (len(body.result_json) + len(body.message)) + 256
    if bound <= _BATCH_BYTES // _BATCH:
        return bound
    return len(body.model_dump_json().encode())


def _too_large(outcome: RegistryError | None) -> bool:
    return outcome is not None and outcome.code == "body_too_large"


#: Most completions one request carries.
_BATCH = 64
#: Most bytes of encoded completions one request carries: half the registry's default body
#: limit (1 MiB), leaving room for the envelope. A single larger completion goes alone.
_BATCH_BYTES = 512 * 1024
#: Longest message a failed result carries (the registry takes 4,096 characters).
_MESSAGE_CHARS = 4096
#: Shortest time from one claim to the next when the first took no call: a claim that does
#: not wait (``claim_wait_seconds=0``) is answered at once.
_CLAIM_INTERVAL = 0.1
#: Claim refusals that asking again cannot change (the lease being lost is its own case): the
#: provider stops serving, rather than asking again for ever while its renewals keep the lease,
#: and with it the toolset's calls, alive.
_CLAIM_REFUSALS = frozenset(
    {
        "unauthenticated",
        "forbidden",
        "validation_error",
        "malformed_json",
        "not_found",
        "unknown_route",
        "method_not_allowed",
        "unsupported_media_type",
        "body_too_large",
    }
)
#: Pause (seconds) before a result or an overload the registry could not take (out of reach)
#: is sent again, while the call can still be completed.
_RESEND_PAUSE = 0.2
#: Backoff between failed claims, and between failed renewals (bounded by the lease too).
_CLAIM_RETRY = RetryPolicy(backoff_base=0.25, backoff_max=5.0)
_RENEW_RETRY = RetryPolicy(backoff_base=0.1, backoff_max=2.0)


def _remove_handler(loop: asyncio.AbstractEventLoop, sig: signal.Signals) -> None:
    loop.remove_signal_handler(sig)


def _default_provider_id() -> str:
    host = re.sub(r"[^A-Za-z0-9._:@+\-]", "-", socket.gethostname()) or "provider"
    return host[:128] if host[0].isalnum() else f"p{host[:127]}"


@dataclass(frozen=True)
class ServeOptions:
    #: Names this provider (every process serving the same revision may share it).
    provider_id: str = field(default_factory=_default_provider_id)
    lease_seconds: float = 60.0
    #: Calls run at once; claims never take more.
    concurrency: int = 8
    #: How long a draining provider may take to finish the calls it holds.
    drain_seconds: float = 30.0
    #: Longest a claim waits for calls before asking again.
    claim_wait_seconds: float = 5.0
    #: How long to keep registering while an older registration blocks this one.
    register_timeout_seconds: float = 120.0
    #: Stop on SIGTERM and SIGINT (only possible in the main thread's event loop).
    handle_signals: bool = True


@dataclass
class ServeReport:
    """How serving ended, and what it did."""

    toolset: str
    #: Empty when stopped before the registry admitted the toolset.
    registration_token: str
    incarnation_id: str
    reason: Literal["stopped", "lease_lost"] = "stopped"
    completed: int = 0
    failed: int = 0
    overloaded: int = 0
    #: Results (and overloads) the registry refused, because the lease was lost first.
    lost: int = 0
    #: Calls given back unrun: a claim took them, but its answer could not be read (nor its
    #: replay), so they never ran; they end ``failed`` (``not_run``) for their consumers.
    given_back: int = 0


def _number(value: object, low: float, high: float, *, whole: bool = False) -> bool:
    kinds = (int,) if whole else (int, float)
    return (
        isinstance(value, kinds)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and low <= value <= high
    )


_MAX_MS = 2**31 / 1000


def _check_options(options: ServeOptions, *, toolset: str) -> None:
    """Raise :class:`ProviderSetupError` for an option the registry's API cannot carry, naming
    the toolset, the option, its value and its bounds: checked before anything is published
    (such an option used to publish the toolset, then fail its first claim, or never claim)."""
    checks: list[tuple[str, object, bool, str]] = [
        (
            "provider_id",
            options.provider_id,
            isinstance(options.provider_id, str) and bool(IDENTIFIER.match(options.provider_id)),
            "1 to 128 letters, digits or ._:@+- starting with a letter or digit",
        ),
        (
            "lease_seconds",
            options.lease_seconds,
            _number(options.lease_seconds, 0.001, _MAX_MS),
            f"0.001 to {_MAX_MS:g} seconds (the registry's --min-lease and --max-lease narrow it)",
        ),
        (
            "concurrency",
            options.concurrency,
            _number(options.concurrency, 1, api.MAX_CLAIM_CALLS, whole=True),
            f"a whole number from 1 to {api.MAX_CLAIM_CALLS} (the most calls one claim takes)",
        ),
        (
            "drain_seconds",
            options.drain_seconds,
            _number(options.drain_seconds, 0, MAX_SETTLE_MS / 1000),
            f"0 to {MAX_SETTLE_MS / 1000:g} seconds (the longest drain the registry allows)",
        ),
        (
            "claim_wait_seconds",
            options.claim_wait_seconds,
            _number(options.claim_wait_seconds, 0, api.MAX_WAIT_MS / 1000),
            f"0 to {api.MAX_WAIT_MS / 1000:g} seconds (the longest wait a claim may ask for)",
        ),
        (
            "register_timeout_seconds",
            options.register_timeout_seconds,
            _number(options.register_timeout_seconds, 0, math.inf),
            "0 seconds or more",
        ),
    ]
    for name, value, fits, bounds in checks:
        if not fits:
            raise ProviderSetupError(
                f"provider of toolset {toolset!r}: ServeOptions.{name}={value!r} is out of "
                f"bounds: {bounds}"
            )


def _check_labels(declaration: ToolsetDeclaration, revision: object) -> None:
    """Refuse a version or revision the registry would refuse, before anything is published.

    Generated ``serve(version=...)`` sets the version on the declaration by assignment, which
    pydantic does not check: a version with a newline or a zero-width space, or over 256
    characters, reached the registry, whose ``validation_error`` named neither the provider
    nor its toolset. A version is held to the rule of consumers' pins (:func:`version_problem`):
    one with surrounding spaces was published, and no consumer could pin it."""
    toolset = declaration.name
    version: object = declaration.version  # assigned unchecked: anything at all
    problem = None if version is None else version_problem(version)
    if problem is not None:
        raise ProviderSetupError(
            f"provider of toolset {toolset!r}: version "
            f"{shown(version) if isinstance(version, str) else type(version).__name__} "
            f"cannot be published: a toolset's version is {VERSION_RULE}, as consumers pin it "
            f"({problem}); pass the version as consumers pin it"
        )
    if not isinstance(revision, str) or not 1 <= len(revision) <= api.MAX_REVISION_CHARS:
        given = (
            f"{len(revision)} characters" if isinstance(revision, str) else type(revision).__name__
        )
        raise ProviderSetupError(
            f"provider of toolset {toolset!r}: revision ({given}) cannot be published: a "
            f"revision is a string of 1 to {api.MAX_REVISION_CHARS} characters naming the "
            "provider's build"
        )


def _specs_for(
    declaration: ToolsetDeclaration, specs: Sequence[ToolSpec] | None
) -> dict[str, ToolSpec]:
    if specs is None:
        return {t.name: compiler.compile(t, toolset=declaration.name) for t in declaration.tools}
    by_id = {spec.id: spec for spec in specs}
    missing = sorted({t.name for t in declaration.tools} - set(by_id))
    if missing:
        raise ValueError(
            f"toolset {declaration.name!r}: no spec for tool(s) {', '.join(missing)}; pass the "
            "generated specs of the same toolset"
        )
    return by_id


async def serve_toolset(
    client: ProviderClient,
    declaration: ToolsetDeclaration,
    executor: ToolsetExecutor,
    *,
    revision: str,
    specs: Sequence[ToolSpec] | None = None,
    options: ServeOptions | None = None,
    stop: asyncio.Event | None = None,
    on_registered: Callable[[str], None] | None = None,
) -> ServeReport:
    """Publish ``declaration`` and serve its calls until stopped or the lease is lost.

    ``specs`` are the toolset's generated specs (``specs.SPECS``): payloads then decode into
    the generated models the typed executor expects. Without them, the declaration's tools are
    compiled and the executor receives JSON values. ``on_registered`` is called with the
    registration token once admitted. Options the registry cannot carry raise
    :class:`ProviderSetupError` before anything is published.
    """
    options = options or ServeOptions()
    _check_options(options, toolset=declaration.name)
    _check_labels(declaration, revision)
    served = _Provider(client, declaration, executor, revision, specs, options, stop)
    return await served.run(on_registered)


class _Provider:
    def __init__(
        self,
        client: ProviderClient,
        declaration: ToolsetDeclaration,
        executor: ToolsetExecutor,
        revision: str,
        specs: Sequence[ToolSpec] | None,
        options: ServeOptions,
        stop: asyncio.Event | None,
    ) -> None:
        self.client = client
        self.declaration = declaration
        self.name = declaration.name
        self.executor = executor
        self.revision = revision
        self.specs = _specs_for(declaration, specs)
        self.options = options
        self.stop = stop or asyncio.Event()
        self.lost = asyncio.Event()
        self.incarnation = uuid.uuid4().hex
        self.token = ""
        self.active = 0
        self.freed = asyncio.Event()
        self.workers: set[asyncio.Task[None]] = set()
        self.report = ServeReport(self.name, "", self.incarnation)
        #: When (``time.monotonic``) the request that last set the lease's expiry was sent:
        #: the registry counted the lease from a moment no earlier.
        self.leased_at = 0.0
        self.renewer: asyncio.Task[None] | None = None
        #: The claim the registry refused for good, when that stopped serving (raised, as
        #: :meth:`_claim_refused` words it, once drained).
        self.refusal: RegistryError | None = None
        #: Why the last claim operation, unanswered when serving stopped, could not be
        #: replayed (the calls it took are then given back unrun).
        self.unreplayed: RegistryError | None = None
        #: How many of those calls the registry took back (None: not given back, and they
        #: end ``outcome_unknown``, unrun, with the lease), and why it refused, if it did.
        self.given: int | None = None
        self.ungiven: RegistryError | None = None
        #: Whether the registry took this lease's drain, and its release.
        self.drain_taken = False
        self.released = False
        self.completions: _Completions | None = None
        self.registry_now_ms: Callable[[], float] = (
            client.registry_time_ms if isinstance(client, RegistryClock) else _own_clock_ms
        )
        if isinstance(client, BatchCompleter):
            batching = client

            async def send(bodies: list[api.CompletionBody]) -> list[RegistryError | None]:
                return await batching.complete_many(self.name, *self.ident, bodies)

            self.completions = _Completions(send)

    @property
    def ident(self) -> tuple[str, str]:
        return self.options.provider_id, self.incarnation

    async def run(self, on_registered: Callable[[str], None] | None) -> ServeReport:
        removers = self._handle_signals()
        try:
            if not await self._register():
                return self.report  # stopped while waiting for admission: nothing to release
            self.report.registration_token = self.token
            if on_registered is not None:
                try:
                    on_registered(self.token)
                except BaseException:
                    # Nothing was claimed yet: give the lease back, which would otherwise block
                    # a new revision's registration until it expired.
                    await self._release()
                    raise
            self.renewer = asyncio.create_task(self._renew())
            try:
                await self._claim_until_stopped()
            finally:
                await self._stop_renewing()
                await self._abandon()
        finally:
            for remove in removers:
                remove()
        if self.refusal is not None:
            raise self._claim_refused(self.refusal)
        return self.report

    async def _abandon(self) -> None:
        """Cancel the calls still in hand: only those that outlast the drain, or all of them
        when serving is cancelled. Left running, they would reach for a client the caller is
        about to close (and retry completions until their deadline); the registry ends them
        as it ends a lost provider's calls."""
        workers = set(self.workers)
        for worker in workers:
            worker.cancel()
        if workers:
            await asyncio.wait(workers)

    def _handle_signals(self) -> list[Callable[[], None]]:
        if not self.options.handle_signals:
            return []
        loop = asyncio.get_running_loop()
        removers: list[Callable[[], None]] = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop.set)
            except (NotImplementedError, RuntimeError, ValueError):
                continue  # not the main thread, or no signals here: stop through `stop`
            removers.append(functools.partial(_remove_handler, loop, sig))
        return removers

    async def _register(self) -> bool:
        """Register, waiting while an older registration blocks this one; ``False`` when
        stopped (SIGTERM, Ctrl-C, ``stop``) before it was admitted."""
        fp = fingerprint(self.declaration)
        give_up = time.monotonic() + self.options.register_timeout_seconds
        delay = 0.1
        while True:
            sent = time.monotonic()
            try:
                answer = await self.client.register(
                    self.declaration,
                    schema_fingerprint=fp,
                    revision=self.revision,
                    provider_id=self.options.provider_id,
                    incarnation_id=self.incarnation,
                    lease_ms=int(self.options.lease_seconds * 1000),
                )
            except RegistryError as exc:
                if exc.code != "admission_blocked" or time.monotonic() > give_up:
                    raise
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), delay)
                if self.stop.is_set():
                    return False
                delay = min(delay * 2, 2.0)
                continue
            self.token = answer.registration_token
            self.leased_at = sent
            return True

    def _lose(self, why: str) -> None:
        if not self.lost.is_set():
            provider, incarnation = self.ident
            _LOG.warning(
                "provider %r (incarnation %s) of toolset %r lost its lease: %s; it stops "
                "serving and does not register again (calls it held end outcome_unknown); start "
                "a new provider process to serve the toolset again",
                provider,
                incarnation,
                self.name,
                why,
            )
        self.report.reason = "lease_lost"
        self.lost.set()
        self.stop.set()

    async def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` unless stopped first; whether serving goes on."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), max(seconds, 0.0))
        return not self.stop.is_set()

    async def _renew(self) -> None:
        """Renew every third of the lease until stopped (a drain stops renewing first: a
        draining lease is not renewed, it stays valid for the drain period). A renewal that
        fails is retried with a short jittered backoff, each attempt bounded by the time left
        on the lease, until the lease would have run out: an outage shorter than the lease
        costs nothing, and one longer loses the lease."""
        lease = self.options.lease_seconds
        failures = 0
        problem = "no renewal could be sent in time (the event loop was held)"
        due = self.leased_at + lease / 3
        while await self._pause(due - time.monotonic()):
            left = self.leased_at + lease - time.monotonic()
            if left <= 0:
                self._lose(
                    f"no renewal reached the registry within the lease ({lease:g} s); the "
                    f"last failure: {problem}"
                )
                return
            sent = time.monotonic()
            try:
                await asyncio.wait_for(
                    self.client.renew(self.name, self.token, *self.ident, int(lease * 1000)), left
                )
            except RegistryError as exc:
                if exc.code == "provider_lease_lost":
                    self._lose(exc.message)
                    return
                problem = f"{exc.code}: {exc.message}"
            except TimeoutError:
                problem = "the renewal was not answered before the lease ran out"
            except Exception as exc:  # the client failed: as an unreachable registry
                problem = f"{type(exc).__name__}: {exc}"
            else:
                self.leased_at, failures = sent, 0
                due = sent + lease / 3
                continue
            pause = min(_RENEW_RETRY.delay(failures), lease / 6)
            failures += 1
            _LOG.warning(
                "provider %r of toolset %r: renewing its lease failed (%s); retrying in %.2f s, "
                "%.1f s before the lease runs out",
                self.options.provider_id,
                self.name,
                problem,
                pause,
                left,
            )
            due = time.monotonic() + pause

    async def _stop_renewing(self) -> None:
        if self.renewer is not None:
            await stop_task(self.renewer)

    async def _claim(
        self, operation_id: str, count: int, wait_ms: int
    ) -> list[api.ClaimedCallBody]:
        return await self.client.claim(
            self.name,
            self.token,
            *self.ident,
            max_calls=count,
            wait_ms=wait_ms,
            operation_id=operation_id,
        )

    async def _until_stopped(self, work: Awaitable[T]) -> tuple[asyncio.Task[T], bool]:
        """Run ``work`` until it ends or ``stop`` is set; returns its task and whether it
        ended."""
        task = asyncio.ensure_future(work)
        stopper = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()  # serving itself was cancelled: the work must not outlive it
            raise
        finally:
            stopper.cancel()
        return task, task.done()

    async def _claim_until_stopped(self) -> None:
        drained = False
        failures = 0
        # A claim operation is one until it is answered: the registry may have taken calls for
        # a claim whose answer was lost, and it hands them only to the same operation, so a
        # claim that failed is asked again under the same ID (a replay returns what it took,
        # whatever it asks for now). Only an answered claim ends its operation.
        operation = uuid.uuid4().hex
        #: Whether the last claim failed: the registry may have given ``operation`` calls whose
        #: answer was lost.
        unanswered = False
        while not self.stop.is_set():
            free = self.options.concurrency - self.active
            if free <= 0:
                self.freed.clear()
                await self._until_stopped(self.freed.wait())  # a call in hand finished
                continue
            asked = time.monotonic()
            claim, ended = await self._until_stopped(
                self._claim(operation, free, int(self.options.claim_wait_seconds * 1000))
            )
            try:
                if ended:
                    calls = claim.result()
                else:
                    # Stopped while a claim waits: drain first (from then on nothing more can
                    # be claimed for this lease), drop the wait, and collect what that claim
                    # operation took by replaying it.
                    drained = await self._drain()
                    with contextlib.suppress(RegistryError):
                        await stop_task(claim)
                    calls = await self._claim(operation, free, 0)
            except RegistryError as exc:
                if exc.code == "provider_lease_lost":
                    self._lose(exc.message)
                    break
                if exc.code in _CLAIM_REFUSALS or exc.code == "protocol_error":
                    # An answer this SDK cannot read (a registry of another version, something
                    # between them rewriting it) is read the same way when asked again: asking
                    # for ever kept the lease, and with it the calls the registry handed to
                    # those claims, alive and unrun. It may have carried calls: replayed
                    # once drained (below), they still run, if the replay can be read.
                    unanswered = unanswered or exc.code == "protocol_error"
                    self.refusal = exc
                    break
                unanswered = True
                # The client has retried already: back off further (jittered, so that the
                # providers of a registry that comes back do not all ask at the same moment).
                pause = _CLAIM_RETRY.delay(failures)
                failures += 1
                _LOG.warning(
                    "provider %r of toolset %r: claiming calls failed %d time(s) in a row "
                    "(%s: %s); asking again in %.2f s",
                    self.options.provider_id,
                    self.name,
                    failures,
                    exc.code,
                    exc.message,
                    pause,
                )
                await self._pause(pause)
                continue
            failures, unanswered = 0, False
            self._start(calls, operation)
            operation = uuid.uuid4().hex
            rest = asked + _CLAIM_INTERVAL - time.monotonic()
            if not calls and rest > 0:
                # An empty answer sooner than _CLAIM_INTERVAL (a claim that does not wait, or a
                # lease the registry no longer routes to): pause for the rest of it, rather
                # than asking again at once, hundreds of times a second.
                await self._pause(rest)
        if unanswered and not self.lost.is_set():
            # Stopped while waiting to ask a failed claim again: the calls the registry gave
            # it (its answers lost) would end outcome_unknown, unrun, once the lease is
            # released. As for a claim stopped while it waits: drain first, then collect
            # them by replaying the operation, and run them within the drain (unless the
            # registry did not take the drain: out of reach, it would not answer that either).
            if not drained:
                drained = await self._drain()
            if self.drain_taken:
                free = max(1, self.options.concurrency - self.active)
                try:
                    self._start(await self._claim(operation, free, 0), operation)
                except RegistryError as exc:
                    self.unreplayed = exc
                    # No answer of this operation was ever read, so none of its calls reached
                    # the executor: they are given back as not run, before the release would
                    # end them outcome_unknown ("may have run"). (A lease lost has ended them
                    # already.)
                    if exc.code != "provider_lease_lost":
                        await self._give_back(operation)
        await self._shutdown(drained)

    async def _give_back(self, operation: str) -> None:
        """Give back, unrun, the calls claim operation ``operation`` took (its every answer
        unread); a registry that does not take it leaves them to end ``outcome_unknown``."""
        if not isinstance(self.client, ClaimGiver):
            return
        try:
            self.given = await self.client.give_back(
                self.name, self.token, *self.ident, claim_operation_id=operation
            )
            self.report.given_back = self.given
        except RegistryError as exc:
            self.ungiven = exc
            _LOG.warning(
                "provider %r of toolset %r: the registry did not take back, unrun, the calls of "
                "a claim whose answer could not be read (%s: %s); they end outcome_unknown "
                "when the lease ends, though they did not run",
                self.options.provider_id,
                self.name,
                exc.code,
                exc.message,
            )

    def _start(self, calls: list[api.ClaimedCallBody], operation: str) -> None:
        """Run each of ``calls``, which the claim operation ``operation`` took."""
        for call in calls:
            self.active += 1
            task = asyncio.create_task(self._run(call, operation))
            self.workers.add(task)
            task.add_done_callback(self.workers.discard)

    def _claim_refused(self, exc: RegistryError) -> RegistryError:
        """The error :func:`serve_toolset` raises, once drained, for a claim the registry
        refused in a way asking again cannot change: it says what became of the lease (a
        registry refusing the claim, a revoked token, refuses its drain and release too)."""
        if not self.released:
            ended = (
                "the registry did not take its release either: its lease ends when it "
                f"expires, within {self.options.lease_seconds:g} s"
            )
        else:
            ended = "drained, its lease released" if self.drain_taken else "its lease released"
        if exc.code == "protocol_error":
            ended += self._unreplayed_calls()
            return RegistryError(
                exc.code,
                f"provider {self.options.provider_id!r} of toolset {self.name!r}: the answer to "
                f"its claim for calls could not be read ({exc.message}); every answer would be "
                f"read the same way, so it stopped serving ({ended}). Check that the URL is "
                "that of an agentgen registry of the provider's version, with nothing between "
                "them rewriting its answers, then start the provider again",
            )
        return RegistryError(
            exc.code,
            f"provider {self.options.provider_id!r} of toolset {self.name!r}: the registry "
            f"refused its claim for calls ({exc.code}: {exc.message}); every claim would be "
            f"refused the same way, so it stopped serving ({ended}). Fix what the refusal "
            "names (the provider's token and its role, or a registry of another version than "
            "the provider's agentgen), then start the provider again",
        )

    def _unreplayed_calls(self) -> str:
        """What became of the calls an unreadable claim took, when its replay could not be
        read either (empty when it could)."""
        if self.unreplayed is None:
            return ""
        again = f"; the claim's answer could not be read again ({self.unreplayed.code})"
        if self.given is None:
            refused = "" if self.ungiven is None else f" nor given back ({self.ungiven.code})"
            return f"{again}{refused}: calls it took end outcome_unknown, unrun"
        if self.given:
            return (
                f"{again}: the {self.given} call(s) it took were given back unrun, and end "
                "failed (not_run), safe to call again"
            )
        return f"{again}: it took no call"

    async def _drain(self) -> bool:
        """Ask the registry to drain this lease; whether it was asked (a refusal is said, and
        not asked again)."""
        if self.lost.is_set():
            return False
        # A renewal reaching the registry after the drain would be refused (a draining lease
        # is not renewed) and taken for a lost lease: no renewal from here on.
        await self._stop_renewing()
        try:
            await self.client.drain(
                self.name, self.token, *self.ident, int(self.options.drain_seconds * 1000)
            )
        except RegistryError as exc:
            if exc.code == "provider_lease_lost":
                self._lose(exc.message)
            else:
                _LOG.warning(
                    "provider %r of toolset %r: the registry did not take its drain (%s: %s); "
                    "it routes new calls to this provider until the lease, no longer renewed, "
                    "expires (within %g s)",
                    self.options.provider_id,
                    self.name,
                    exc.code,
                    exc.message,
                    self.options.lease_seconds,
                )
                return True
            return False
        self.drain_taken = True
        return True

    async def _shutdown(self, drained: bool) -> None:
        if not drained:
            await self._drain()
        if self.workers:
            await asyncio.wait(set(self.workers), timeout=self.options.drain_seconds)
        if not self.lost.is_set():
            await self._release()

    async def _release(self) -> None:
        with contextlib.suppress(RegistryError):
            await self.client.release(self.name, self.token, *self.ident)
            self.released = True

    async def _run(self, call: api.ClaimedCallBody, operation: str) -> None:
        """Run a call the claim operation ``operation`` took."""
        try:
            await self._execute(call, operation)
        except Exception:
            # A fault of the SDK or of the client, never the tool's (its errors are results):
            # said here, where it would otherwise be "Task exception was never retrieved".
            self.report.lost += 1
            _LOG.exception(
                "provider %r of toolset %r: call %s of tool %s could not be completed; the "
                "registry ends it when its deadline passes",
                self.options.provider_id,
                self.name,
                call.tool_use_id,
                call.tool,
            )
        finally:
            self.active -= 1
            self.freed.set()

    async def _execute(self, call: api.ClaimedCallBody, operation: str) -> None:
        spec = self.specs.get(call.tool)
        if spec is None:
            await self._finish(call, "failed", {"code": "unknown_tool"}, f"no tool {call.tool}")
            return
        try:
            payload = spec.payload.codec.decode(call.payload_json)
        except PayloadError as exc:
            issues = [{"path": i.path, "message": i.message} for i in exc.issues]
            await self._finish(
                call, "failed", {"code": "invalid_payload", "issues": issues}, str(exc)
            )
            return
        context = ToolContext(
            run_id=call.meta.run_id,
            agent_id="",
            tool_id=call.tool,
            tool_call_id=call.meta.tool_call_id,
            labels=call.meta.labels,
            call_depth=call.meta.call_depth,
        )
        # The deadline is on the registry's clock, which this host's may not agree with.
        remaining = (call.execution_deadline_ms - self.registry_now_ms()) / 1000
        try:
            # The runs the executor starts (an agent published as a tool) carry the depth on.
            with serving_registry_call(call.meta.call_depth):
                # The deadline decides, not the exception: an executor's own TimeoutError (a
                # query of its own that timed out) is its failure, not the deadline passing.
                value = await within_deadline(
                    max(remaining, 0.001), self.executor.execute(call.tool, payload, context)
                )
        except ToolOverloadedError:
            await self._overload(call, operation)
            return
        except DeadlinePassed:
            await self._finish(
                call, "failed", {"code": "timeout"}, f"{call.tool} ran past its deadline"
            )
            return
        except OutcomeUnknownError as exc:
            # The executor cannot tell whether the call ran (an MCP session that lost the
            # answer): the consumer reads outcome_unknown from this code, not tool_failed,
            # which would invite the model to run the call again.
            await self._finish(
                call, "failed", {"code": "outcome_unknown"}, f"{call.tool}: {message_of(exc)}"
            )
            return
        except Exception as exc:
            await self._finish(
                call,
                "failed",
                {"code": "execution_failed"},
                f"{call.tool} failed: {type(exc).__name__}: {exc}",
            )
            return
        try:
            result = spec.result.codec.encode(value)
        except PayloadError as exc:
            await self._finish(call, "failed", {"code": "invalid_result"}, str(exc))
            return
        await self._finish(call, "completed", result, "")

    async def _overload(self, call: api.ClaimedCallBody, operation: str) -> None:
        """Give the call back; counted as overloaded once the registry took it back. Sent
        again while the registry is out of reach and the call can still be given back, as a
        result is (a repeat of an overload applied already changes nothing): given up at the
        first failure, the call, which did not run, stayed claimed and ended
        ``outcome_unknown`` with the lease."""
        while True:
            try:
                await self.client.report_overload(
                    self.name, call.tool_use_id, *self.ident, claim_operation_id=operation
                )
            except RegistryError as exc:
                if exc.code == "service_unavailable" and self._before_deadline(call):
                    await asyncio.sleep(_RESEND_PAUSE)
                    continue
                self._refused(call, "the overload", exc)
                return
            self.report.overloaded += 1
            return

    def _before_deadline(self, call: api.ClaimedCallBody) -> bool:
        """Whether ``call`` can still be completed or given back (on the registry's clock)."""
        return self.registry_now_ms() < call.execution_deadline_ms

    def _refused(self, call: api.ClaimedCallBody, what: str, exc: RegistryError) -> None:
        """The registry refused ``what`` (a result, an overload) of ``call``: counted as lost,
        and said."""
        self.report.lost += 1
        _LOG.warning(
            "provider %r of toolset %r: the registry refused %s of call %s (tool %s): %s: %s",
            self.options.provider_id,
            self.name,
            what,
            call.tool_use_id,
            call.tool,
            exc.code,
            exc.message,
        )

    async def _finish(
        self,
        call: api.ClaimedCallBody,
        status: Literal["completed", "failed"],
        result: Any,
        message: str,
    ) -> None:
        if status == "failed":
            # The code leads the message: consumers show the message to the model. An
            # exception's text can be any size: the message is cut to what the registry takes.
            message = cut(f"{result['code']}: {message}", _MESSAGE_CHARS)
            result_json = json.dumps({**result, "message": message})
        else:
            result_json = result if isinstance(result, str) else json.dumps(result)
        if len(result_json) > api.MAX_PAYLOAD:
            status, result_json, message = self._too_large(
                call, len(result_json), f"it takes results of at most {api.MAX_PAYLOAD} characters"
            )
        shrunk = False
        # Keep trying while the call can still be completed: a registry that restarts keeps
        # the claim, and completing again is harmless.
        while True:
            try:
                await self._complete(call, status, result_json, message)
            except RegistryError as exc:
                if exc.code == "service_unavailable" and self._before_deadline(call):
                    await asyncio.sleep(_RESEND_PAUSE)
                    continue
                if exc.code == "body_too_large" and not shrunk:
                    # Under the characters' limit, but larger than the registry's body limit
                    # once encoded: the call still gets an outcome, saying why.
                    status, result_json, message = self._too_large(
                        call, len(result_json), exc.message
                    )
                    shrunk = True
                    continue
                self._refused(call, "the result", exc)
                return
            if status == "completed":
                self.report.completed += 1
            else:
                self.report.failed += 1
            return

    def _too_large(
        self, call: api.ClaimedCallBody, size: int, why: str
    ) -> tuple[Literal["failed"], str, str]:
        """The failure that replaces a result too large for the registry."""
        message = (
            f"result_too_large: tool {call.tool} of toolset {self.name!r} answered call "
            f"{call.tool_use_id} with a result of {size} characters, too large for the "
            f"registry ({cut(why, 512)}); return less (a page, a summary, or where to find "
            "the rest)"
        )
        result = {"code": "result_too_large", "message": message, "size": size}
        return "failed", json.dumps(result), message

    async def _complete(
        self,
        call: api.ClaimedCallBody,
        status: Literal["completed", "failed"],
        result_json: str,
        message: str,
    ) -> None:
        if self.completions is None:
            await self.client.complete(
                self.name,
                call.tool_use_id,
                *self.ident,
                status=status,
                result_json=result_json,
                message=message,
            )
            return
        await self.completions.complete(
            api.CompletionBody(
                tool_use_id=call.tool_use_id,
                status=status,
                result_json=result_json,
                message=message[:4096],
            )
        )


def _own_clock_ms() -> float:
    return time.time() * 1000
