"""Runs of the quickstart agent through the real adapters on recorded provider replies, whose
outcomes the telemetry and trace tests read."""

from __future__ import annotations

from agentgen.runtime import ModelPlanner, RunOutcome, Runtime
from agentgen.runtime.telemetry import Telemetry
from examples.quickstart import tool_search
from examples.quickstart.gen.quickstart.agents import chat


async def quickstart(
    provider: tool_search.Provider, telemetry: Telemetry | None = None
) -> RunOutcome:
    """The quickstart's run on ``provider``'s recording (real SDK client and adapter)."""
    recording = tool_search.load_recording(provider)
    recorded = tool_search.player(recording)
    rt = Runtime(telemetry=telemetry)
    rt.register_model(provider, recorded.model())
    chat.register_chat_agent(
        rt,
        chat.ChatAgentConfig(
            planner=ModelPlanner(
                provider, model=recording.model, system=tool_search.SYSTEM, max_tokens=2048
            ),
            weather_executor=tool_search.Weather(),
            calendar_executor=tool_search.Calendar(),
            currency_executor=tool_search.Currency(),
        ),
    )
    outcome = await chat.new_client(rt).run(recording.prompt)
    recorded.assert_finished()
    return outcome
