"""``ModelTimeout`` in a design reaches the generated agent's default run policy: the runtime
then cancels a model call that outlives it and fails the run with ``ModelTimeoutError``."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from agentgen.codegen.pipeline import generate
from agentgen.runtime import ModelPlanner, ModelTimeoutError, Runtime
from tests.codegen.helpers import importable
from tests.conftest import DesignRunner
from tests.runtime.test_model_calls import Hanging


async def test_a_generated_agent_bounds_its_model_calls(
    designs: DesignRunner, tmp_path: Path
) -> None:
    design = designs.write(
        """
with Service("svc"):
    with Agent("slow", "Waits on its model."):
        with RunPolicy():
            MaxToolCalls(3)
            ModelTimeout("50ms")
    Agent("patient", "Leaves model calls to the client.")
"""
    )
    out = tmp_path / "out"
    out.mkdir()
    result = generate(design, out / "timeout_gen")
    assert not result.errors
    source = (out / "timeout_gen/svc/agents/slow/agent.py").read_text()
    assert "POLICY = RunPolicy(\n    max_tool_calls=3,\n    model_timeout=0.05,\n)\n" in source
    patient_source = (out / "timeout_gen/svc/agents/patient/agent.py").read_text()
    assert "POLICY = RunPolicy()\n" in patient_source
    with importable(out):
        slow = importlib.import_module("timeout_gen.svc.agents.slow")
        patient = importlib.import_module("timeout_gen.svc.agents.patient")
        assert slow.definition().policy.model_timeout == 0.05
        assert patient.definition().policy.model_timeout is None

        model = Hanging()
        rt = Runtime()  # the in-memory engine
        rt.register_model("m", model)
        rt.register_agent(slow.definition(), planner=ModelPlanner("m"), executors={})
        # The run asks for no timeout: the generated agent's own policy bounds the call.
        with pytest.raises(ModelTimeoutError, match="model_timeout of 0.05 seconds"):
            await slow.new_client(rt).run("hi", run_id="run-1")
        assert (model.started, model.cancelled) == (1, 1)


def test_the_largest_policy_counts_are_generated_and_accepted_by_the_runtime(
    designs: DesignRunner, tmp_path: Path
) -> None:
    # Counts past MAX_TOOL_CALLS are refused at their line (MaxToolCalls(10**5000) was
    # generated, a bound on nothing); the largest one the DSL takes, the runtime's RunPolicy
    # takes too, so the generated package imports.
    design = designs.write(
        """
with Service("svc"):
    with Agent("a", "Counts."):
        with RunPolicy():
            MaxToolCalls(10_000)
            MaxConsecutiveFailedToolCalls(10_000)
"""
    )
    out = tmp_path / "out"
    out.mkdir()
    result = generate(design, out / "counts_gen")
    assert not result.errors
    with importable(out):
        agent = importlib.import_module("counts_gen.svc.agents.a")
        policy = agent.definition().policy
        assert policy.max_tool_calls == 10_000
        assert policy.max_consecutive_failed_tool_calls == 10_000
