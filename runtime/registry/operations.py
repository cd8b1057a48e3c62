"""The registry's operations over a store: each one reads, applies an admission rule, writes.

This is the registry without its HTTP layer: registrations, catalog reads, calls, claims,
completions and result waits. Access control by role is the service's, applied before calling
in; which calls a consumer may see is the calls' own data, so the service passes its principal
to the call operations. Compiled contracts are cached by fingerprint, so a toolset's schemas
are compiled once per registry process, not once per call.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.contracts.specs import ToolSpec
from agentgen.runtime.contracts.validation_errors import error_summary
from agentgen.runtime.lru import LRU
from agentgen.runtime.registry import admission
from agentgen.runtime.registry.admission import (
    DELIVERABLE,
    Admission,
    CallRecord,
    CallRequest,
    CatalogEntry,
    Limits,
    Registration,
    ResultStatus,
    catalog_key,
    lease_key,
    record_key,
)
from agentgen.runtime.registry.auth import Principal
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.kept import KeptDeclaration, KeptEntry, keep
from agentgen.runtime.registry.store import (
    ANSWER_TIMEOUT_S,
    Change,
    Notify,
    Operation,
    Store,
    Write,
    unanswered,
)
from agentgen.runtime.search.analysis import normalized

__all__ = [
    "CatalogCorruptError",
    "ClaimedCall",
    "Completion",
    "Registered",
    "RegistryOperations",
    "Result",
]

#: How often a waiting consumer looks at its call again even without a wake-up (lease expiry
#: and deadlines are noticed by whoever looks).
RECHECK_MS = 1_000
_CLAIM_OP_RETENTION_MS = 15 * 60_000
#: Longest ``GET /health`` waits for the store's clock before answering 503 (a store of one's
#: own may have no bound of its own).
HEALTH_TIMEOUT_S = ANSWER_TIMEOUT_S
#: How much stored entry text (characters) the parsed-entry cache keeps at most.
_ENTRY_TEXT_BYTES = 256 * 2**20
_COMPILED_CACHE = 512


class CatalogCorruptError(Exception):
    """Persisted catalog entries failed strict validation; every bad key is listed."""

    def __init__(self, store: str, problems: Sequence[tuple[str, str]]) -> None:
        lines = "\n".join(f"  {key}: {why}" for key, why in problems)
        super().__init__(
            f"registry store {store} holds {len(problems)} invalid catalog entr"
            f"{'y' if len(problems) == 1 else 'ies'} (nothing was dropped; repair or delete "
            f"them):\n{lines}"
        )
        self.problems = list(problems)


@dataclass(frozen=True)
class Registered:
    registration_token: str
    schema_fingerprint: str
    lease_expires_at_ms: int


@dataclass(frozen=True)
class ClaimedCall:
    tool_use_id: str
    tool: str
    payload_json: str
    meta: admission.CallMeta
    registration_token: str
    execution_deadline_ms: int


@dataclass(frozen=True)
class Completion:
    """A provider's result for one call it holds."""

    tool_use_id: str
    status: Literal["completed", "failed"]
    result_json: str
    message: str = ""


@dataclass(frozen=True)
class Result:
    status: ResultStatus
    result_json: str | None = None
    message: str = ""


_HeldRule = Callable[[CallRecord | None, Admission | None, int], CallRecord | None]


def _queue(toolset: str) -> str:
    return f"requests:{toolset}"


def _channel(use_id: str) -> str:
    return f"result:{use_id}"


def _op_key(name: str, key: str, operation_id: str) -> str:
    """Where claim operation ``operation_id`` of lease ``key`` in toolset ``name`` keeps what it
    claimed. The toolset is part of it: provider and operation IDs are the provider's to choose
    (and a lease's are the same in every toolset it serves), so a provider of another toolset
    naming the same ones would otherwise have been handed this operation's calls (payloads
    included) as a replay, or closed it by giving it back."""
    lease = hashlib.sha256(f"{catalog_key(name)}\x00{key}".encode()).hexdigest()[:32]
    return f"claimop:{lease}:{operation_id}"


