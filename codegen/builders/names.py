"""Names the generated code defines, decided in one place so that checks and builders agree.

The checker reports designs whose names would collide in generated code; the builders then
use the same functions to write them.
"""

from __future__ import annotations

from agentgen.codegen.stamp import PLACEHOLDER
from agentgen.dsl.names import python_identifier

__all__ = [
    "GENERATED_BY",
    "REGISTRIES_MODULE",
    "SPECS_MODULE_NAMES",
    "agent_names",
    "camel",
    "executor_class",
    "subset_executor_class",
    "tool_constant",
]

#: The ``generated_by`` field of generated JSON files (its hash filled in when stamped).
GENERATED_BY = f"agentgen {PLACEHOLDER} — do not edit"

#: Module-level names of a toolset's generated ``specs.py`` that tool constants must not take.
SPECS_MODULE_NAMES = frozenset(
    {"TOOLSET", "DESCRIPTION", "TAGS", "AGENT_ID", "MCP_TOOL_NAMES", "MCP_DECLARATION",
     "SPECS", "NAMES", "SPEC", "TYPES"}
)  # fmt: skip
#: The generated root module holding the registry settings (a service cannot take its name).
REGISTRIES_MODULE = "registries"


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in python_identifier(name).split("_"))


def agent_names(agent: str) -> tuple[str, str]:
    """The config class and the register function of an agent's package.

    ``<Agent>AgentConfig`` and ``register_<agent>_agent``, except that a name whose last word
    is already ``agent`` gets no second one: ``billing_agent`` gives ``BillingAgentConfig`` and
    ``register_billing_agent``, ``agent`` gives ``AgentConfig`` and ``register_agent``.
    """
    words = agent.split("_")
    suffixed = words[-1] == "agent"
    stem = agent if suffixed else f"{agent}_agent"
    return f"{camel(stem)}Config", f"register_{stem}"


def executor_class(toolset: str) -> str:
    """The executor protocol a local toolset's package defines."""
    return f"{camel(toolset)}Executor"


def subset_executor_class(agent: str, toolset: str) -> str:
    """The executor protocol an agent's config defines for a toolset it uses only some tools
    of (``<Agent><Toolset>Executor``): one method per tool the agent uses."""
    return f"{camel(agent)}{executor_class(toolset)}"


def tool_constant(method: str) -> str:
    """The constant holding a tool's ID in ``specs.py`` (its spec is ``<constant>_SPEC``).

    The upper-cased method name, with ``_TOOL`` appended when it would take a name of the
    module (``TOOLSET``), end like another tool's spec (``X_SPEC``) or end like a suffixed
    constant (``X_TOOL``): distinct tools always get distinct names, whatever else the
    toolset declares.
    """
    base = method.upper()
    if base in SPECS_MODULE_NAMES or base.endswith(("_SPEC", "_TOOL")):
        return f"{base}_TOOL"
    return base
