"""Mistakes a user plausibly makes, each answered at its line with what to do."""

from pydantic import BaseModel

from agentgen.dsl import (
    URL,
    Agent,
    Args,
    Deferred,
    FromRegistry,
    MaxToolCalls,
    PublishTo,
    Registry,
    RunPolicy,
    Service,
    Tool,
    Toolset,
    Use,
    Version,
)


class Query(BaseModel):
    text: str


Company = Registry("company", URL("https://registry.example"))
Shared = Toolset(FromRegistry(Company, "svc.shared"))
Records = Toolset("records", lambda: Tool("lookup", "Look up.", lambda: Args(Query(text="x"))))
Notes = Toolset("notes", "Tool('add', 'Add a note.')")
Files = Toolset("files", lambda x: Tool("read", "Read a file."))
Labels = Toolset("labels", lambda: (Tool("tag", 5), PublishTo("company")))
Tool("orphan", "Declared outside any toolset.")

with Service("svc"):
    Agent("a", "A.", lambda: Use("recrods"))
    Agent("b", "B.", lambda: Use(Records, lambda: Tool("lokup")))
    Agent("c", "C.", lambda: Use(Shared, lambda: Version(1.2)))
    Agent("d", "D.", lambda: Use(Records, lambda: Version("1.0")))
    with Agent("e", "E."):
        Use(Records, lambda: Deferred(["lookup"]))
        RunPolicy(MaxToolCalls(5))
