"""Talking to a registry client: every request bounded in time, every reply checked.

A registry client is another party's code in front of another process: it can hang, raise
anything (or an exception whose message is empty) and return anything. Every request the
runtime makes (list, resolve, call admission, retry) is bounded by the registry's timeout
(the design's ``Timeout(...)``, passed with the generated settings to
``Runtime.register_registry``, else :data:`~agentgen.runtime.contracts.limits.
DEFAULT_REGISTRY_TIMEOUT`); what comes back is checked before anything reads it. Failures are
described so that a message never ends in an empty colon. Waiting on the result stream for a
call's outcome is not a request: it lasts as long as the tool runs, and the registry service
bounds that with its own execution timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from pydantic import ValidationError

from agentgen.runtime.contracts.declarations import ToolSchema, ToolsetDeclaration
from agentgen.runtime.contracts.fingerprint import HEX64
from agentgen.runtime.contracts.toolset_text import ToolsetText
from agentgen.runtime.contracts.validation_errors import first_error
from agentgen.runtime.failures import message_of
from agentgen.runtime.registry.client import RegistryError, ResolvedToolset
from agentgen.runtime.runs.host import RegistryRegistration
from agentgen.runtime.runs.requests import RunError
from agentgen.runtime.tasks import DeadlinePassed, within_deadline
from agentgen.runtime.telemetry.spans import RegistryRequest

__all__ = [
    "MalformedReplyError",
    "RegistryTimeoutError",
    "bounded",
    "check_admission_timeout",
    "checked_batch",
    "checked_listing",
    "checked_resolution",
    "describe",
    "unanswered",
    "unavailable",
]

T = TypeVar("T")


class RegistryTimeoutError(Exception):
    """A registry request took longer than the registry's timeout (and was cancelled)."""


class MalformedReplyError(Exception):
    """A registry client returned something that is not what the protocol promises."""


def describe(exc: BaseException) -> str:
    """What happened, never empty: registry errors as they say, others with their type."""
    if isinstance(exc, RegistryError | RegistryTimeoutError | MalformedReplyError):
        return message_of(exc) or type(exc).__name__
    text = message_of(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def unanswered(exc: BaseException) -> bool:
    """Whether a failed registry request may pass when repeated: the registry did not answer,
    or said it was unavailable."""
    if isinstance(exc, RegistryError):
        return exc.code == "service_unavailable"
    return unavailable(exc)


def unavailable(exc: BaseException) -> bool:
    """Whether a failure means the registry could not be reached or did not answer in time
    (rather than refused the request)."""
    return isinstance(exc, OSError | RegistryTimeoutError | TimeoutError)


async def bounded(
    registration: RegistryRegistration,
    request: Awaitable[T],
    operation: str = "request",
    *,
    toolset: str | None = None,
    tool: str | None = None,
    token: str | None = None,
    call_depth: int = 0,
) -> T:
    """Await one registry request within the registry's timeout, as a ``agentgen.registry.
    {operation}`` span (a resolve records the version and token the registry answered; a call,
    the depth it is sent with)."""
    with RegistryRequest(
        registration.name,
        operation,
        toolset=toolset,
        tool=tool,
        token=token,
        call_depth=call_depth,
    ) as span:
        result = await _bounded(registration, request)
        if isinstance(result, ResolvedToolset) and isinstance(result.registration_token, str):
            span.resolved(_version(result), result.registration_token)
        elif span.recording and isinstance(result, list):  # a batch resolve's pairs
            for pair in result:
                if isinstance(pair, tuple) and len(pair) == 2:
                    name, one = pair
                    if isinstance(one, ResolvedToolset) and isinstance(one.registration_token, str):
                        span.resolved_one(str(name), _version(one), one.registration_token)
        return result


def check_admission_timeout(
    registration: RegistryRegistration, limit: tuple[str, float], agent_id: str, run_id: str
) -> None:
    """Refuse a run whose registry's ``Timeout`` an engine's own limit on a call admission
    (``limit``: its name and seconds) would preempt: the engine would end the admission first,
    and its call could only answer ``outcome_unknown`` where the registry's timeout says the
    registry did not answer."""
    name, seconds = limit
    if registration.timeout >= seconds:
        raise RunError(
            f"agent {agent_id!r} (run {run_id}): registry {registration.name!r} has a Timeout "
            f"of {registration.timeout:g} seconds, not shorter than {name} ({seconds:g} "
            "seconds), the longest the engine lets a call admission take: the engine would end "
            f"an admission before the registry's Timeout did. Raise {name}, or declare a "
            "shorter Timeout for the registry in the design"
        )


def _version(resolved: ResolvedToolset) -> str | None:
    version = getattr(resolved.declared, "version", None)  # not parsed when kept as text
    return version if isinstance(version, str) else None


async def _bounded(registration: RegistryRegistration, request: Awaitable[T]) -> T:
    timeout = registration.timeout
    try:
        return await within_deadline(timeout, request)
    except DeadlinePassed as passed:
        # A client's own TimeoutError before the deadline is raised as the client's failure.
        raise RegistryTimeoutError(
            f"timed out after {timeout:g} s (the registry's Timeout; declare a longer one in "
            "the design if it is expected to be this slow)"
        ) from passed.__cause__


def checked_listing(names: Any) -> list[str]:
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise MalformedReplyError(
            f"the registry client returned {type(names).__name__} instead of a list of "
            "toolset names"
        )
    return sorted(names)


def checked_batch(found: Any) -> list[tuple[str, Any]]:
    """A batch resolve reply: (toolset name, resolution or RegistryError) pairs, one per name,
    sorted by name as a listing is; each resolution is checked when it is used."""
    if not isinstance(found, list | tuple) or not all(
        isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str) for pair in found
    ):
        raise MalformedReplyError(
            f"the registry client returned {type(found).__name__} instead of a list of "
            "(toolset name, resolution) pairs"
        )
    names = [name for name, _ in found]
    if len(set(names)) != len(names):
        raise MalformedReplyError("the registry client resolved a toolset twice")
    return sorted(found, key=lambda pair: pair[0])