def _attempt_key(op_key: str) -> str:
    """Which request of a claim operation is the one still wanted: a transport retry (same
    operation) supersedes the request whose connection broke, which may still be waiting."""
    return f"{op_key}:attempt"


#: Catalog entries by their stored form. Entries are read on every call but change rarely:
#: each stored form is parsed once, and kept as a :class:`KeptEntry` (its declaration as text,
#: which the garbage collector does not walk). Kept entries are frozen: sharing them is safe.
#: Each lease change (a renewal every third of a lease) stores a new form of the entry, so
#: the stored texts are also bounded in bytes: 1,024 forms of a 5 MB toolset renewed every 20 s
#: would have kept 5 GB of them after six hours.
_ENTRIES: LRU[str, KeptEntry] = LRU(
    1024, max_weight=_ENTRY_TEXT_BYTES, weight=lambda raw, _entry: len(raw)
)
#: The cache is the process's, shared by every registry it serves (each LocalRegistry runs its
#: service on a thread of its own) and by the worker threads that parse and check large
#: bodies: each use of it holds this lock (parsing and serialising happen outside it).
_CACHES = threading.Lock()


def _entry(raw: str | None) -> KeptEntry | None:
    return None if raw is None else _parse_entry(raw)


def _parse_entry(raw: str) -> KeptEntry:
    with _CACHES:
        entry = _ENTRIES.get(raw)
    if entry is None:
        parsed = keep(CatalogEntry.model_validate_json(raw))
        with _CACHES:
            entry = _ENTRIES.put(raw, parsed)
    return entry


def _write_entry(entry: KeptEntry) -> Write:
    """The entry's stored form, kept as the parse of that form: every call reads its toolset's
    entry, and parsing what was just written (a registration, or any lease change: a renewal
    every third of a lease) would hold the event loop for as long as parsing its declaration
    (2,000 tools: about 0.7 s). The declaration's text was made once, when it was registered
    (serialising 2,000 tools takes about 60 ms): the stored form is exactly
    ``entry.entry().model_dump_json()``."""
    raw = entry.stored()
    with _CACHES:
        _ENTRIES.put(raw, entry)
    return Write(raw)


def _record(raw: str | None) -> CallRecord | None:
    return None if raw is None else CallRecord.model_validate_json(raw)


def _write_record(record: CallRecord) -> dict[str, Write]:
    return {record_key(record.tool_use_id): Write(record.model_dump_json(), record.expires_at_ms)}


def _notify(record: CallRecord | None) -> list[Notify]:
    if record is None or record.state not in DELIVERABLE:
        return []
    return [Notify(_channel(record.tool_use_id), record.expires_at_ms)]


