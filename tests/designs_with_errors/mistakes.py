"""Mistakes a user plausibly makes, each answered at its line with what to do."""

from pydantic import BaseModel

from agentgen.dsl import (
    URL,
    Agent,
    AllowTags,
    Args,
    BoundedResult,
    ContinueWith,
    Cursor,
    Deferred,
    FromRegistry,
    MaxToolCalls,
    NextCursor,
    PublishTo,
    Registry,
    Return,
    RunPolicy,
    Service,
    Tags,
    Tool,
    Toolset,
    Use,
    Version,
)


class Query(BaseModel):
    text: str
    cursor: str | None = None


Company = Registry("company", URL("https://registry.example"))
Shared = Toolset(FromRegistry(Company, "svc.shared"))
Records = Toolset("records", lambda: Tool("lookup", "Look up.", lambda: Args(Query(text="x"))))
Notes = Toolset("notes", "Tool('add', 'Add a note.')")
Files = Toolset("files", lambda x: Tool("read", "Read a file."))
Labels = Toolset("labels", lambda: (Tool("tag", 5), PublishTo("company")))
Tool("orphan", "Declared outside any toolset.")

with Toolset("pages") as Pages:
    Tags(["support", "read"])
    with Tool("search", "Search."):
        Args(Query)
        Return(Query)
        BoundedResult(lambda: (Cursor("cursor"), NextCursor("cursor"), ContinueWith("mroe")))
    Tool("more", "More.")

with Service("svc"):
    Agent("a", "A.", lambda: Use("recrods"))
    Agent("b", "B.", lambda: Use(Records, lambda: Tool("lokup")))
    Agent("c", "C.", lambda: Use(Shared, lambda: Version(1.2)))
    Agent("d", "D.", lambda: Use(Records, lambda: Version("1.0")))
    with Agent("e", "E."):
        Use(Records, lambda: Deferred(["lookup"]))
        RunPolicy(MaxToolCalls(5))
    with Agent("f", "F."):
        Use(Pages)
        RunPolicy(lambda: (AllowTags(["support"]), MaxToolCalls("5")))
