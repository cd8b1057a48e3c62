"""A ready-made planner: hand each planning activity to one registered model.

Most applications start here: every activity sends the current messages and the activity's
advertised tool definitions (deferred ones flagged) to the model client registered under
``model_id``; the adapter does any tool search and returns ordinary tool calls. When the run
answers a parent's agent-as-tool call with a structured result contract, the model is asked to
answer with JSON matching it, and that JSON becomes the run's ``final_value``.

Each model call is a ``chat {model}`` span (tokens, provider, finish reason), and each reply
records its usage and stop reason in its metadata
(:data:`~agentgen.runtime.model_client.USAGE_METADATA_KEY`,
:data:`~agentgen.runtime.model_client.STOP_REASON_METADATA_KEY`), so that a stored transcript
still says what every reply cost (or that the provider did not say) and why it stopped.

A final answer that did not finish (a stop reason outside
:data:`~agentgen.runtime.model_client.FINISHED_STOP_REASONS`: cut at ``max_tokens``, refused,
filtered) fails the run with :class:`~agentgen.runtime.model_client.IncompleteAnswerError`
rather than passing for an answer, unless its stop reason is one the planner was told to accept
(``accept_stop_reasons``): the outcome's ``stop_reason`` then says it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection

from agentgen.runtime.agents.executors import refuse_wrong_arguments
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.contracts.codecs import decode_exact
from agentgen.runtime.model_client import (
    FINISHED_STOP_REASONS,
    REFUSED_STOP_REASONS,
    STOP_REASON_METADATA_KEY,
    USAGE_METADATA_KEY,
    IncompleteAnswerError,
    ModelError,
    ModelRequest,
    RefusedAnswerError,
    ToolChoice,
    Usage,
)
from agentgen.runtime.telemetry.spans import ChatCall

__all__ = ["ModelPlanner"]


class ModelPlanner:
    def __init__(
        self,
        model_id: str,
        *,
        model: str | None = None,
        system: str | None = None,
        max_tokens: int = 4096,
        accept_stop_reasons: Collection[str] = (),
    ) -> None:
        """``model_id`` is the registration name of the client (``rt.register_model``);
        ``model`` the provider's model name (defaults to ``model_id``).
        ``accept_stop_reasons`` are the stop reasons, besides those of a finished answer,
        whose final answer is returned rather than refused (``("max_tokens",)`` for an answer
        a hard output limit may cut); the outcome's ``stop_reason`` says which it was."""
        refuse_wrong_arguments(
            f"ModelPlanner({model_id!r})",
            (
                (
                    "model_id",
                    model_id,
                    "a non-empty string",
                    isinstance(model_id, str) and model_id,
                    isinstance(model_id, str),
                ),
                ("model", model, "a string", model is None or isinstance(model, str)),
                ("system", system, "a string", system is None or isinstance(system, str)),
                ("max_tokens", max_tokens, "an int", type(max_tokens) is int),
                (
                    "accept_stop_reasons",
                    accept_stop_reasons,
                    "a collection of strings",
                    not isinstance(accept_stop_reasons, str)
                    and isinstance(accept_stop_reasons, Collection)
                    and all(isinstance(reason, str) for reason in accept_stop_reasons),
                ),
            ),
        )
        if max_tokens <= 0:
            raise ValueError(
                f"ModelPlanner({model_id!r}): max_tokens must be positive, not {max_tokens} "
                "(it bounds every reply, and the tool-search rounds of one reply share it)"
            )
        self.model_id = model_id
        self.model = model or model_id
        self.system = system
        self.max_tokens = max_tokens
        self.accept_stop_reasons = frozenset(accept_stop_reasons)

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return await self._plan(input)

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        return await self._plan(input)

    def _system(self, input: PlanInput) -> str | None:
        schema = _structured_schema(input.run.result_schema_json)
        if schema is None:
            return self.system
        instruction = (
            "When you give your final answer (without calling a tool), reply with only a JSON "
            f"value matching this JSON Schema, and nothing else: {json.dumps(schema)}"
        )
        return f"{self.system}\n\n{instruction}" if self.system else instruction

    async def _plan(self, input: PlanInput) -> PlanResult:
        client = input.agent.model(self.model_id)
        run = input.run
        with ChatCall(
            self.model, agent_id=run.agent_id, run_id=run.run_id, max_tokens=self.max_tokens
        ) as call:
            try:
                response = await client.complete(
                    ModelRequest(
                        model=self.model,
                        messages=tuple(input.messages),
                        tools=input.agent.advertised_tools(),
                        tool_choice=ToolChoice("none" if input.finalize else "auto"),
                        max_tokens=self.max_tokens,
                        system=self._system(input),
                    )
                )
            except ModelError as exc:  # the adapter knows the request, not whose it was
                exc.add_note(
                    f"planning agent {run.agent_id!r} (run {run.run_id}) with the model client "
                    f"registered as {self.model_id!r}"
                )
                billed = exc.usage
                if billed is not None:  # responses it got before it failed, billed all the same
                    call.finished(
                        billed.input_tokens,
                        billed.output_tokens,
                        None,
                        unreported=billed.unreported,
                    )
                raise
            usage = response.usage
            call.finished(
                usage.input_tokens,
                usage.output_tokens,
                response.stop_reason,
                unreported=usage.unreported,
            )
            if not response.message.tool_calls():
                # Refused inside the model call's span, as an adapter's refusal is: the call
                # (and its duration metric) ends in error with the refusal's type, not as a
                # success whose answer the run then fails on.
                self._refuse_unfinished(run.agent_id, run.run_id, response.stop_reason, usage)
        recorded: dict[str, object] = {
            "model": self.model,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
        }
        if usage.unreported:
            # Written only then, so that a reply whose usage was reported is recorded as before.
            recorded["unreported_responses"] = usage.unreported
        message = response.message.with_metadata(USAGE_METADATA_KEY, recorded)
        stop_reason = response.stop_reason
        if stop_reason is not None:
            message = message.with_metadata(STOP_REASON_METADATA_KEY, stop_reason)
        if message.tool_calls() or _structured_schema(input.run.result_schema_json) is None:
            return PlanResult(message)
        try:
            value = decode_exact(_unfenced(message.text))
        except ValueError:
            # Not JSON: the parent refuses an answer that does not meet its contract.
            return PlanResult(message)
        return PlanResult(message, final_value=value)

    def _refuse_unfinished(
        self, agent_id: str, run_id: str, stop_reason: str | None, usage: Usage
    ) -> None:
        if stop_reason in FINISHED_STOP_REASONS or stop_reason in self.accept_stop_reasons:
            return
        assert stop_reason is not None  # None is a finished answer's
        cause, remedy = _UNFINISHED.get(
            stop_reason,
            (
                "a stop the planner does not know as the end of an answer",
                "see the provider's documentation of it",
            ),
        )
        # A refused or filtered answer is typed as every other refusal is (the adapters raise
        # ModelRefusalError for a refused reply that held calls or nothing), so that one
        # ``except`` tells "the provider would not answer" apart.
        kind = RefusedAnswerError if stop_reason in REFUSED_STOP_REASONS else IncompleteAnswerError
        error = kind(
            f"planning agent {agent_id!r} (run {run_id}): the final answer of model "
            f"{self.model!r} (the model client registered as {self.model_id!r}) stopped with "
            f"stop reason {stop_reason!r} ({cause.format(max_tokens=self.max_tokens)}), so it "
            f"is not the run's answer: {remedy}. To take such answers as they are, pass "
            f"ModelPlanner(..., accept_stop_reasons=[{stop_reason!r}]); the outcome's "
            "stop_reason then says it"
        )
        if kind is RefusedAnswerError:
            error.usage = usage  # the refused reply was billed, as an adapter's refusal says
        raise error


#: Why a final answer stopped before it was finished, and what to do, by stop reason.
_UNFINISHED = {
    "max_tokens": (
        "cut at max_tokens, {max_tokens}",
        "raise ModelPlanner(max_tokens=...)",
    ),
    "model_context_window_exceeded": (
        "the conversation filled the model's context window",
        "shorten the conversation (compact the transcript) or use a model with a larger one",
    ),
    "refusal": (
        "the model declined to answer",
        "rephrase the request",
    ),
    "content_filter": (
        "the provider's content filter blocked the answer",
        "check the request against the provider's content policy",
    ),
    "guardrail_intervened": (
        "a Bedrock guardrail blocked the answer",
        "check the request against the guardrail's configuration",
    ),
}


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def _unfenced(text: str) -> str:
    """The JSON of an answer, without the one Markdown code fence models often put around it."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def _structured_schema(schema_json: str | None) -> dict[str, object] | None:
    """The result schema when it asks for more than text (or nothing)."""
    if schema_json is None:
        return None
    schema: dict[str, object] = json.loads(schema_json)
    return None if schema.get("type") in ("string", "null") else schema