class RegistryOperations:
    def __init__(self, store: Store, limits: Limits | None = None) -> None:
        self.store = store
        self.limits = limits or Limits()
        self._compiled: LRU[str, dict[str, ToolSpec]] = LRU(_COMPILED_CACHE)

    # ------------------------------------------------------------------ start-up

    async def verify_catalog(self) -> int:
        """Read every persisted catalog entry strictly; raise :class:`CatalogCorruptError`
        naming every invalid key. Returns the number of entries."""
        problems: list[tuple[str, str]] = []
        entries = await self.store.scan("toolset:")
        for key, raw in entries:
            try:
                checked = keep(admission.check_entry(key, raw))
                with _CACHES:
                    _ENTRIES.put(raw, checked)
            except ValidationError as exc:
                problems.append((key, error_summary(exc)))
            except ValueError as exc:
                problems.append((key, str(exc)))
        if problems:
            raise CatalogCorruptError(self.store.description, problems)
        return len(entries)

    def _specs(self, entry: KeptEntry) -> dict[str, ToolSpec]:
        specs = self._compiled.get(entry.schema_fingerprint)
        if specs is None:  # compiled from the declaration's text again
            specs = self._compiled.put(
                entry.schema_fingerprint, admission.compile_toolset(entry.toolset)
            )
        return specs

    # ------------------------------------------------------------------ providers

    async def register(self, request: Registration) -> Registered:
        # In a worker thread: a large toolset takes a second to fingerprint and compile, which
        # would stall every other request and long poll of this registry on the event loop.
        def check() -> tuple[str, dict[str, ToolSpec], KeptDeclaration]:
            token, specs = admission.check_registration(request, self.limits, self._compiled.peek)
            # What a new admission keeps of its declaration: its text is made here too.
            text = request.toolset.model_dump_json()
            return token, specs, KeptDeclaration.of(request.toolset, text)

        token, specs, declaration = await asyncio.to_thread(check)
        # Compiled by the checks, kept so that the first call does not pay for it.
        self._compiled.put(request.schema_fingerprint, specs)
        key = catalog_key(request.toolset.name)
        lease = lease_key(request.provider_id, request.incarnation_id)

        def decide(values: Mapping[str, str | None], now: int) -> Change[Registered]:
            admitted = admission.register(_entry(values[key]), request, token, now)
            # The same registration again copies the kept entry, and with it the declaration
            # it was first admitted with; a new one is admitted with the request's.
            entry = (
                admitted if isinstance(admitted, KeptEntry) else KeptEntry.of(admitted, declaration)
            )
            return Change(
                Registered(
                    token, entry.schema_fingerprint, entry.provider_leases[lease].expires_at_ms
                ),
                writes={key: _write_entry(entry)},
            )

        return await self.store.transact([key], decide)

    async def _update_entry(
        self, name: str, rule: Callable[[KeptEntry | None, int], KeptEntry]
    ) -> KeptEntry:
        key = catalog_key(name)

        def decide(values: Mapping[str, str | None], now: int) -> Change[KeptEntry]:
            before = _entry(values[key])
            entry = rule(before, now)
            if entry is before:
                return Change(entry)
            return Change(entry, writes={key: _write_entry(entry)})

        return await self.store.transact([key], decide)

    async def renew(
        self, name: str, token: str, provider_id: str, incarnation_id: str, lease_ms: int
    ) -> int:
        lease = lease_key(provider_id, incarnation_id)
        entry = await self._update_entry(
            name,
            lambda e, now: admission.renew(e, name, token, lease, lease_ms, now, self.limits),
        )
        return entry.provider_leases[lease].expires_at_ms

    async def drain(
        self, name: str, token: str, provider_id: str, incarnation_id: str, settle_ms: int
    ) -> int:
        lease = lease_key(provider_id, incarnation_id)
        entry = await self._update_entry(
            name,
            lambda e, now: admission.drain(e, name, token, lease, settle_ms, now, self.limits),
        )
        return entry.provider_leases[lease].expires_at_ms

    async def release(self, name: str, token: str, provider_id: str, incarnation_id: str) -> None:
        lease = lease_key(provider_id, incarnation_id)
        await self._update_entry(name, lambda e, now: admission.release(e, name, token, lease, now))

    async def unregister(self, name: str, expected_token: str) -> None:
        await self._update_entry(name, lambda e, now: admission.unregister(e, name, expected_token))

    # ------------------------------------------------------------------ catalog reads

    async def list_toolsets(self, tags: Sequence[str] = ()) -> list[str]:
        return await self._names(tags, lambda toolset: True)

    async def search_toolsets(self, query: str, tags: Sequence[str] = ()) -> list[str]:
        """Names of the active toolsets whose name, description or one of whose tags contains
        ``query``, ignoring case and read in Unicode NFKC as tool search reads text (and having
        every tag of ``tags``), by name."""
        if not query:
            raise RegistryError(
                "validation_error", "a search needs a query of one character or more"
            )
        needle = _folded(query)
        if not needle:
            # Read without its invisible characters, the query is the empty text, which every
            # toolset contains: it would name the whole catalog, where "" is refused.
            raise RegistryError(
                "validation_error",
                "a search needs a query of one visible character or more: this one holds only "
                "invisible characters (zero-width joiners, soft hyphens, direction marks, "
                "variation selectors), which search ignores",
            )
        return await self._names(tags, lambda toolset: _mentions(toolset, needle))

    async def _names(
        self, tags: Sequence[str], chosen: Callable[[KeptDeclaration], bool]
    ) -> list[str]:
        """Names of the active toolsets having every tag of ``tags`` that ``chosen`` keeps."""
        wanted = set(tags)
        return [
            entry.declaration.name
            for entry in await self._active_entries()
            if wanted <= set(entry.declaration.tags) and chosen(entry.declaration)
        ]

    async def _active_entries(self) -> list[KeptEntry]:
        """Every active entry, by name, from one scan."""
        entries = [_parse_entry(raw) for _, raw in await self.store.scan("toolset:")]
        active = [entry for entry in entries if entry.state == "active"]
        return sorted(active, key=lambda entry: entry.declaration.name)

    async def resolve_many(self, names: Sequence[str] | None) -> list[tuple[str, KeptEntry | None]]:
        """The active entries of ``names`` (None where missing or withdrawn), or of every
        active toolset when ``names`` is None, from one read: each entry, as in
        :meth:`resolve_entry`, gives its declaration and token together."""
        if names is None:
            return [(entry.declaration.name, entry) for entry in await self._active_entries()]
        raws = await self.store.get_many([catalog_key(name) for name in names])
        found: list[tuple[str, KeptEntry | None]] = []
        for name, raw in zip(names, raws, strict=True):
            entry = _entry(raw)
            found.append((name, entry if entry is not None and entry.state == "active" else None))
        return found

    async def resolve(self, name: str) -> tuple[ToolsetDeclaration, str]:
        """The declaration and the token of the admission it belongs to, from one read."""
        entry = await self.resolve_entry(name)
        return entry.toolset, entry.registration_token

    async def resolve_entry(self, name: str) -> KeptEntry:
        """The active catalog entry of ``name``, from one read (shared: never change it)."""
        entry = _entry(await self.store.get(catalog_key(name)))
        if entry is None or entry.state != "active":
            raise RegistryError("not_found", f'toolset "{name}" not found')
        return entry

    async def check_admission(self, name: str, expected_token: str) -> bool:
        entry = _entry(await self.store.get(catalog_key(name)))
        if entry is None or entry.state != "active" or entry.registration_token != expected_token:
            return False
        return bool(admission.routable(entry, await self.store.now_ms()))

    # ------------------------------------------------------------------ consumers

    async def call(self, request: CallRequest) -> dict[str, Any]:
        ref, _ = await self._admit(request)
        return ref

    async def call_and_wait(
        self, request: CallRequest, wait_ms: int
    ) -> tuple[dict[str, Any], Result]:
        """Admit the call (or attach to it) and wait up to ``wait_ms`` for its outcome, in one
        operation: the admission's own answer says whether the call has ended already, and a
        wake-up after it needs one read."""
        use_id = admission.tool_use_id(request.meta.run_id, request.meta.tool_call_id)
        # The position is taken before the admission, so no announcement after it is missed.
        channel = _channel(use_id)
        cursor = await self.store.cursor(channel)
        try:
            ref, record = await self._admit(request)
            result = await self._await(
                use_id, record.registration_token, wait_ms, cursor, record, request.caller
            )
        finally:
            await self.store.release(channel)
        return ref, result

    async def _admit(self, request: CallRequest) -> tuple[dict[str, Any], CallRecord]:
        use_id = admission.tool_use_id(request.meta.run_id, request.meta.tool_call_id)
        entry_key, call_key = catalog_key(request.toolset), record_key(use_id)

        def decide(
            values: Mapping[str, str | None], now: int
        ) -> Change[tuple[dict[str, Any], CallRecord]]:
            entry = _entry(values[entry_key])
            specs = self._specs(entry) if entry is not None and entry.state == "active" else None
            existing = _record(values[call_key])
            decision = admission.admit(entry, existing, request, now, self.limits, specs)
            ref = dict(decision.extra)
            enqueue = ref.pop("enqueue", False)
            record = decision.record
            current = record or existing
            assert current is not None  # admit wrote a new record or attached to this one
            return Change(
                (ref, current),
                writes=_write_record(record) if record is not None else {},
                enqueue=[(_queue(request.toolset), use_id)] if enqueue else (),
                enqueue_until_ms=current.expires_at_ms,
                notify=_notify(record),
                error=decision.error,
            )

        return await self.store.transact([entry_key, call_key], decide)

    async def retry(self, use_id: str, expected_token: str, *, caller: Principal) -> dict[str, Any]:
        """Retry ``caller``'s overloaded call (an admin may retry any)."""
        record = _record(await self.store.get(record_key(use_id)))
        if record is None or not admission.visible_to(record, caller):
            raise admission.missing_call(use_id)
        entry_key, call_key = catalog_key(record.toolset), record_key(use_id)

        def decide(values: Mapping[str, str | None], now: int) -> Change[dict[str, Any]]:
            decision = admission.retry(
                _record(values[call_key]),
                _entry(values[entry_key]),
                use_id,
                expected_token,
                now,
                caller=caller,
            )
            ref = dict(decision.extra)
            enqueue = ref.pop("enqueue", False)
            new = decision.record
            return Change(
                ref,
                writes=_write_record(new) if new is not None else {},
                enqueue=[(_queue(record.toolset), use_id)] if enqueue else (),
                enqueue_until_ms=record.expires_at_ms,
                notify=_notify(new),
            )

        return await self.store.transact([entry_key, call_key], decide)

    async def await_result(
        self, use_id: str, token: str, wait_ms: int, *, caller: Principal
    ) -> Result:
        """Wait up to ``wait_ms`` for ``caller``'s call to end or be overloaded (``pending`` if
        not); another consumer's call is answered as one that does not exist.

        The registry's facts (a replaced admission, a lost lease, a passed deadline) are
        applied when the wait starts and whenever it times out without news; a wake-up
        announcing a change only needs the record read again.
        """
        channel = _channel(use_id)
        cursor = await self.store.cursor(channel)
        try:
            return await self._await(use_id, token, wait_ms, cursor, None, caller)
        finally:
            await self.store.release(channel)

    async def _await(
        self,
        use_id: str,
        token: str,
        wait_ms: int,
        cursor: str,
        record: CallRecord | None,
        caller: Principal,
    ) -> Result:
        """``record`` is the call as it stood at ``cursor``, facts applied, if known. The caller
        is checked at every read: a record that expired and was made again by another consumer
        is not this caller's."""
        deadline = time.monotonic() + wait_ms / 1000
        channel = _channel(use_id)
        woken = False
        while True:
            if record is None:
                if woken:
                    record = _record(await self.store.get(record_key(use_id)))
                else:
                    record = await self._settled(use_id)
            if record is None or not admission.visible_to(record, caller):
                raise admission.missing_call(use_id)
            if token and record.registration_token != token:
                raise RegistryError(
                    "validation_error",
                    f"call {use_id} was admitted under {record.registration_token}, not {token}",
                )
            if record.state in DELIVERABLE:
                return Result(record.state, record.result_json, record.message)  # type: ignore[arg-type]
            remaining = int((deadline - time.monotonic()) * 1000)
            if remaining <= 0:
                return Result("pending")
            after = await self.store.wait(channel, cursor, min(remaining, RECHECK_MS))
            woken, cursor, record = after != cursor, after, None

    async def _settled(self, use_id: str) -> CallRecord | None:
        """The call's record with the registry's facts applied (committed if they change it)."""
        record = _record(await self.store.get(record_key(use_id)))
        if record is None or record.state not in ("pending", "claimed"):
            return record
        (raw_entry,), now = await self.store.snapshot([catalog_key(record.toolset)])
        if admission.settle(record, _entry(raw_entry), now) is None:
            return record
        entry_key, call_key = catalog_key(record.toolset), record_key(use_id)

        def decide(values: Mapping[str, str | None], now: int) -> Change[CallRecord | None]:
            current = _record(values[call_key])
            if current is None:
                return Change(None)
            new = admission.settle(current, _entry(values[entry_key]), now)
            if new is None:
                return Change(current)
            return Change(new, writes=_write_record(new), notify=_notify(new))

        return await self.store.transact([entry_key, call_key], decide)

    # ------------------------------------------------------------------ providers at work

    async def claim(
        self,
        name: str,
        token: str,
        provider_id: str,
        incarnation_id: str,
        max_calls: int,
        wait_ms: int,
        operation_id: str,
    ) -> list[ClaimedCall]:
        """Calls for this lease to run: up to ``max_calls``, waiting up to ``wait_ms`` for the
        first. Repeating a claim operation (same ``operation_id``) returns what it claimed."""
        lease = lease_key(provider_id, incarnation_id)
        op_key = _op_key(name, lease, operation_id)
        entry_key = catalog_key(name)
        (previous, raw_entry), now = await self.store.snapshot([op_key, entry_key])
        if previous is not None:
            return await self._replay(previous.split(",") if previous else [], lease, operation_id)
        entry = _entry(raw_entry)
        if entry is None or entry.state != "active" or entry.registration_token != token:
            raise RegistryError(
                "provider_lease_lost",
                f"toolset {name!r}: token {token} is not the current admission; stop serving",
            )
        current = entry.provider_leases.get(lease)
        if current is None or current.expires_at_ms <= now:
            raise RegistryError(
                "provider_lease_lost",
                f"toolset {name!r}: this provider's lease expired or was released; stop serving",
            )
        if current.draining:
            return []
        # This request becomes the operation's attempt: a request of the same operation still
        # waiting (its client's connection broke, and the client retried) would otherwise take
        # calls for nobody, claimed in this lease's name and answered to a closed connection.
        attempt_key = _attempt_key(op_key)
        attempt = uuid.uuid4().hex

        def start(values: Mapping[str, str | None], now: int) -> Change[str | None]:
            if values[op_key] is not None:  # claimed meanwhile: replay that
                return Change(values[op_key])
            return Change(None, writes={attempt_key: Write(attempt, now + _CLAIM_OP_RETENTION_MS)})

        claimed_meanwhile = await self.store.transact([op_key, attempt_key], start)
        if claimed_meanwhile is not None:
            ids = claimed_meanwhile.split(",") if claimed_meanwhile else []
            return await self._replay(ids, lease, operation_id)
        queue = _queue(name)
        deliveries = await self.store.receive(queue, lease, max_calls, wait_ms)
        if not deliveries:
            return []
        use_ids = list(dict.fromkeys(d.body for d in deliveries))

        def decide(values: Mapping[str, str | None], now: int) -> Change[list[CallRecord]]:
            """Every delivered call in one decision; each message is used (or its call put
            back in line as a new message) and acknowledged in the same transaction."""
            entry = _entry(values[entry_key])
            ids = [i for i in (values[op_key] or "").split(",") if i]
            writes: dict[str, Write] = {}
            requeue: list[tuple[str, str]] = []
            #: The latest expiry of the calls put back in line.
            until: int | None = None
            notify: list[Notify] = []
            claimed: list[CallRecord] = []
            superseded = values[attempt_key] != attempt
            for use_id in use_ids:
                record = _record(values[record_key(use_id)])
                if superseded:  # a retry of this operation waits for it: back in line
                    if record is not None and record.state == "pending":
                        requeue.append((queue, use_id))
                        until = max(until or 0, record.expires_at_ms)
                    continue
                new, mine = admission.claim(record, entry, lease, token, operation_id, now)
                if new is not None:
                    writes.update(_write_record(new))
                    notify.extend(_notify(new))
                current = new or record
                if mine and current is not None:
                    claimed.append(current)
                    if use_id not in ids:
                        ids.append(use_id)
                # Still waiting for a provider, but not this one (its lease stopped being
                # routable meanwhile): back in line at once for the others.
                elif current is not None and current.state == "pending":
                    requeue.append((queue, use_id))
                    until = max(until or 0, current.expires_at_ms)
            if claimed:
                writes[op_key] = Write(",".join(ids), now + _CLAIM_OP_RETENTION_MS)
            return Change(
                claimed,
                writes=writes,
                enqueue=requeue,
                enqueue_until_ms=until,
                notify=notify,
                ack=[(queue, d.message_id) for d in deliveries],
            )

        keys = [entry_key, op_key, attempt_key, *(record_key(use_id) for use_id in use_ids)]
        return [_claimed(record) for record in await self.store.transact(keys, decide)]

    async def _replay(self, ids: list[str], lease: str, operation_id: str) -> list[ClaimedCall]:
        out = []
        for use_id in ids:
            record = _record(await self.store.get(record_key(use_id)))
            if (
                record is not None
                and record.state == "claimed"
                and record.owner == lease
                and record.claim_operation_id == operation_id
            ):
                out.append(_claimed(record))
        return out

    async def complete(
        self,
        name: str,
        use_id: str,
        provider_id: str,
        incarnation_id: str,
        status: Literal["completed", "failed"],
        result_json: str,
        message: str,
    ) -> None:
        (error,) = await self.complete_many(
            name, provider_id, incarnation_id, [Completion(use_id, status, result_json, message)]
        )
        if error is not None:
            raise error

    async def complete_many(
        self, name: str, provider_id: str, incarnation_id: str, completions: Sequence[Completion]
    ) -> list[RegistryError | None]:
        """Record several results of one lease in one trip to the store. Each completion is
        judged on its own, exactly as :meth:`complete` would: returns, per completion, None or
        the refusal :meth:`complete` would have raised."""
        lease = lease_key(provider_id, incarnation_id)
        operations = [
            self._held_operation(name, done.tool_use_id, _completing(lease, done))
            for done in completions
        ]
        outcomes = await self.store.transact_many(operations)
        refusals: list[RegistryError | None] = []
        for outcome in outcomes:
            if isinstance(outcome, RegistryError):
                refusals.append(outcome)
            elif isinstance(outcome, Exception):
                raise outcome  # the store failed: nothing is known about this completion
            else:
                refusals.append(None)
        return refusals

    async def report_overload(
        self,
        name: str,
        use_id: str,
        provider_id: str,
        incarnation_id: str,
        *,
        claim_operation_id: str | None = None,
    ) -> None:
        """Give a call back unrun; ``claim_operation_id`` names the claim that took it (see
        :func:`admission.overload`)."""
        lease = lease_key(provider_id, incarnation_id)
        await self._held_call(
            name,
            use_id,
            lambda record, entry, now: admission.overload(
                record, entry, use_id, lease, now, claim_operation_id
            ),
        )

    async def give_back_unrun(
        self, name: str, token: str, provider_id: str, incarnation_id: str, operation_id: str
    ) -> int:
        """End ``failed`` (:data:`admission.NOT_RUN`) the calls claim operation
        ``operation_id`` of this lease took and still holds, which the provider says it never
        ran (it could not read the answer handing them over); returns how many. The operation
        is closed first: a request of it still waiting takes no call (what it receives goes
        back in line), and a later claim under its ID only replays what it took."""
        lease = lease_key(provider_id, incarnation_id)
        op_key = _op_key(name, lease, operation_id)
        attempt_key = _attempt_key(op_key)
        entry_key = catalog_key(name)
        (raw_entry,), now = await self.store.snapshot([entry_key])
        entry = _entry(raw_entry)
        current = None if entry is None else entry.provider_leases.get(lease)
        if (
            entry is None
            or entry.state != "active"
            or entry.registration_token != token
            or current is None
            or current.expires_at_ms <= now
        ):
            raise RegistryError(
                "provider_lease_lost",
                f"toolset {name!r}: this provider's lease under token {token} is gone (expired, "
                "released, replaced or unregistered): the calls it held ended outcome_unknown",
            )
        closed = uuid.uuid4().hex

        def close(values: Mapping[str, str | None], now: int) -> Change[str]:
            ids = values[op_key] or ""
            until = now + _CLAIM_OP_RETENTION_MS
            return Change(
                ids, writes={op_key: Write(ids, until), attempt_key: Write(closed, until)}
            )

        ids = [i for i in (await self.store.transact([op_key, attempt_key], close)).split(",") if i]
        if not ids:
            return 0

        def unrun(
            record: CallRecord | None, entry: Admission | None, now: int
        ) -> CallRecord | None:
            return admission.give_back_unrun(record, entry, lease, operation_id, now)

        outcomes = await self.store.transact_many(
            [self._held_operation(name, use_id, unrun) for use_id in ids]
        )
        for outcome in outcomes:
            if isinstance(outcome, Exception) and not isinstance(outcome, RegistryError):
                raise outcome  # the store failed
        return sum(
            1
            for outcome in outcomes
            if isinstance(outcome, CallRecord) and outcome.state == "failed"
        )

    async def _held_call(self, name: str, use_id: str, rule: _HeldRule) -> None:
        await self.store.transact(*self._held_operation(name, use_id, rule))

    def _held_operation(self, name: str, use_id: str, rule: _HeldRule) -> Operation:
        """Apply a rule of a provider about a call its lease holds (the operation's result: the
        record written, if any); a call the registry finds outside the lease meanwhile ends
        ``outcome_unknown`` and the provider hears the lease is lost."""
        entry_key, call_key = catalog_key(name), record_key(use_id)

        def decide(values: Mapping[str, str | None], now: int) -> Change[CallRecord | None]:
            record = _in_toolset(_record(values[call_key]), name, use_id)
            new = rule(record, _entry(values[entry_key]), now)
            error = None
            if new is not None and new.state == "outcome_unknown":
                error = RegistryError("provider_lease_lost", new.message)
            return Change(
                new,
                writes=_write_record(new) if new is not None else {},
                notify=_notify(new),
                error=error,
            )

        return [entry_key, call_key], decide

    async def health(self) -> int:
        """The store answers (its clock); raises StoreError otherwise, a store that does not
        answer within :data:`HEALTH_TIMEOUT_S` included (a stalled Redis: a network partition
        looks like one)."""
        try:
            return await asyncio.wait_for(self.store.now_ms(), HEALTH_TIMEOUT_S)
        except TimeoutError:
            raise unanswered(self.store.description, HEALTH_TIMEOUT_S) from None