def checked_resolution(
    resolved: Any,
) -> tuple[ToolsetDeclaration | ToolsetText, str, str | None]:
    """The toolset, registration token and digest of a resolve reply, checked to be what the
    protocol promises (the tools themselves are checked when each is compiled; a toolset kept
    as text is parsed then too)."""
    if not isinstance(resolved, ResolvedToolset):
        raise MalformedReplyError(
            f"the registry client returned {type(resolved).__name__} instead of a ResolvedToolset"
        )
    toolset: Any = resolved.declared
    if isinstance(toolset, ToolsetText):
        if not isinstance(toolset.text, bytes):
            raise MalformedReplyError(
                f"the resolved toolset's text is {type(toolset.text).__name__}, not bytes"
            )
    elif not isinstance(toolset, ToolsetDeclaration):
        raise MalformedReplyError(
            f"the resolved toolset is {type(toolset).__name__}, not a ToolsetDeclaration"
        )
    else:
        tools: Any = toolset.tools  # a model may have been built without validation
        if not isinstance(tools, list):
            raise MalformedReplyError(f"the toolset's tools are {type(tools).__name__}, not a list")
        for index, tool in enumerate(tools):
            if not isinstance(tool, ToolSchema):
                kind = "None" if tool is None else f"a {type(tool).__name__}, not a ToolSchema"
                raise MalformedReplyError(f"tool {index} is {kind}")
    try:
        # The toolset's own fields, whatever happened to the object since it was built.
        ToolsetDeclaration.model_validate(
            {
                "name": toolset.name,
                "description": toolset.description,
                "version": toolset.version,
                "tags": toolset.tags,
            }
        )
    except ValidationError as exc:
        raise MalformedReplyError(f"the toolset's {first_error(exc)}") from None
    token = resolved.registration_token
    if not isinstance(token, str) or not HEX64.fullmatch(token):
        shown = repr(token) if isinstance(token, str) and len(token) <= 80 else type(token).__name__
        raise MalformedReplyError(
            f"the registration token {shown} is not a token (64 lowercase hex digits)"
        )
    digest = resolved.digest
    if digest is not None and not isinstance(digest, str):
        raise MalformedReplyError(f"the digest is {type(digest).__name__}, not text")
    return toolset, token, digest
