from agentgen.dsl import Agent, Deferred, Service, Tool, Toolset, Use


def records() -> None:
    Tool("lookup", "Look up a record by its ID.")
    Tool("search", "Search records.")
    Deferred()


Records = Toolset("records", records)

with Service("assistant"):
    with Agent("assistant", "Find records."):
        with Use(Records):
            Deferred("search", "")
            Deferred("search")
            Deferred()
            Deferred("records.lookup")
