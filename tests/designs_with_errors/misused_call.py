"""A DSL function called with arguments it does not take: a design error at the call."""

from agentgen.dsl import URL, Registry, Retry, Service

Service("Support")
with Registry("company"):
    URL("https://registry.example")
    Retry(3, backoff=1)
Service("never_checked", "this line never runs")
