"""The model calls of one planning activity: bounded by the run policy, and what they cost.

A planner reaches its models through ``input.agent.model(model_id)``; the activity hands it the
registered client wrapped here, so that every planner (``ModelPlanner`` or an application's
own) gets the same two guarantees. A call that outlives the run policy's ``model_timeout`` is
cancelled and fails the run with :class:`ModelTimeoutError` (no answer is made up, nothing is
retried). And the usage of every response is summed for the run's outcome, whether or not the
planner records it anywhere.
"""

from __future__ import annotations

from typing import Any

from agentgen.runtime.model_client import (
    ModelClient,
    ModelError,
    ModelRequest,
    ModelResponse,
    Usage,
)
from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.requests import ModelTimeoutError, RunError
from agentgen.runtime.tasks import DeadlinePassed, within_deadline

__all__ = ["ModelCalls", "UsageMeter", "check_model_timeout"]


class UsageMeter:
    """What a planning step's model calls cost so far, kept where its engine can read it.

    An engine that retries a failed step keeps the meter's count across attempts (Temporal: in
    the activity's heartbeats): the responses an attempt got before it failed were billed all
    the same, and the step's answer counts them with its own.
    """

    def __init__(self, carried: Usage | None = None) -> None:
        #: Earlier attempts' usage, then each response's added as it arrives.
        self.usage = carried if carried is not None else Usage()

    def add(self, usage: Usage) -> None:
        self.usage += usage


class ModelCalls:
    """The model clients of one planning activity, and the usage their responses reported."""

    def __init__(
        self,
        host: RunHost,
        agent_id: str,
        run_id: str,
        timeout: float | None,
        meter: UsageMeter | None = None,
    ) -> None:
        self._host = host
        self.agent_id = agent_id
        self.run_id = run_id
        self.timeout = timeout
        self.meter = meter if meter is not None else UsageMeter()

    @property
    def usage(self) -> Usage:
        return self.meter.usage

    def client(self, model_id: str) -> ModelClient:
        """The client registered as ``model_id`` (``LookupError`` when there is none)."""
        return _Bounded(self, model_id, self._host.model(model_id))

    def timed_out(self, model_id: str, request: ModelRequest) -> ModelTimeoutError:
        return ModelTimeoutError(
            f"agent {self.agent_id!r} (run {self.run_id}): the call to model "
            f"{request.model!r} through the client registered as {model_id!r} took longer "
            f"than the run policy's model_timeout of {self.timeout:g} seconds; it was cancelled "
            "and the run failed (not retried). Raise RunPolicy(model_timeout=...) if the model "
            "needs longer (the strictest of the agent's, the runtime's and the run's policies "
            "applies), or find out why the provider did not answer"
        )


class _Bounded:
    """A registered client as a planning activity sees it."""

    def __init__(self, calls: ModelCalls, model_id: str, client: ModelClient) -> None:
        self._calls = calls
        self._model_id = model_id
        self._client = client

    async def complete(self, request: ModelRequest) -> ModelResponse:
        calls = self._calls
        try:
            if calls.timeout is None:
                response = await self._client.complete(request)
            else:
                try:
                    response = await within_deadline(calls.timeout, self._client.complete(request))
                except DeadlinePassed as passed:
                    # Also when the client turned its cancellation into an error of its own, or
                    # swallowed it and answered late: the limit fired, and the run says so.
                    cause = passed.__cause__
                    # What the cut call had received (its earlier search rounds, or the answer
                    # it gave late) was billed all the same, as for any failed call.
                    if isinstance(cause, ModelError) and cause.usage is not None:
                        calls.meter.add(cause.usage)
                    elif isinstance(passed.late, ModelResponse):
                        calls.meter.add(passed.late.usage)
                    raise calls.timed_out(self._model_id, request) from cause
        except ModelError as exc:
            # A call that failed after some of its responses arrived was billed for them.
            if exc.usage is not None:
                calls.meter.add(exc.usage)
            raise
        if not isinstance(response, ModelResponse):
            raise ModelError(
                f"agent {calls.agent_id!r} (run {calls.run_id}): the client registered as "
                f"{self._model_id!r} returned {type(response).__name__} from complete() "
                f"for model {request.model!r}; a ModelClient returns a ModelResponse"
            )
        calls.meter.add(response.usage)
        return response

    def __getattr__(self, name: str) -> Any:
        """The client's other attributes, as they are: a planner may use more of the client
        it registered than ``complete``. They are neither bounded by ``model_timeout`` nor
        counted in the run's usage. Neither the run loop nor ``ModelPlanner`` calls anything
        but ``complete`` (the built-in adapters' other methods, ``supports_tool_changes`` and
        ``supports_error_status``, ask no model), so both guarantees hold for every model
        call the runtime makes; a planner calling a model through another method of its own
        client bounds and counts that call itself."""
        return getattr(self._client, name)


def check_model_timeout(
    model_timeout: float | None, limit: tuple[str, float] | None, agent_id: str, run_id: str
) -> None:
    """Refuse a run whose model timeout an engine's own limit on the planning activity
    (``limit``: its name and seconds) would preempt: the engine would end the activity first
    (and retry it, asking the model again against a new catalog) instead of failing the run
    with :class:`ModelTimeoutError`."""
    if model_timeout is None or limit is None:
        return
    name, seconds = limit
    if model_timeout >= seconds:
        raise RunError(
            f"agent {agent_id!r} (run {run_id}): the run policy's model_timeout of "
            f"{model_timeout:g} seconds is not shorter than {name} ({seconds:g} seconds), the "
            "longest a planning activity may take: the engine would end the activity (and "
            "retry it) before the model call timed out. Give RunPolicy(model_timeout=...) less "
            f"than {name}, leaving room for the activity's registry reads, or raise {name}"
        )
