"""The runtime: registrations, then runs.

Applications register models, registries and agents (through the generated
``register_<agent>_agent``), then run agents through clients (``new_client(rt)``). Registration
closes when the runtime is sealed, explicitly or by the first run: a registration arriving
later would change what already-running agents can see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from agentgen.runtime.agents.definition import AgentDefinition, RunPolicy
from agentgen.runtime.agents.executors import (
    ToolsetExecutor,
    implementation_problem,
    refuse_wrong_arguments,
)
from agentgen.runtime.agents.executors import described as _described
from agentgen.runtime.agents.model_planner import ModelPlanner
from agentgen.runtime.agents.planning import Planner
from agentgen.runtime.contracts.limits import DEFAULT_REGISTRY_TIMEOUT
from agentgen.runtime.engines.base import Engine
from agentgen.runtime.engines.memory import InMemoryEngine
from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import ModelClient
from agentgen.runtime.runs.confirmation import Confirmer
from agentgen.runtime.runs.host import AgentRegistration, RegistryRegistration, RegistrySettings
from agentgen.runtime.runs.requests import RunOutcome, RunRequest, at_call_depth
from agentgen.runtime.search.analysis import SEARCH_VERSION, StemmerVersionError, check_stemmer
from agentgen.runtime.search.index import reads_documents
from agentgen.runtime.telemetry.config import Telemetry

__all__ = [
    "AgentClient",
    "RegistrationClosedError",
    "RegistrationError",
    "Runtime",
    "checked_executor",
]


class RegistrationError(ValueError):
    """A registration was refused; the message says which and why."""


class RegistrationClosedError(RegistrationError):
    """The runtime is sealed: registrations must happen before any run."""


class Runtime:
    """Registrations and runs.

    ``engine`` runs agents (in memory by default); ``policy`` applies to every run on top of
    each agent's own; ``confirm`` decides confirmations of tools that ask for one;
    ``telemetry`` says how runs are reported through OpenTelemetry (spans and metrics go to the
    providers the application installed; tool arguments and results are recorded only with
    ``Telemetry(capture_payloads=True)``).
    """

    def __init__(
        self,
        *,
        engine: Engine | None = None,
        policy: RunPolicy | None = None,
        confirm: Confirmer | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        refuse_wrong_arguments(
            "Runtime(...)",
            (
                (
                    "engine",
                    engine,
                    "an Engine",
                    engine is None or callable(getattr(engine, "run", None)),
                ),
                ("policy", policy, "a RunPolicy", policy is None or isinstance(policy, RunPolicy)),
                ("confirm", confirm, "an async callable", confirm is None or callable(confirm)),
                (
                    "telemetry",
                    telemetry,
                    "a Telemetry",
                    telemetry is None or isinstance(telemetry, Telemetry),
                ),
            ),
        )
        self.engine: Engine = engine or InMemoryEngine()
        self.policy = policy or RunPolicy()
        self.confirmer = confirm
        self.telemetry = telemetry or Telemetry()
        self._models: dict[str, ModelClient] = {}
        self._registries: dict[str, RegistryRegistration] = {}
        self._agents: dict[str, AgentRegistration] = {}
        self._sealed = False

    # ------------------------------------------------------------------ registration

    def _check_open(self, what: str) -> None:
        if self._sealed:
            raise RegistrationClosedError(
                f"runtime: cannot register {what}: registration is closed (the runtime is "
                "sealed); register everything before the first run"
            )

    def register_model(self, model_id: str, client: ModelClient) -> None:
        self._check_open(f"model {model_id!r}")
        if not model_id or client is None:
            raise RegistrationError("runtime: a model needs an ID and a client")
        if model_id in self._models:
            raise RegistrationError(f"runtime: model {model_id!r} is already registered")
        if not callable(getattr(client, "complete", None)):
            raise RegistrationError(
                f"runtime: model {model_id!r}: {_described(client)} is not a model client (it "
                "has no complete(request) method); pass an adapter from "
                "agentgen.runtime.adapters or your own ModelClient"
            )
        self._models[model_id] = client

    def register_registry(
        self,
        name: str,
        registry_client: Any,
        result_stream: Any,
        *,
        settings: RegistrySettings | None = None,
    ) -> None:
        """Register a registry's client and result stream. ``settings`` are the registry's
        generated settings (``REGISTRIES[name]`` of the generated ``registries.py``): their
        ``timeout`` bounds every request to the registry; without settings, or without a
        declared (non-zero) ``Timeout``, requests are bounded by ``DEFAULT_REGISTRY_TIMEOUT``."""
        missing = [
            what
            for what, absent in (
                ("name", not name),
                ("client", registry_client is None),
                ("result-stream client", result_stream is None),
            )
            if absent
        ]
        if missing:
            raise RegistrationError(
                f"runtime: registry {name or '(unnamed)'!r}: registry name, client, and "
                f"result-stream client are required; missing: {', '.join(missing)}"
            )
        self._check_open(f"registry {name!r}")
        if name in self._registries:
            raise RegistrationError(f"runtime: registry {name!r} is already registered")
        timeout = DEFAULT_REGISTRY_TIMEOUT
        if settings is not None:
            if settings.name != name:
                raise RegistrationError(
                    f"runtime: registry {name!r} was given the settings of registry "
                    f"{settings.name!r}; pass REGISTRIES[{name!r}]"
                )
            if settings.timeout:  # a Timeout of 0 bounds nothing: the default applies
                timeout = settings.timeout
        _check_call_wait(name, registry_client, timeout)
        self._registries[name] = RegistryRegistration(name, registry_client, result_stream, timeout)

    def register_agent(
        self,
        definition: AgentDefinition,
        *,
        planner: Planner,
        executors: Mapping[str, ToolsetExecutor],
    ) -> None:
        """Called by generated ``register_<agent>_agent`` functions."""
        self._check_open(f"agent {definition.id!r}")
        if definition.id in self._agents:
            raise RegistrationError(f"runtime: agent {definition.id!r} is already registered")
        if planner is None:
            raise RegistrationError(f"runtime: agent {definition.id!r} needs a planner")
        lacking = [
            m for m in ("plan_start", "plan_resume") if not callable(getattr(planner, m, None))
        ]
        if lacking:
            raise RegistrationError(
                f"runtime: agent {definition.id!r}: planner {_described(planner)} is not a "
                f"Planner (it has no {' or '.join(lacking)} method); pass "
                "ModelPlanner(model_id, ...) or your own Planner"
            )
        stale = _stale_search_problem(definition, planner, self._models)
        if stale is not None:
            raise RegistrationError(f"runtime: {stale}")
        _check_stemmer(definition)
        targetless = sorted(s.id for s in definition.specs if s.kind == "agent" and not s.agent_id)
        if targetless:
            raise RegistrationError(
                f"runtime: agent {definition.id!r}: agent tool(s) {', '.join(targetless)} name "
                "no agent to run (agent_id); set each one's agent_id to the ID of the agent "
                "that answers its calls"
            )
        confirmed = sorted(s.id for s in definition.specs if s.confirmation is not None)
        if confirmed and self.confirmer is None:
            raise RegistrationError(
                f"runtime: agent {definition.id!r} has tools that require confirmation "
                f"({', '.join(confirmed)}) but the runtime has no confirmer: "
                "pass Runtime(confirm=...)"
            )
        needed = {s.toolset for s in definition.specs if s.kind == "service"}
        missing = sorted(needed - set(executors))
        if missing:
            raise RegistrationError(
                f"runtime: agent {definition.id!r} has no executor for toolset(s) "
                f"{', '.join(missing)}"
            )
        wrong = sorted(
            name
            for name, executor in executors.items()
            if not callable(getattr(executor, "execute", None))
        )
        if wrong:
            raise RegistrationError(
                f"runtime: agent {definition.id!r}: the executor of toolset(s) {', '.join(wrong)} "
                "has no execute(tool_id, payload, context) method; pass the generated "
                "register_<agent>_agent an implementation of each toolset's executor protocol"
            )
        self._agents[definition.id] = AgentRegistration(
            definition, planner, MappingProxyType(dict(executors))
        )

    def seal(self) -> None:
        """Close registration (idempotent), after checking that what the registered agents
        need is registered too: every agent exposed to them as a tool and every registry they
        consume. One :class:`RegistrationError` lists everything missing; registration stays
        open then, so the application can add it.

        It also refuses agents that call each other through agent tools (A's tool runs B,
        whose tool runs A, or A's tool runs A): each run would start child runs without end.
        Generated packages never have such a cycle (the design refuses it), but hand-written
        definitions are only checked here, once every agent is registered. And it refuses an
        agent whose package another search version generated when the model client registered
        after it ranks deferred tools by their search documents (see
        :func:`_stale_search_problem`)."""
        if not self._sealed:
            problems = [
                *self._missing_agent_executors(),
                *self._agent_cycles(),
                *self._missing_models(),
                *self._missing_registries(),
                *self._stale_search_documents(),
            ]
            if problems:
                raise RegistrationError("runtime: " + "; ".join(problems))
        self._sealed = True

    @property
    def sealed(self) -> bool:
        return self._sealed

    # ------------------------------------------------------------------ lookups

    def agent(self, agent_id: str) -> AgentRegistration:
        try:
            return self._agents[agent_id]
        except KeyError:
            raise LookupError(f"runtime: agent {agent_id!r} is not registered") from None

    def model(self, model_id: str) -> ModelClient:
        try:
            return self._models[model_id]
        except KeyError:
            raise LookupError(f"runtime: model {model_id!r} is not registered") from None

    def registry(self, name: str) -> RegistryRegistration:
        try:
            return self._registries[name]
        except KeyError:
            raise LookupError(f"runtime: registry {name!r} is not registered") from None

    def client(self, agent_id: str) -> AgentClient:
        """A client for ``agent_id``. No I/O: the agent may even be registered later."""
        return AgentClient(self, agent_id)

    async def run(self, request: RunRequest) -> RunOutcome:
        """Run an agent to completion. The first run seals the runtime (after checking that
        every agent exposed as a tool and every registry the registered agents consume is
        registered too)."""
        self.seal()
        return await self.engine.run(self, at_call_depth(request))

    def _missing_agent_executors(self) -> list[str]:
        problems = []
        for registration in self._agents.values():
            definition = registration.definition
            # The agents its agent tools run (a hand-written definition may not list them
            # in agent_executors: their calls start child runs all the same).
            called = {s.agent_id for s in definition.specs if s.kind == "agent" and s.agent_id}
            missing = sorted((set(definition.agent_executors) | called) - set(self._agents))
            if missing:
                problems.append(
                    f"agent {definition.id!r} calls agents exposed as tools that are not "
                    f"registered: {', '.join(missing)}; register them before the first run"
                )
        return problems

    def _agent_cycles(self) -> list[str]:
        """Cycles among the registered agents through their agent tools (specs of kind
        ``agent``, the ones whose calls start a child run of ``agent_id``), each reported once.
        A cycle through a registry (an agent tool a registry serves) is not seen here: the
        registry's tools are known only when a run reads them."""
        calls: dict[str, list[tuple[str, str]]] = {}  # agent -> [(tool, called agent)]
        for agent_id in sorted(self._agents):
            calls[agent_id] = [
                (spec.id, spec.agent_id)
                for spec in self._agents[agent_id].definition.specs
                if spec.kind == "agent"
                and spec.agent_id is not None
                and spec.agent_id in self._agents  # a missing one is reported as such
            ]
        problems: list[str] = []
        reported: set[frozenset[str]] = set()
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        for start, first_calls in calls.items():
            if start in state:
                continue
            # The path: each agent with the tool (of the agent before it) that calls it.
            path: list[tuple[str, str]] = [(start, "")]
            pending = [iter(first_calls)]
            state[start] = 1
            while pending:
                step = next(pending[-1], None)
                if step is None:
                    state[path.pop()[0]] = 2
                    pending.pop()
                    continue
                tool, callee = step
                if state.get(callee) == 1:
                    index = next(i for i, (a, _) in enumerate(path) if a == callee)
                    cycle = [*path[index + 1 :], (callee, tool)]
                    key = frozenset(a for a, _ in cycle)
                    if key not in reported:
                        reported.add(key)
                        problems.append(_cycle_problem(callee, cycle))
                elif callee not in state:
                    state[callee] = 1
                    path.append((callee, tool))
                    pending.append(iter(calls[callee]))
        return problems

    def _missing_models(self) -> list[str]:
        users: dict[str, list[str]] = {}
        for agent_id, registration in self._agents.items():
            planner = registration.planner
            if isinstance(planner, ModelPlanner) and planner.model_id not in self._models:
                users.setdefault(planner.model_id, []).append(agent_id)
        return [
            f"model {model_id!r} is not registered, but the ModelPlanner of agent(s) "
            f"{', '.join(sorted(agents))} hands its planning to it; register it with "
            f"rt.register_model({model_id!r}, client) before the first run"
            for model_id, agents in sorted(users.items())
        ]

    def _stale_search_documents(self) -> list[str]:
        """The agents whose stale deferred tools the model client registered after them would
        rank by their counts (see :func:`_stale_search_problem`; refused at registration when
        the client was registered first)."""
        found = (
            _stale_search_problem(registration.definition, registration.planner, self._models)
            for registration in self._agents.values()
        )
        return [problem for problem in found if problem is not None]

    def _missing_registries(self) -> list[str]:
        users: dict[str, list[str]] = {}
        for agent_id, registration in self._agents.items():
            for name in registration.definition.registries:
                if name not in self._registries:
                    users.setdefault(name, []).append(agent_id)
        if not users:
            return []
        listed = ", ".join(
            f"{name!r} (used by {', '.join(sorted(agents))})"
            for name, agents in sorted(users.items())
        )
        return [
            f"registries consumed by registered agents are not registered: {listed}; register "
            "each with rt.register_registry(name, client, result_stream) before the first run"
        ]


def _cycle_problem(first: str, cycle: Sequence[tuple[str, str]]) -> str:
    """``cycle``: each agent with the agent tool (of the agent before it) that calls it, the
    first agent last."""
    chain = " → ".join([repr(first), *(f"tool {tool!r} → {agent!r}" for agent, tool in cycle)])
    if len(cycle) == 1:
        return (
            f"agent {first!r} calls itself through its agent tool ({chain}): each run would "
            "start child runs of itself without end; remove that tool from the agent's "
            "definition (specs)"
        )
    return (
        f"agents call each other through agent tools ({chain}): a run of one would start "
        "child runs of the other without end; remove one of these tools from its agent's "
        "definition (specs): an agent may hand work to another, not back"
    )


def checked_executor(
    config: object, field: str, protocol: str, methods: Sequence[str], *, agent_id: str
) -> Any:
    """``config.<field>``, the executor (or MCP caller) an application configured for one of
    agent ``agent_id``'s toolsets, once it has every method the agent's tools call.

    Generated ``register_<agent>_agent`` functions call it, so that ``None``, a class instead
    of an instance or the executor of another toolset is refused at registration, naming the
    field and what it lacks, rather than failing every call of the run with an
    ``AttributeError`` the model reads."""
    value = getattr(config, field)
    problem = implementation_problem(value, protocol, methods)
    if problem is not None:
        where = f"runtime: agent {agent_id!r}: {type(config).__name__}.{field}"
        raise RegistrationError(f"{where}{problem}")
    return value


class AgentClient:
    """Runs one agent; obtained from generated ``new_client(rt)``."""

    def __init__(self, runtime: Runtime, agent_id: str) -> None:
        self.runtime = runtime
        self.agent_id = agent_id

    async def run(
        self,
        messages: str | Sequence[Message],
        *,
        labels: Mapping[str, str] | None = None,
        policy: RunPolicy | None = None,
        run_id: str = "",
    ) -> RunOutcome:
        """Run the agent on ``messages`` (a string is one user message) and return the
        outcome with the whole transcript. ``labels`` are the run's trusted labels."""
        if isinstance(messages, str):
            messages = [Message.user(messages)]
        _check_run_arguments(self.agent_id, messages, labels, policy, run_id)
        return await self.runtime.run(
            RunRequest(
                agent_id=self.agent_id,
                messages=tuple(messages),
                labels=dict(labels or {}),
                policy=policy or RunPolicy(),
                run_id=run_id,
            )
        )


def _check_run_arguments(
    agent_id: str, messages: object, labels: object, policy: object, run_id: object
) -> None:
    """Refuse arguments of the wrong kind before the run starts, naming the argument: deep in
    the loop they would be an ``AttributeError`` (or a label silently handed to tools as a
    number)."""
    where = f"agent {agent_id!r}: run"
    if not isinstance(messages, Sequence):
        raise TypeError(
            f"{where}: messages must be a string or a sequence of Message, not "
            f"{_described(messages)}"
        )
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise TypeError(
                f"{where}: messages[{index}] is {_described(message)}, not a Message; pass "
                "Message.user(text) (or one string for a single user message)"
            )
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise TypeError(
                f"{where}: labels must be a mapping of label names to string values, not "
                f"{_described(labels)}"
            )
        for name, value in labels.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(
                    f"{where}: label {name!r} = {_described(value)}: label names and values "
                    "must be strings"
                )
    if policy is not None and not isinstance(policy, RunPolicy):
        raise TypeError(f"{where}: policy must be a RunPolicy, not {_described(policy)}")
    if not isinstance(run_id, str):
        raise TypeError(f"{where}: run_id must be a string, not {_described(run_id)}")


def _stale_deferred(definition: AgentDefinition) -> str:
    """The agent's deferred tools whose search documents another search version counted, by
    toolset and version ("" when none is).

    Only deferred tools count: eager tools reach the model whole and are never ranked, so an
    agent whose stale tools are all eager runs exactly as a fresh one (refusing it made every
    such agent wait for a regeneration that changes nothing it does)."""
    deferred = set(definition.deferred_tool_ids)
    stale = sorted((s.search.version, s.toolset, s.id) for s in definition.specs
                   if s.id in deferred and s.search.version != SEARCH_VERSION)  # fmt: skip
    by_toolset: dict[tuple[int, str], list[str]] = {}
    for version, toolset, tool in stale:
        by_toolset.setdefault((version, toolset), []).append(tool)
    return "; ".join(
        f"{', '.join(tools)} (toolset {toolset!r}) counted with search version {version}"
        for (version, toolset), tools in by_toolset.items()
    )


def _stale_search_problem(
    definition: AgentDefinition, planner: Planner, models: Mapping[str, ModelClient]
) -> str | None:
    """Why the agent's deferred tools cannot be searched, when their search documents another
    search version counted and the model client that would search them ranks by those counts
    (the default ranking, ``fields``, cannot rank another version's, and would say so only at
    the model's first tool search, mid-run). The generator wrote the counts; only generating
    the package again recounts them (the runtime reads generated facts, it does not recompute
    them).

    The ranking is the model client's (:func:`~agentgen.runtime.search.index.reads_documents`):
    a client ranking with ``classic`` counts each tool's text itself, and one whose provider
    searches (Claude's hosted search) never reads the documents, so their agents run with a
    stale package. A ``ModelPlanner``'s client is known once it is registered: at
    registration when it was registered first (as usual), else when the runtime is sealed
    (before any run or worker; ``None`` until then). A planner of another kind may hand its
    requests to any client, so its agent is refused as the default ranking would refuse it.
    """
    found = _stale_deferred(definition)
    if not found:
        return None
    if isinstance(planner, ModelPlanner):
        client = models.get(planner.model_id)
        if client is None or not reads_documents(client):
            return None
        ranker = (
            f"model client {planner.model_id!r} ranks deferred tools by these counts (search "
            "ranking 'fields'"
            + ("" if hasattr(client, "search_ranking") else ", the default: it declares none")
            + ")"
        )
    else:
        ranker = (
            f"its planner ({type(planner).__name__}, not a ModelPlanner) may hand them to any "
            "model client, and the default search ranking ('fields') ranks deferred tools by "
            "these counts"
        )
    return (
        f"agent {definition.id!r}: the search documents of its deferred tools {found} were "
        f"written by another agentgen, and this one ranks search version {SEARCH_VERSION}: "
        f"{ranker} and cannot read another version's. Regenerate the agent's package with "
        "this agentgen (agentgen gen DESIGN) and commit it"
    )


def _check_stemmer(definition: AgentDefinition) -> None:
    """Refuse an agent that searches tools (deferred ones, or registry toolsets, whose
    declarations of another search version are counted again here) when the installed stemmer
    gives other stems than the search version counts with: the first stem would raise the
    same error at the model's first tool search, mid-run, after the run had started."""
    if not definition.deferred_tool_ids and definition.registry_tools is None:
        return
    try:
        check_stemmer()
    except StemmerVersionError as exc:
        raise StemmerVersionError(
            f"runtime: agent {definition.id!r} searches its tools (deferred or from a "
            f"registry), and {exc}"
        ) from None


def _check_call_wait(name: str, client: Any, timeout: float) -> None:
    """Refuse a client that waits for a call's outcome (``call_wait_ms``) for more than half
    the registry's Timeout, which bounds the admission request holding that wait: a tool
    slower than the Timeout would have its admission cut while the registry still waited, and
    the model be told the call may not have been admitted when it was, and ran. The default
    wait is a quarter of the client's timeout, at most a second."""
    wait_ms = getattr(client, "call_wait_ms", None)
    if type(wait_ms) is not int or wait_ms / 1000 <= timeout / 2:
        return
    raise RegistrationError(
        f"runtime: registry {name!r}: its client waits up to {wait_ms / 1000:g} s for a "
        f"call's outcome (call_wait_ms={wait_ms}), more than half the registry's Timeout of "
        f"{timeout:g} s, which bounds that request: a slow tool's admission would be cut "
        "while the registry waited, and end outcome_unknown though it ran. Pass a call_wait_ms "
        f"of at most {int(timeout * 500)}, or declare a longer Timeout for the registry"
    )
