"""A name of ``agentgen.runtime`` whose module needs an optional SDK that is not installed says
which extra installs it. It raised the bare ``ModuleNotFoundError: No module named 'openai'``
from inside the adapter, which tells a newcomer nothing about agentgen's extras."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from agentgen.runtime.lazy_names import EXTRAS


@pytest.mark.parametrize(
    ("package", "name", "missing", "extra"),
    [
        ("agentgen.runtime", "OpenAIResponsesModel", "openai", "openai"),
        ("agentgen.runtime", "AnthropicMessagesModel", "anthropic", "anthropic"),
        ("agentgen.runtime.adapters", "BedrockConverseModel", "botocore", "bedrock"),
        ("agentgen.runtime", "TemporalEngine", "temporalio", "temporal"),
    ],
)
def test_a_name_whose_sdk_is_missing_names_the_extra(
    package: str, name: str, missing: str, extra: str
) -> None:
    code = (
        f"import sys\nsys.modules[{missing!r}] = None  # what a package not installed does\n"
        f"try:\n    from {package} import {name}\n"
        "except ModuleNotFoundError as exc:\n    print(exc.name)\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    module, message = done.stdout.splitlines()
    # Still what `except ImportError as exc: exc.name` reads (botocore.exceptions for Bedrock).
    assert module.partition(".")[0] == missing
    assert f"{package}.{name} needs {missing}" in message
    assert f"pip install 'agentgen[{extra}]'" in message


def test_every_extra_named_is_one_of_agentgens() -> None:
    extras = set(metadata.metadata("agentgen").get_all("Provides-Extra") or ())
    assert set(EXTRAS.values()) <= extras
