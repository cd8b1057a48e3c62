from agentgen.dsl import URL, Agent, Deferred, Export, FromRegistry, Registry, Service, Tags, Toolset, Use, Version

Company = Registry("company", lambda: URL("registry.example"))
Records = Toolset(FromRegistry(Company, "records"))
Missing = Toolset(FromRegistry(None, "missing"))

with Service("assistant"):
    Export(Records)
    with Agent("reader", "Read records."):
        Use(Records, lambda: (Deferred("search"), Tags("fast")))
        Use(Company, lambda: Version("1.0"))
    with Agent("twice", "Consumes twice."):
        Use(Company)
        Use(Company)
