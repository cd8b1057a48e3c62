"""Which failures a durable run retries, and how a failed run is reported to its client.

A planning activity retries what may succeed when repeated (a registry or a provider that did
not answer, a connection that broke, a rate limit, an overloaded or unavailable provider: a
:class:`ModelError` the adapter marked ``transient``) with backoff. The SPEC's typed errors
never retry: a catalog that cannot be built (version mismatch, a source outside the agent's
consumption, a duplicate tool... and a registry that answered wrongly), an adapter refusing a
request (``ToolSearchUnsupportedError``, history replay errors, every other ``ModelError``:
the provider refused the request as invalid, the client is not configured...), a run
that cannot start or go on (``RunError``), and mistakes no repetition fixes (an agent that is
not registered, a scripted model that ran out). Nor does anything not known to be transient:
a planner's own bug (a ``ValueError`` parsing the model's reply), a value that cannot be sent,
an application's exception. They fail the run with their message, and
:func:`run_failure` raises them again in the client with their own type, as the in-memory
engine would have.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError

from agentgen.runtime.adapters.errors import (
    BrokenHistoryError,
    DuplicateCallIdError,
    EmptyRefusalError,
    EmptyReplyError,
    HistoryReplayError,
    MissingNamespaceHistoryError,
    MissingSearchRecordsError,
    ModelRefusalError,
    OutputBudgetError,
    ProviderNameError,
    TamperedHistoryError,
    ToolIdentityError,
    transient_failure,
)
from agentgen.runtime.agents.definition import DefinitionError
from agentgen.runtime.contracts.codecs import PayloadError
from agentgen.runtime.contracts.declarations import ContractError
from agentgen.runtime.engines.temporal.payload_limits import PayloadTooLargeError
from agentgen.runtime.failures import Cancellation, message_of
from agentgen.runtime.model_client import (
    IncompleteAnswerError,
    ModelError,
    RefusedAnswerError,
    ToolSearchUnsupportedError,
)
from agentgen.runtime.runs.catalog import (
    CatalogError,
    DuplicateToolError,
    OutsideConsumptionError,
    RegistryNotRegisteredError,
    RegistryReadError,
    SourceNotFoundError,
    SourceRemovedError,
    UnconfiguredAgentExecutorError,
    VersionMismatchError,
)
from agentgen.runtime.runs.confirmation import ConfirmationError
from agentgen.runtime.runs.registry_calls import unanswered
from agentgen.runtime.runs.requests import (
    MissingLabelsError,
    ModelTimeoutError,
    RunError,
    ToolCallIdError,
)

__all__ = ["RunCancelledError", "application_error", "retryable", "run_failure"]


class RunCancelledError(RunError, Cancellation):
    """A durable run was cancelled before it finished (a cancellation, not a failure: its
    ``invoke_agent`` span says ``agentgen.outcome=cancelled``)."""


#: Failures no repetition fixes (subclasses included).
_PERMANENT: tuple[type[BaseException], ...] = (
    RunError,
    CatalogError,
    ModelError,
    ContractError,
    PayloadError,
    ConfirmationError,
    DefinitionError,
    LookupError,
    AssertionError,
    NotImplementedError,
)

#: The runtime's errors a client raises again by name (their constructor takes the message).
_BY_NAME: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (
        RunError,
        MissingLabelsError,
        ToolCallIdError,
        ModelTimeoutError,
        RunCancelledError,
        PayloadTooLargeError,
        CatalogError,
        RegistryNotRegisteredError,
        SourceNotFoundError,
        VersionMismatchError,
        OutsideConsumptionError,
        DuplicateToolError,
        RegistryReadError,
        SourceRemovedError,
        UnconfiguredAgentExecutorError,
        ModelError,
        IncompleteAnswerError,
        ToolSearchUnsupportedError,
        ProviderNameError,
        ToolIdentityError,
        DuplicateCallIdError,
        EmptyReplyError,
        ModelRefusalError,
        EmptyRefusalError,
        RefusedAnswerError,
        HistoryReplayError,
        BrokenHistoryError,
        TamperedHistoryError,
        MissingSearchRecordsError,
        MissingNamespaceHistoryError,
        OutputBudgetError,
    )
}


def retryable(exc: BaseException) -> bool:
    """Whether a step that failed with ``exc`` may succeed when repeated: only failures known
    to be transient are (a registry or a provider that did not answer, a broken connection, a
    timeout, an SDK's error answer whose status says so). Anything else, a planner's own bug
    included, fails at once: a retried planning activity asks the model again, at its price."""
    if isinstance(exc, (RegistryReadError, ModelError)):
        return exc.transient
    if isinstance(exc, _PERMANENT):
        return False
    return unanswered(exc) or transient_failure(exc)


def application_error(exc: BaseException, *details: Any) -> ApplicationError:
    """``exc`` as the failure of an activity: its type name and message, retried or not, and
    ``details`` (what it cost, for a planning activity).

    The message keeps the exception's notes (one a line, as a traceback shows them): the model
    planner notes whose run and model registration a model error was, which the adapter's own
    message cannot say."""
    notes = [note for note in getattr(exc, "__notes__", ()) if isinstance(note, str)]
    return ApplicationError(
        "\n".join([message_of(exc) or type(exc).__name__, *notes]),
        *details,
        type=type(exc).__name__,
        non_retryable=not retryable(exc),
    )


def run_failure(type_name: str | None, message: str, run_id: str) -> Exception:
    """The exception a client raises for a run that failed with ``type_name``: the runtime's
    own type when it is one (so that application code catches what it catches in process),
    else a :class:`RunError` that names the original type."""
    cls = _BY_NAME.get(type_name or "")
    if cls is not None:
        return cls(message)
    named: Any = f"{type_name}: " if type_name else ""
    return RunError(f"run {run_id!r} failed: {named}{message}")
