"""The planner loop of one run.

A run alternates planning activities and execution rounds: plan (``plan_start``, then
``plan_resume`` with the results), accept the calls the assistant message holds against that
activity's catalog, execute them with their saved contracts, and plan again, until the planner
answers without tool calls. When the run's tool-call budget or failure limit is spent, the last
activity is final-answer-only: no tools are advertised and no registry is read.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput, RunContext
from agentgen.runtime.messages import Message, ToolCallPart, ToolResultPart
from agentgen.runtime.runs.accepted import AcceptedCall
from agentgen.runtime.runs.catalog import PlanningCatalog, Refusal
from agentgen.runtime.runs.execution import ExecutionContext, execute, tool_error
from agentgen.runtime.runs.host import AgentRegistration, RunHost
from agentgen.runtime.runs.policy import EffectivePolicy, merge, missing_labels
from agentgen.runtime.runs.requests import (
    MissingLabelsError,
    RunError,
    RunOutcome,
    RunRequest,
    ToolCallIdError,
)

__all__ = ["run_agent"]


@dataclass
class _Round:
    calls: int = 0
    consecutive_failures: int = 0


async def run_agent(host: RunHost, request: RunRequest) -> RunOutcome:
    registration = host.agent(request.agent_id)
    definition = registration.definition
    missing = missing_labels(definition.required_labels, request.labels)
    if missing:
        raise MissingLabelsError(
            f"agent {definition.id!r}: run is missing required labels: {', '.join(missing)}"
        )
    try:
        policy = merge(definition.policy, host.policy, request.policy)
    except ValueError as exc:
        raise RunError(f"agent {definition.id!r}: {exc}") from None
    run = RunContext(
        run_id=request.run_id or uuid.uuid4().hex,
        agent_id=definition.id,
        labels=dict(request.labels),
        parent_run_id=request.parent_run_id,
        result_schema_json=request.result_schema_json,
    )
    loop = _RunLoop(host, registration, run, policy)
    return await loop.run(list(request.messages))


class _RunLoop:
    def __init__(
        self,
        host: RunHost,
        registration: AgentRegistration,
        run: RunContext,
        policy: EffectivePolicy,
    ) -> None:
        self.host = host
        self.registration = registration
        self.run_context = run
        self.policy = policy
        self.execution = ExecutionContext(host, registration, run)
        self.accepted: list[AcceptedCall] = []
        self.state = _Round()
        #: Every tool-call ID of the run so far (the conversation's included), and where.
        self.call_ids: dict[str, str] = {}

    async def catalog(self, *, finalize: bool) -> PlanningCatalog:
        catalog = PlanningCatalog(
            self.host,
            self.registration,
            self.run_context.labels,
            self.policy.tools,
            tools_enabled=not finalize,
        )
        tools = self.registration.definition.registry_tools
        if tools is not None and not finalize:
            await tools.resolve(catalog)
        return catalog

    def spent(self) -> bool:
        limit = self.policy.max_tool_calls
        failures = self.policy.max_consecutive_failed_tool_calls
        return (limit is not None and self.state.calls >= limit) or (
            failures is not None and self.state.consecutive_failures >= failures
        )

    def claim_ids(self, calls: Sequence[ToolCallPart], where: str) -> None:
        """Record the calls' IDs; :class:`ToolCallIdError` if one is empty or already used."""
        agent = self.run_context.agent_id
        for call in calls:
            if not call.call_id:
                raise ToolCallIdError(
                    f"agent {agent!r}: {where} holds a call to {call.tool_id!r} with an empty "
                    "call ID; nothing of that turn was run"
                )
            earlier = self.call_ids.get(call.call_id)
            if earlier is not None:
                raise ToolCallIdError(
                    f"agent {agent!r}: {where} repeats tool call ID {call.call_id!r}, already "
                    f"used by {earlier}; call IDs must be unique within a run, and nothing of "
                    "that turn was run"
                )
            self.call_ids[call.call_id] = f"{where} ({call.tool_id})"

    async def run(self, transcript: list[Message]) -> RunOutcome:
        for index, message in enumerate(transcript):
            self.claim_ids(message.tool_calls(), f"message {index} of the conversation")
        planner = self.registration.planner
        catalog = await self.catalog(finalize=False)
        result: PlanResult = await planner.plan_start(
            PlanInput(tuple(transcript), catalog, self.run_context)
        )
        finalize = False
        while True:
            transcript.append(result.message)
            calls = result.message.tool_calls()
            if not calls:
                return self.outcome(transcript, result)
            if finalize:
                raise RunError(
                    f"agent {self.run_context.agent_id!r}: the planner returned tool calls in a "
                    "final-answer-only activity"
                )
            self.claim_ids(calls, f"the planner's reply (message {len(transcript) - 1})")
            results = await self.execute_round(catalog, calls)
            transcript.append(Message("tool", tuple(results)))
            finalize = self.spent()
            catalog = await self.catalog(finalize=finalize)
            result = await planner.plan_resume(
                PlanResumeInput(
                    tuple(transcript),
                    catalog,
                    self.run_context,
                    tool_results=tuple(results),
                    finalize=finalize,
                )
            )

    async def execute_round(
        self, catalog: PlanningCatalog, calls: Sequence[Any]
    ) -> list[ToolResultPart]:
        pending: list[tuple[int, AcceptedCall]] = []
        results: list[ToolResultPart | None] = []
        for call in calls:
            limit = self.policy.max_tool_calls
            if limit is not None and self.state.calls >= limit:
                results.append(
                    tool_error(
                        call, "budget_exhausted", f"the run's budget of {limit} tool calls is spent"
                    )
                )
                continue
            accepted = catalog.accept(call)
            if isinstance(accepted, Refusal):
                results.append(tool_error(call, "not_permitted", accepted.reason))
                continue
            self.state.calls += 1
            self.accepted.append(accepted)
            pending.append((len(results), accepted))
            results.append(None)
        done = await asyncio.gather(*(execute(self.execution, a) for _, a in pending))
        for (index, _), part in zip(pending, done, strict=True):
            results[index] = part
        final = [r for r in results if r is not None]
        for part in final:
            self.state.consecutive_failures = (
                self.state.consecutive_failures + 1 if part.is_error else 0
            )
        return final

    def outcome(self, transcript: list[Message], result: PlanResult) -> RunOutcome:
        return RunOutcome(
            run_id=self.run_context.run_id,
            agent_id=self.run_context.agent_id,
            transcript=tuple(transcript),
            final_text=result.message.text,
            final_value=result.final_value,
            tool_calls=self.state.calls,
            child_runs=tuple(
                self.execution.children[a.call.call_id]
                for a in self.accepted
                if a.call.call_id in self.execution.children
            ),
            parent_run_id=self.run_context.parent_run_id,
            accepted_calls=tuple(self.accepted),
        )
