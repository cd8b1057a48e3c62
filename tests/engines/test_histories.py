"""Histories recorded by earlier releases replay on today's workflow code (docs/engines.md,
"Upgrading workflow code safely"): a change to the run loop that would make a running workflow
take another path fails here, and must be guarded with ``workflow.patched``.

The histories come from ``python -m tests.engines.record_histories RELEASE``: one run taking
every kind of step (planning with a registry read, a confirmation, a compiled tool, a registry
call, a child run). Files of earlier releases are never rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.workflow import NondeterminismError

from agentgen.runtime.engines.temporal import replay

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_every_release_recorded_the_run_and_its_child() -> None:
    releases = {path.name.rsplit("-", 1)[0] for path in HISTORIES}
    assert "0.1.0" in releases
    for release in releases:
        assert {p.name for p in HISTORIES if p.name.startswith(f"{release}-")} == {
            f"{release}-run.json",
            f"{release}-child.json",
        }


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize("history", HISTORIES, ids=lambda p: p.name)
async def test_recorded_histories_replay(history: Path) -> None:
    await replay([history.read_text()])


@pytest.mark.asyncio(loop_scope="session")
async def test_a_history_that_took_another_path_does_not_replay() -> None:
    """The check has teeth: the same history with its first tool call's steps switched from
    preparing to executing is a divergence."""
    text = (Path(__file__).parent / "histories" / "0.1.0-run.json").read_text()
    switched = text.replace('"agentgen.prepare"', '"agentgen.execute"', 1)
    assert switched != text
    with pytest.raises(NondeterminismError, match="agentgen.execute"):
        await replay([switched])


@pytest.mark.asyncio(loop_scope="session")
async def test_what_is_not_a_whole_agentgen_history_is_named_before_replaying() -> None:
    text = (Path(__file__).parent / "histories" / "0.1.0-run.json").read_text()
    headless = json.loads(text)
    headless["events"] = headless["events"][3:]  # the SDK's replayer hangs on this, for good
    export = "export it again (temporal workflow show --workflow-id ID --output json)"
    cases = [
        ("", r"history 1: not a Temporal workflow history in JSON \(Expecting value"),
        ('{"runs": []}', r"history 1: not a Temporal workflow history in JSON \(History does"),
        ('{"events": []}', r"history 1: does not begin with the workflow's start"),
        (json.dumps(headless), r"history 1: does not begin with the workflow's start"),
        (
            text.replace('"agentgen.run"', '"billing.invoice"', 1),
            r"history 1: a run of workflow 'billing.invoice', not of agentgen's 'agentgen.run'",
        ),
    ]
    for given, message in cases:
        with pytest.raises(ValueError, match=message) as refused:
            await replay([text, given])  # all are checked before any is replayed
        assert "workflow's start" not in message or str(refused.value).endswith(export)
    with pytest.raises(TypeError, match=r"replay takes a list of histories"):
        await replay(text)  # type: ignore[arg-type]
