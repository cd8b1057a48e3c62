"""``LocalRegistry``, the service run in a thread of this process, says when it failed."""

from __future__ import annotations

import pytest
import uvicorn

from agentgen.runtime.registry.local import LocalRegistry


def test_a_failure_while_serving_is_raised_by_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """The serving thread kept what ended it "to be reported by the constructor or close()",
    but close() never reported it: a registry that died under a test passed unnoticed."""

    async def broken_loop(self: uvicorn.Server) -> None:
        raise OSError("the event loop broke while serving (test)")

    monkeypatch.setattr(uvicorn.Server, "main_loop", broken_loop)
    registry = LocalRegistry()  # started: the failure comes after
    with pytest.raises(RuntimeError) as failed:
        registry.close()
    assert str(failed.value) == (
        f"the local registry at {registry.url} failed while serving: OSError: the event loop "
        "broke while serving (test)"
    )
    assert isinstance(failed.value.__cause__, OSError)
    registry.close()  # said once


def test_a_registry_that_served_without_failing_closes_quietly() -> None:
    with LocalRegistry() as registry:
        assert registry.url.startswith("http://127.0.0.1:")
