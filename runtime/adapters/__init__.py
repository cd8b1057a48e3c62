"""Model adapters: provider clients that do tool search inside ``complete``.

=============================  ===========================  ==================================
adapter                        provider SDK                 deferred tools
=============================  ===========================  ==================================
:class:`OpenAIResponsesModel`  ``openai.AsyncOpenAI``       client-executed ``tool_search``
                               (direct or Bedrock)          (BM25 in the adapter)
:class:`AnthropicMessagesModel` ``anthropic.AsyncAnthropic`` hosted regex search
                               / ``AsyncAnthropicBedrock``
:class:`BedrockConverseModel`  boto3 ``bedrock-runtime``    refused (ToolSearchUnsupportedError)
=============================  ===========================  ==================================

Each adapter needs only its own SDK, so the adapter classes are imported on first use: an
application that installed ``agentgen[anthropic]`` alone can still import this package.
Native search records are kept in the returned message's metadata under
:data:`OPENAI_METADATA_KEY` and :data:`ANTHROPIC_METADATA_KEY`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgen.runtime.adapters.errors import (
    BrokenHistoryError,
    DuplicateCallIdError,
    EmptyRefusalError,
    EmptyReplyError,
    HistoryReplayError,
    MissingNamespaceHistoryError,
    MissingSearchRecordsError,
    ModelError,
    ModelRefusalError,
    OutputBudgetError,
    ProviderNameError,
    TamperedHistoryError,
    ToolIdentityError,
    ToolSearchUnsupportedError,
)
from agentgen.runtime.adapters.names import NameMap, provider_name
from agentgen.runtime.lazy_names import lazy_names

if TYPE_CHECKING:
    from agentgen.runtime.adapters.anthropic_messages import (
        TOOL_CHANGE_MODELS,
        AnthropicMessagesModel,
    )
    from agentgen.runtime.adapters.bedrock_converse import BedrockConverseModel
    from agentgen.runtime.adapters.openai_responses import OpenAIResponsesModel

__all__ = [
    "ANTHROPIC_METADATA_KEY",
    "OPENAI_METADATA_KEY",
    "TOOL_CHANGE_MODELS",
    "AnthropicMessagesModel",
    "BedrockConverseModel",
    "BrokenHistoryError",
    "DuplicateCallIdError",
    "EmptyRefusalError",
    "EmptyReplyError",
    "HistoryReplayError",
    "MissingNamespaceHistoryError",
    "MissingSearchRecordsError",
    "ModelError",
    "ModelRefusalError",
    "NameMap",
    "OpenAIResponsesModel",
    "OutputBudgetError",
    "ProviderNameError",
    "TamperedHistoryError",
    "ToolIdentityError",
    "ToolSearchUnsupportedError",
    "provider_name",
]

OPENAI_METADATA_KEY = "openai.tool_search"
ANTHROPIC_METADATA_KEY = "anthropic.tool_search"

_LAZY = {
    "OpenAIResponsesModel": "agentgen.runtime.adapters.openai_responses",
    "AnthropicMessagesModel": "agentgen.runtime.adapters.anthropic_messages",
    "TOOL_CHANGE_MODELS": "agentgen.runtime.adapters.anthropic_messages",
    "BedrockConverseModel": "agentgen.runtime.adapters.bedrock_converse",
}

__getattr__, _ = lazy_names(__name__, _LAZY, __all__)
