"""A provider response's usage, told apart from a response that reported none.

The provider SDKs leave ``usage`` out of a response dictionary when the server did not send it
(or send it as ``null``): such a response cost something nobody counted, which is not 0 tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentgen.runtime.model_client import Usage

__all__ = ["reported_usage"]


def reported_usage(
    raw: Mapping[str, Any],
    input_key: str = "input_tokens",
    output_key: str = "output_tokens",
    cache_keys: tuple[str, ...] = (),
) -> Usage:
    """The usage ``raw`` reports: both counts as whole numbers, or else none at all.

    A usage object missing either count (or holding something other than a non-negative
    whole number) is taken as not reported, rather than completed with 0: the totals of a run
    then say that a response's cost is missing instead of understating it.

    ``cache_keys`` name the counts of input read from or written to the provider's prompt
    cache where the provider leaves them out of its input count (Anthropic, Bedrock Converse):
    they are input the request sent, so they are added to it (as OpenTelemetry's
    ``gen_ai.usage.input_tokens`` counts them). A cache count that is there but not a whole
    number makes the usage not reported, like a malformed input count.
    """
    usage = raw.get("usage")
    if not isinstance(usage, Mapping):
        return Usage.not_reported()
    counts = usage.get(input_key), usage.get(output_key)
    if not all(_count(count) for count in counts):
        return Usage.not_reported()
    cached = [usage[key] for key in cache_keys if usage.get(key) is not None]
    if not all(_count(count) for count in cached):
        return Usage.not_reported()
    input_tokens, output_tokens = counts
    assert isinstance(input_tokens, int) and isinstance(output_tokens, int)
    return Usage(input_tokens + sum(cached), output_tokens)


def _count(value: object) -> bool:
    return type(value) is int and value >= 0
