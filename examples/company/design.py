"""The spec's evolving catalog, distributed: a provider publishes a toolset, agents resolve it.

Service "hr" owns toolset "directory" and publishes its full contract to the company registry
(``PublishTo``): the generated ``gen/hr/toolsets/directory/provider.py`` serves it from a
provider process. The reader resolves one required registry toolset; the generalist resolves
every toolset the registry currently lists. Both load the definitions on demand.
``python -m examples.company`` runs the whole thing against a live registry (see README.md).
"""

from pydantic import BaseModel, Field

from agentgen.dsl import (
    URL,
    Agent,
    Args,
    Deferred,
    Description,
    Export,
    FromRegistry,
    PublishTo,
    Registry,
    Return,
    Service,
    Tool,
    Toolset,
    Use,
)

Company = Registry("company", lambda: URL("http://127.0.0.1:9090"))
Records = Toolset(FromRegistry(Company, "records"))


class FindPersonArgs(BaseModel):
    name: str = Field(description="The colleague's name, or part of it.")


class Person(BaseModel):
    name: str
    team: str
    role: str
    office: str


def directory() -> None:
    Description("The company directory: who works where.")
    Tool(
        "find_person",
        "Find a colleague by name: their team, role and office.",
        lambda: (Args(FindPersonArgs), Return(Person)),
    )
    PublishTo(Company)


Directory = Toolset("directory", directory)

with Service("hr"):
    Export(Directory)

with Service("assistant"):
    Agent("reader", "Read records.", lambda: Use(Records, Deferred))
    Agent("generalist", "Use the company catalog.", lambda: Use(Company, lambda: Deferred()))