def _in_toolset(record: CallRecord | None, name: str, use_id: str) -> CallRecord | None:
    """The record, if it is a call of toolset ``name``. A call of another toolset is answered
    exactly as a missing one: call IDs can be guessed, and a provider of one toolset has no
    business learning which calls exist in others."""
    if record is not None and record.toolset != name:
        raise admission.missing_call(use_id)
    return record


def _completing(lease: str, done: Completion) -> _HeldRule:
    def rule(record: CallRecord | None, entry: Admission | None, now: int) -> CallRecord | None:
        return admission.complete(
            record,
            entry,
            done.tool_use_id,
            lease,
            done.status,
            done.result_json,
            done.message,
            now,
        )

    return rule


def _claimed(record: CallRecord) -> ClaimedCall:
    return ClaimedCall(
        record.tool_use_id,
        record.tool,
        record.payload_json,
        record.meta,
        record.registration_token,
        record.execution_deadline_ms,
    )


def _mentions(toolset: KeptDeclaration, needle: str) -> bool:
    """Whether a :func:`_folded` ``needle`` occurs in the toolset's name, description or a
    tag."""
    texts = (toolset.name, toolset.description or "", *toolset.tags)
    return any(needle in _folded(text) for text in texts)


def _folded(text: str) -> str:
    """``text`` as catalog search compares it: in NFKC, the form tool search reads every word
    in (a decomposed "résumé", as macOS and PDF copies write it, is the composed one, and
    fullwidth "ＰＤＦ" is "PDF"), then casefolded."""
    return normalized(text).casefold()
