"""The adapters package imports each provider SDK only when its adapter is used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentgen.runtime import adapters


def test_importing_the_package_loads_no_provider_sdk() -> None:
    code = (
        "import sys, agentgen.runtime.adapters as a\n"
        "assert not {'openai', 'anthropic', 'botocore'} & set(sys.modules), sys.modules.keys()\n"
        "a.OpenAIResponsesModel\n"
        "assert 'openai' in sys.modules and 'anthropic' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_names_resolve_and_unknown_names_fail() -> None:
    from agentgen.runtime.adapters.anthropic_messages import AnthropicMessagesModel

    assert adapters.AnthropicMessagesModel is AnthropicMessagesModel
    assert adapters.TOOL_CHANGE_MODELS == ()
    with pytest.raises(AttributeError, match="NoSuchModel"):
        adapters.NoSuchModel


def test_metadata_keys_match_the_modules_that_write_them() -> None:
    from agentgen.runtime.adapters import anthropic_search, openai_search

    assert adapters.OPENAI_METADATA_KEY == openai_search.METADATA_KEY
    assert adapters.ANTHROPIC_METADATA_KEY == anthropic_search.METADATA_KEY
