from agentgen.dsl import Service
Service("svc"
