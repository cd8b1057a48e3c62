from agentgen.dsl import Agent, MaxToolCalls, ModelTimeout, RunPolicy, Service

with Service("assistant"):
    with Agent("impatient", "Answers quickly."):
        with RunPolicy():
            MaxToolCalls(5)
            ModelTimeout("30s")
            ModelTimeout("2m")
    Agent("zero", "Waits for nothing.", lambda: RunPolicy(lambda: ModelTimeout(0)))
    Agent("wordy", "Spells it out.", lambda: RunPolicy(lambda: ModelTimeout("30 seconds")))
    with Agent("misplaced", "Has no RunPolicy."):
        ModelTimeout(30)
