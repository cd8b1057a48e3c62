"""What an agent is made of, as generated packages and applications hand it to the runtime:
its definition (tools, deferred IDs, policy, registry consumption), the executor seams its
toolsets are run through, the planner seam, and the ready-made :class:`ModelPlanner`."""

__all__: list[str] = []
