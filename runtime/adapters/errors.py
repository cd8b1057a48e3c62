"""Typed failures of the model adapters.

Every adapter failure is a :class:`~agentgen.runtime.model_client.ModelError`, so callers that only
care that the model call failed catch one type; the subclasses exist for callers (and tests)
that must tell a configuration mistake from a broken transcript or a misbehaving model. Each
message starts with the provider, names the tool, model or message at fault, and says what to
do about it.
"""

from __future__ import annotations

import json
from typing import Any

from agentgen.runtime.messages import ToolCallPart
from agentgen.runtime.model_client import ModelError, ToolSearchUnsupportedError

__all__ = [
    "BrokenHistoryError",
    "DuplicateCallIdError",
    "HistoryReplayError",
    "MissingNamespaceHistoryError",
    "MissingSearchRecordsError",
    "ModelError",
    "OutputBudgetError",
    "ProviderNameError",
    "TamperedHistoryError",
    "ToolIdentityError",
    "ToolSearchUnsupportedError",
]


class ProviderNameError(ModelError):
    """Tool IDs cannot be sent under distinct, permitted provider-visible names.

    Raised before anything is sent: two tools that a provider would see under one name could
    not be told apart when the model calls one of them.
    """


class ToolIdentityError(ModelError):
    """The model called a tool it was not offered, or under the wrong identity.

    Calls are only ever mapped back to tools the current request permits; a call that does not
    resolve is refused rather than guessed at.
    """


class DuplicateCallIdError(ToolIdentityError):
    """The model's reply reuses a tool-call ID (of the same reply or of the conversation):
    running it could run a call twice or answer it with another call's result."""


class HistoryReplayError(ModelError):
    """A stored transcript cannot be replayed as it is.

    Native search records are validated on every request (pairing, references, record shape);
    the adapter never repairs or drops parts of a transcript to make it acceptable.
    """


class BrokenHistoryError(HistoryReplayError):
    """Calls and results do not pair up in order: a result was dropped, duplicated or moved,
    a call ID repeats, or the conversation does not start with the user."""


class TamperedHistoryError(HistoryReplayError):
    """A message's stored search records do not match the message (its fingerprint differs):
    a call was switched to another tool, or a saved definition was changed, after storing."""


class MissingSearchRecordsError(HistoryReplayError):
    """A call to a tool that only a search could have loaded has no search records: the
    message's metadata was lost, so the exchange cannot be replayed as it happened."""


class MissingNamespaceHistoryError(HistoryReplayError):
    """A transcript holds a call to a dynamically loaded tool without the namespace the
    provider needs to replay it: on Bedrock any such call (older transcripts loaded bare
    functions, and Bedrock drops their namespace and then rejects the call), anywhere a call to
    a tool loaded inside a namespace. The adapter never invents the missing field; only the
    user can decide how to recover: start a new conversation, or remove that whole exchange
    from the transcript."""


class OutputBudgetError(ModelError):
    """Client-side tool search needs, and ran out of, the invocation's output token budget."""


def call_arguments(what: str, part: ToolCallPart) -> dict[str, Any]:
    """A historical call's arguments as the JSON object providers replay; anything else in a
    stored transcript is refused (never guessed)."""
    try:
        arguments = json.loads(part.arguments)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise HistoryReplayError(
            f"{what}: call {part.call_id!r} to {part.tool_id!r} has arguments that are not "
            "a JSON object"
        )
    return arguments
