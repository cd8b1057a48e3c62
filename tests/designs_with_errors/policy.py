from agentgen.dsl import Agent, MaxToolCalls, ModelTimeout, RunPolicy, Service

with Service("assistant"):
    with Agent("impatient", "Answers quickly."):
        with RunPolicy():
            MaxToolCalls(5)
            ModelTimeout(0)
            ModelTimeout("30 seconds")
            ModelTimeout("30s")
            ModelTimeout("2m")
    with Agent("misplaced", "Has no RunPolicy."):
        ModelTimeout(30)
