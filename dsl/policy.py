"""Run policy: limits and tag filters applied to an agent's catalog before the model sees it
and again, with the same predicate, when a call is executed."""

from __future__ import annotations

from agentgen.dsl.call import Call, begin, open_scope
from agentgen.dsl.durations import Duration, parse_duration
from agentgen.dsl.expr import AgentExpr, RunPolicyExpr, TagClauseExpr
from agentgen.dsl.names import q, shown_int

#: The largest count ``MaxToolCalls`` and ``MaxConsecutiveFailedToolCalls`` take: the
#: runtime's ``MAX_TOOL_CALLS`` (``agentgen.runtime.contracts.limits``), which its
#: ``RunPolicy`` holds the generated policy to (the DSL does not import the runtime; a test
#: keeps the two equal). A run sends its whole transcript, every call and result, to the model
#: at each planning activity: 10,000 calls fill a model's context, so a larger count bounds
#: nothing and reads as a limit where there is none.
MAX_TOOL_CALLS = 10_000


def RunPolicy(*args: object) -> RunPolicyExpr:
    """The agent's default run policy (``MaxToolCalls``, ``ModelTimeout``, ``AllowTags``...)."""
    call = begin("RunPolicy")
    values, body = call.split_body(args)
    if values:
        call.too_many(values, "only a body", 0)
    agent = call.expect((AgentExpr,), "inside an Agent body")
    expr = RunPolicyExpr(call.loc, agent)
    call.attach_once(agent, "policy", expr)
    return open_scope(call, expr, body)


def _count(call: Call, value: object, least: int, zero: str) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        hint = (
            f"; write it as a number: {call.func}({value.strip()})"
            if isinstance(value, str) and value.strip().isdigit()
            else ""
        )
        call.error(f"{call.func} takes an integer, got {type(value).__name__}{hint}", arg=(0, None))
        return None
    if value < least:
        qualifier = "non-negative" if least == 0 else f"at least {least}"
        call.error(
            f"{call.func} must be {qualifier}, got {shown_int(value)}{zero if value == 0 else ''}"
        )
        return None
    if value > MAX_TOOL_CALLS:
        call.error(
            f"{call.func} must be at most {MAX_TOOL_CALLS}, got {shown_int(value)}: a run sends "
            "every call and its result to the model again at each step, so more calls than "
            f"that no longer fit a model's context and bound nothing; give {MAX_TOOL_CALLS} or "
            "fewer, or leave the setting out for no limit"
        )
        return None
    return value


def _first_clause(call: Call, policy: RunPolicyExpr | None) -> bool:
    """Whether this is the policy's first ``call.func``, valid or not; a repeat is refused,
    naming the first's line. Checked before the value, so that a repeat of a refused clause
    (``MaxToolCalls(-1)`` then ``MaxToolCalls(5)``) is reported in the same run beside it,
    not only once the first is fixed."""
    return policy is not None and not call.repeated(policy, "this RunPolicy")


def _set_cap(func: str, attr: str, value: int, *, least: int = 0, zero: str = "") -> None:
    call = begin(func)
    policy = call.expect((RunPolicyExpr,), "inside a RunPolicy body")
    first = _first_clause(call, policy)
    count = _count(call, value, least, zero)
    if policy is None or count is None or not first:
        return
    setattr(policy, attr, count)


def MaxToolCalls(count: int) -> None:
    """At most ``count`` tool calls per run."""
    _set_cap("MaxToolCalls", "max_tool_calls", count)


def MaxConsecutiveFailedToolCalls(count: int) -> None:
    """Stop the run's tool use after ``count`` failed tool calls in a row.

    Zero is refused, as the runtime's ``RunPolicy`` refuses it: no failure has to happen for
    "0 failures in a row" to be reached, so it would end tool use after the first activity
    whatever the calls did. No limit is said by leaving the setting out (``MaxToolCalls(0)``
    differs: a run without tool calls is a meaningful policy).
    """
    _set_cap(
        "MaxConsecutiveFailedToolCalls",
        "max_consecutive_failed_tool_calls",
        count,
        least=1,
        zero=(
            ": no failure is needed to reach 0 failures in a row, so every activity after the "
            "first would be final-answer-only; give 1 or more, or leave the setting out for no "
            "limit"
        ),
    )


def ModelTimeout(duration: Duration) -> None:
    """How long one model call of a run may take; a call still going then is cancelled and the
    run fails with ``ModelTimeoutError``, instead of waiting on the model client's own timeout.

    ``duration`` as for registry timeouts: seconds, a ``timedelta`` or ``"30s"``, ``"2m"``.
    """
    call = begin("ModelTimeout")
    policy = call.expect((RunPolicyExpr,), "inside a RunPolicy body")
    first = _first_clause(call, policy)
    try:
        seconds: float | None = parse_duration(
            duration,
            positive=True,
            hint="give the time allowed, or leave the setting out for no bound",
        )
    except ValueError as exc:
        call.error(f"ModelTimeout {exc}")
        seconds = None
    if policy is None or seconds is None or not first:
        return
    policy.model_timeout, policy.model_timeout_loc = seconds, call.loc


def _tag_clause(func: str, tags: tuple[str, ...], *, allow: bool) -> None:
    call = begin(func)
    policy = call.expect((RunPolicyExpr,), "inside a RunPolicy body")
    if not tags:
        call.error(f"{func} needs at least one tag")
        return
    values = [call.text("tag", tag, arg=(i, None), spread=True) for i, tag in enumerate(tags)]
    if policy is None or any(v is None for v in values):
        return
    clean = tuple(v for v in values if v is not None)
    repeated = sorted({tag for tag in clean if clean.count(tag) > 1})
    if repeated:
        # The clause was generated with the tag twice (``denied_any=("x", "x")``), which
        # reads as two tags where one was meant (a typo for another tag, often).
        again = next(i for i, tag in enumerate(clean) if tag in clean[:i])
        call.error(
            f"{func} repeats tag(s) {', '.join(q(t) for t in repeated)}; give each tag once",
            arg=(again, None),
        )
        return
    clause = (
        TagClauseExpr(call.loc, allowed_any=clean)
        if allow
        else TagClauseExpr(call.loc, denied_any=clean)
    )
    policy.tag_clauses.append(clause)


def AllowTags(*tags: str) -> None:
    """Keep only tools that have at least one of ``tags`` (each call adds a clause; all apply)."""
    _tag_clause("AllowTags", tags, allow=True)


def DenyTags(*tags: str) -> None:
    """Drop tools that have any of ``tags``."""
    _tag_clause("DenyTags", tags, allow=False)


__all__ = [
    "MAX_TOOL_CALLS",
    "AllowTags",
    "DenyTags",
    "MaxConsecutiveFailedToolCalls",
    "MaxToolCalls",
    "ModelTimeout",
    "RunPolicy",
]
