"""The registry holds a published version to the rule of consumers' pins: a provider of
another SDK (or one built by hand) published ``" 1.0 "``, which no ``Version(...)`` pin can
name, and every consumer pinning it failed."""

from __future__ import annotations

import pytest

from agentgen.runtime.contracts.versions import version_problem
from agentgen.runtime.registry.client import RegistryError
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import FAST, running_registry
from tests.registry.helpers import echo_toolset, register_body, registration


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        (" 1.0 ", "it has surrounding spaces"),
        ("1.0\t", "it has surrounding spaces"),
        ("", "it is empty"),
        ("1.0\u200b", "must not contain control or format character '\\u200b'"),
    ],
)
async def test_a_version_no_consumer_can_pin_is_refused_naming_the_toolset(
    version: str, problem: str
) -> None:
    store = SQLiteStore(":memory:")
    await store.open()
    try:
        ops = RegistryOperations(store, FAST)
        toolset = echo_toolset().model_copy(update={"version": version})
        with pytest.raises(RegistryError) as refused:
            await ops.register(registration(toolset))
        assert refused.value.code == "validation_error"
        assert refused.value.message.startswith(
            f"toolset 'echo': version {version!r} cannot be published: a toolset's version is "
            "a non-empty single line of at most 256 characters without surrounding spaces or "
            "control or format characters, as consumers pin it ("
        )
        assert f"({problem}); publish the version as consumers pin it" in refused.value.message
        assert await ops.list_toolsets() == []
        await ops.register(registration(echo_toolset().model_copy(update={"version": "1.0"})))
        assert await ops.list_toolsets() == ["echo"]
    finally:
        await store.close()


async def test_the_http_api_refuses_it_too() -> None:
    import httpx2

    async with running_registry(SQLiteStore(":memory:")) as running:
        body = register_body()
        body["toolset"]["version"] = " 2026.1 "
        async with httpx2.AsyncClient(base_url=running.url) as http:
            answer = await http.post("/v1/providers/register", json=body)
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "validation_error"
    assert error["message"].startswith("toolset 'echo': version ' 2026.1 ' cannot be published")


def test_pins_and_publications_share_the_rule() -> None:
    assert version_problem("2026.11-rc.1+büild") is None
    assert version_problem("1 0") is None  # spaces inside are a version's own
    assert version_problem(1.0) == "a version is a string, not float"
    assert version_problem("v" * 257) == "String should have at most 256 characters"
