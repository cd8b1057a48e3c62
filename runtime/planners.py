"""A ready-made planner: hand each planning activity to one registered model.

Most applications start here: every activity sends the current messages and the activity's
advertised tool definitions (deferred ones flagged) to the model client registered under
``model_id``; the adapter does any tool search and returns ordinary tool calls.
"""

from __future__ import annotations

from agentgen.runtime.model import ModelRequest, ToolChoice
from agentgen.runtime.planner import PlanInput, PlanResult, PlanResumeInput


class ModelPlanner:
    def __init__(
        self,
        model_id: str,
        *,
        model: str | None = None,
        system: str | None = None,
        max_tokens: int = 4096,
    ) -> None:
        """``model_id`` is the registration name of the client (``rt.register_model``);
        ``model`` the provider's model name (defaults to ``model_id``)."""
        self.model_id = model_id
        self.model = model or model_id
        self.system = system
        self.max_tokens = max_tokens

    async def plan_start(self, input: PlanInput) -> PlanResult:
        return await self._plan(input, finalize=False)

    async def plan_resume(self, input: PlanResumeInput) -> PlanResult:
        return await self._plan(input, finalize=input.finalize)

    async def _plan(self, input: PlanInput, *, finalize: bool) -> PlanResult:
        client = input.agent.model(self.model_id)
        response = await client.complete(
            ModelRequest(
                model=self.model,
                messages=tuple(input.messages),
                tools=tuple(input.agent.advertised_tool_definitions()),
                tool_choice=ToolChoice("none" if finalize else "auto"),
                max_tokens=self.max_tokens,
                system=self.system,
            )
        )
        return PlanResult(response.message)
