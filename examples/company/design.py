"""The spec's evolving catalog: a registry-backed toolset and a whole registry.

The reader resolves one required registry toolset; the generalist resolves every toolset the
registry currently lists. Both load the definitions on demand.
"""

from agentgen.dsl import URL, Agent, Deferred, FromRegistry, Registry, Service, Toolset, Use

Company = Registry("company", lambda: URL("https://registry.example"))
Records = Toolset(FromRegistry(Company, "records"))

with Service("assistant"):
    Agent("reader", "Read records.", lambda: Use(Records, Deferred))
    Agent("generalist", "Use the company catalog.", lambda: Use(Company, lambda: Deferred()))
