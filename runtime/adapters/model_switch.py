"""Saying why a model that thinks refused a tool loop another model started.

Reasoning goes back only to the model that produced it (a signature is bound to the model that
wrote it), so when another model continues a tool loop, the turn that made the calls reaches it
without reasoning. A model that thinks refuses that turn (HTTP 400: "Expected `thinking` or
`redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant`
message must start with a thinking block ..."), advising to send back thinking blocks (which
are another model's, or do not exist) or to turn thinking off (the model's default). Whether a
model thinks is known only once it refuses, since a model that does not takes the same
request, so the refusal is said again, after the fact, in the transcript's terms: which
message, which models, and what the user can do. The same model refuses a turn it made itself
with its thinking off (turned on since): that is said too, since no other model can continue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentgen.runtime.adapters.anchors import describe
from agentgen.runtime.adapters.errors import HistoryReplayError
from agentgen.runtime.adapters.history import REMEDY
from agentgen.runtime.messages import Message
from agentgen.runtime.model_client import USAGE_METADATA_KEY, ModelError, ModelRequest

__all__ = ["THINKING_REQUIRED", "planned_model", "thinking_refused"]

#: What the providers' 400 says (Anthropic's Messages API, and Bedrock for Claude).
THINKING_REQUIRED = "Expected `thinking` or `redacted_thinking`"


def planned_model(message: Message) -> str | None:
    """The model ModelPlanner requested an assistant message from (its
    :data:`~agentgen.runtime.model_client.USAGE_METADATA_KEY` record), if it says."""
    usage = message.metadata.get(USAGE_METADATA_KEY)
    model = usage.get("model") if isinstance(usage, Mapping) else None
    return model if isinstance(model, str) and model else None


def thinking_refused(
    provider: str,
    exc: BaseException,
    failure: ModelError,
    request: ModelRequest,
    reasoning_key: str,
    producer: Callable[[Message], str | None],
    also: str = "",
) -> HistoryReplayError | None:
    """The :class:`HistoryReplayError` to raise instead of ``failure`` (the SDK's ``exc``
    classified) when it is that refusal of the request's last assistant message; None for any
    other failure, and when that message's own reasoning was sent (something else is wrong,
    as the provider says). ``reasoning_key`` is the metadata key of the adapter's reasoning
    record, ``producer`` the model that record came from; ``also`` is a further remedy the
    adapter offers (``; ...``)."""
    if THINKING_REQUIRED not in str(exc):
        return None
    found = [(i, m) for i, m in enumerate(request.messages) if m.role == "assistant"]
    if not found:
        return None
    index, message = found[-1]
    made_by = producer(message) or planned_model(message)
    reasoned = message.metadata.get(reasoning_key) is not None
    if reasoned and made_by in (None, request.model):
        return None
    loop = f"model {made_by!r}" if made_by is not None else "the model that made the calls"
    remedy = (
        f"Continue the tool loop with {loop}, and switch to {request.model!r} once it has answered"
    )
    if reasoned:
        held = (
            f"holds the reasoning of model {made_by!r}, which cannot go to another model "
            "(a signature is bound to the model that wrote it), so it was sent without it"
        )
    elif made_by == request.model:
        # No other model to continue with: that model's thinking was off when it made the turn
        # (turned on since, or the turn predates the adapter keeping thinking).
        held = f"was made by model {made_by!r} itself, without thinking (it was off then)"
        remedy = "Finish the tool loop with its thinking off, and turn it on once it has answered"
    elif made_by is not None:
        held = f"was made by model {made_by!r} without reasoning"
    else:
        held = "holds no reasoning"
    return HistoryReplayError(
        f"{provider}: {describe(index, message)} made the tool calls whose results the request "
        f"for model {request.model!r} carries, and {held}; model {request.model!r} thinks, and "
        "refuses a tool loop whose assistant turn does not begin with its own thinking (the "
        f"provider answered: {THINKING_REQUIRED}...). {remedy}{also}; or {REMEDY}",
        status=failure.status,
    )
