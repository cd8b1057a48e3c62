"""The agentgen design vocabulary.

A design is a Python module calling these functions; ``agentgen validate`` / ``agentgen gen``
evaluate it into an expression tree, validate the whole tree, and generate agent packages.
Scope-opening functions take their body as a trailing callable or as a ``with`` block.
"""

from agentgen.dsl.deferred import Deferred
from agentgen.dsl.design import Agent, Export, Service, Use
from agentgen.dsl.errors import DesignError, DesignErrors
from agentgen.dsl.pipeline import evaluate
from agentgen.dsl.policy import (
    AllowTags,
    DenyTags,
    MaxConsecutiveFailedToolCalls,
    MaxToolCalls,
    ModelTimeout,
    RunPolicy,
)
from agentgen.dsl.registries import (
    URL,
    APIVersion,
    CacheTTL,
    FromRegistry,
    PublishTo,
    Registry,
    Retry,
    SyncInterval,
    Timeout,
    Version,
)
from agentgen.dsl.toolsets import (
    Args,
    BoundedResult,
    Confirmation,
    ContinueWith,
    Cursor,
    DeniedResultTemplate,
    Description,
    FromExternalMCP,
    MCPName,
    NextCursor,
    PromptTemplate,
    RequiredLabels,
    Return,
    ServerData,
    Tags,
    Title,
    Tool,
    Toolset,
)

__all__ = [
    "URL",
    "APIVersion",
    "Agent",
    "AllowTags",
    "Args",
    "BoundedResult",
    "CacheTTL",
    "Confirmation",
    "ContinueWith",
    "Cursor",
    "Deferred",
    "DeniedResultTemplate",
    "DenyTags",
    "Description",
    "DesignError",
    "DesignErrors",
    "Export",
    "FromExternalMCP",
    "FromRegistry",
    "MCPName",
    "MaxConsecutiveFailedToolCalls",
    "MaxToolCalls",
    "ModelTimeout",
    "NextCursor",
    "PromptTemplate",
    "PublishTo",
    "Registry",
    "RequiredLabels",
    "Retry",
    "Return",
    "RunPolicy",
    "ServerData",
    "Service",
    "SyncInterval",
    "Tags",
    "Timeout",
    "Title",
    "Tool",
    "Toolset",
    "Use",
    "Version",
    "evaluate",
]
