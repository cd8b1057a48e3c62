"""A provider of one toolset learns nothing about the calls of another: completing or giving
back a call of another toolset is answered exactly as a call that does not exist (it used to
say the call was not one of its toolset's, telling that a guessed ID exists)."""

from __future__ import annotations

import pytest

from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.store import Store
from tests.registry.conftest import FAST
from tests.registry.helpers import call, echo_toolset, registration


async def _refusal(coro: object) -> tuple[str, str]:
    with pytest.raises(RegistryError) as info:
        await coro  # type: ignore[misc]
    return info.value.code, info.value.message


async def test_another_toolsets_call_answers_as_a_missing_one(store: Store) -> None:
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration())).registration_token
    await ops.register(registration(echo_toolset("other"), provider="p2", incarnation="i2"))
    existing = (await ops.call(call(token)))["tool_use_id"]
    missing = "f" * 64
    answers = []
    for use_id in (existing, missing):
        completed = await _refusal(
            ops.complete("other", use_id, "p2", "i2", "completed", '{"said":"x"}', "")
        )
        overloaded = await _refusal(
            ops.report_overload("other", use_id, "p2", "i2", claim_operation_id="op-1")
        )
        legacy = await _refusal(ops.report_overload("other", use_id, "p2", "i2"))
        answers.append([(code, message.replace(use_id, "ID")) for code, message in
                        (completed, overloaded, legacy)])  # fmt: skip
    assert answers[0] == answers[1]
    assert answers[1][0] == ("not_found", "call ID not found (expired or never admitted)")
