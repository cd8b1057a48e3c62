from agentgen.dsl import Agent, Service


def description() -> str:
    return {"a": "An agent."}["b"]


Service("svc", lambda: Agent("a", description()))
