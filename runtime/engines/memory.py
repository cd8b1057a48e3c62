"""The in-memory engine: runs execute directly in the caller's event loop."""

from __future__ import annotations

from agentgen.runtime.runs.host import RunHost
from agentgen.runtime.runs.local import run_agent
from agentgen.runtime.runs.requests import RunOutcome, RunRequest
from agentgen.runtime.tasks import MIN_TIMEOUT_S, is_number, is_seconds

__all__ = ["InMemoryEngine"]


class InMemoryEngine:
    """Runs planning and execution activities directly with asyncio; agent-as-tool calls run
    as child runs (their own run IDs, linked to the parent) on the same engine.

    ``tool_timeout`` (seconds) bounds each tool of its runs, child runs included: an
    executor's call, or the wait for a registry call's outcome. A tool still running then is
    cancelled and its call answers ``outcome_unknown`` (it may have had its effect), while the
    run goes on. ``None`` (the default) bounds nothing: a tool that never returns holds its
    run until the run is cancelled (``asyncio.timeout`` around ``client.run``).
    """

    def __init__(self, *, tool_timeout: float | None = None) -> None:
        # The floor of the other timeouts a run takes (RunPolicy.model_timeout, the DSL's
        # durations; Temporal's timers count whole milliseconds), so that one value is taken
        # or refused alike wherever it is given.
        if tool_timeout is not None and not (
            is_seconds(tool_timeout) and tool_timeout >= MIN_TIMEOUT_S
        ):
            # A number out of range is a wrong value; anything else ("5", True) a wrong type.
            raise (ValueError if is_number(tool_timeout) else TypeError)(
                f"InMemoryEngine(tool_timeout={tool_timeout!r}): a tool timeout is a positive, "
                "finite number of seconds, at least 0.001 (1 ms), or None to bound nothing"
            )
        self.tool_timeout = tool_timeout

    async def run(self, host: RunHost, request: RunRequest) -> RunOutcome:
        return await run_agent(host, request, tool_timeout=self.tool_timeout)
