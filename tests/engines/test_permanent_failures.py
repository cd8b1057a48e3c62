"""A planning step that fails in a way no repetition fixes fails the run at once, on both
engines: a durable run used to retry anything it did not know (asking the model, and billing
it, five times), a planner's own bug and a structured answer it could not send among them."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from agentgen.runtime import Usage
from agentgen.runtime.agents.planning import PlanInput, PlanResult, PlanResumeInput
from agentgen.runtime.messages import Message, TextPart
from agentgen.runtime.model_client import ModelRequest, ModelResponse
from agentgen.runtime.runs.requests import RunError
from tests.engines.conftest import Harness
from tests.runtime.agents import register

pytestmark = pytest.mark.asyncio(loop_scope="session")


class Counting:
    """A model answering ``text`` every time, counting the requests."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        return ModelResponse(Message("assistant", (TextPart(self.text),)), usage=Usage(100, 10))


class Parsing:
    """An application's planner reading the model's reply as JSON: ``value`` turns the parsed
    reply into the run's structured answer."""

    def __init__(self, value: Any = None) -> None:
        self.value = value

    async def plan_start(self, input: PlanInput) -> PlanResult:
        response = await input.agent.model("m").complete(
            ModelRequest(model="m", messages=tuple(input.messages))
        )
        parsed = json.loads(response.message.text)  # JSONDecodeError on a reply that is not
        return PlanResult(response.message, final_value=self.value or parsed)

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        return await self.plan_start(input)


async def _run(harness: Harness, model: Counting, planner: Parsing) -> Exception:
    rt = harness.runtime()
    rt.register_model("m", model)
    register(rt, planner)
    async with harness.serving(rt):
        with pytest.raises(Exception) as failed:
            await rt.client("test.agent").run("go")
    assert isinstance(failed.value, Exception)
    return failed.value


async def test_a_planner_s_own_bug_fails_the_run_without_asking_the_model_again(
    harness: Harness,
) -> None:
    model = Counting("{not json")
    failed = await _run(harness, model, Parsing())
    # In process the planner's exception itself; on Temporal a RunError naming it.
    assert "Expecting property name enclosed in double quotes" in str(failed)
    assert isinstance(failed, RunError if harness.durable else json.JSONDecodeError)
    assert model.requests == 1  # on Temporal too: the planning activity was not retried


async def test_a_final_value_that_is_not_json_is_refused_naming_the_agent_and_the_field(
    harness: Harness,
) -> None:
    """The in-memory engine used to pass it on; Temporal's converter raised a ``TypeError``
    naming neither the agent nor what to do, after asking the model five times."""
    model = Counting("{}")
    failed = await _run(harness, model, Parsing({"when": datetime.date(2026, 12, 1)}))
    message = str(failed)
    assert type(failed) is RunError
    assert message.startswith("agent 'test.agent' (run '")
    assert "PlanResult.final_value is not a JSON value (Object of type date" in message
    assert "write a date, say, as its ISO text" in message
    assert model.requests == 1
