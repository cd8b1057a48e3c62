"""A misspelt variable: the design's own NameError, with the name it almost is."""

from agentgen.dsl import Agent, Service, Tool, Toolset, Use

Records = Toolset("records", lambda: Tool("lookup", "Look up a record."))

with Service("svc"):
    Agent("a", "A.", lambda: Use(Recrods))  # noqa: F821
