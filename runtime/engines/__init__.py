"""Engines: what runs a run's planning and execution activities (in memory; Temporal next)."""

from agentgen.runtime.engines.base import Engine
from agentgen.runtime.engines.memory import InMemoryEngine

__all__ = ["Engine", "InMemoryEngine"]
