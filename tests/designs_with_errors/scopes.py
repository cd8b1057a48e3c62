from agentgen.dsl import URL, Agent, Args, Deferred, Registry, Service, Tool, Toolset, Use

Tool("orphan", "Declared outside any toolset.")

with Toolset("records"):
    Tool("lookup", "Look up a record.", lambda: Use("x"))
    URL("https://nowhere.example")

with Service("svc"):
    Toolset("nested", lambda: Tool("a", "A tool."))
    with Agent("a", "An agent."):
        Args(dict)
        Deferred()
