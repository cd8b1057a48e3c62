"""agentgen's tracer and metric instruments, from the OpenTelemetry API's global providers.

A library takes its tracer and meter from the API and lets the application install the SDK
(or not): before any provider is set these are the API's proxies, which forward to the
providers the application sets later and cost next to nothing until then.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib import metadata
from typing import TypeVar

from opentelemetry import metrics, trace
from opentelemetry.environment_variables import (
    OTEL_PYTHON_METER_PROVIDER,
    OTEL_PYTHON_TRACER_PROVIDER,
)

from agentgen.runtime.telemetry import names
from agentgen.runtime.telemetry.config import TelemetrySetupError

_T = TypeVar("_T")

__all__ = [
    "CATALOG_BUILD",
    "METER",
    "OPERATION_DURATION",
    "REGISTRY_REQUEST",
    "SCOPE",
    "SEARCH_ROUNDS",
    "TOKEN_USAGE",
    "TOOLS_LOADED",
    "TOOL_CALLS",
    "TRACER",
    "UNREPORTED_USAGE",
]

#: The instrumentation scope of every span and metric agentgen reports.
SCOPE = "agentgen"


def _version() -> str | None:
    try:
        return metadata.version("agentgen")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return None


def _from_api(get: Callable[[], _T], variable: str, kind: str) -> _T:
    """``get()``; a provider the environment names that cannot be loaded is named with what
    to do. The API resolves it on the first call (here, at import) and raises whatever loading
    raised: a bare ``StopIteration`` for a name no installed package provides (checked first,
    so that the API does not log its own traceback for it)."""
    name = os.environ.get(variable)
    group = f"opentelemetry_{kind}_provider"
    problem = None
    if name is not None and not metadata.entry_points(group=group, name=name):
        problem = "no installed package provides it"
    else:
        try:
            return get()
        except Exception as exc:
            problem = f"loading it raised {type(exc).__name__}: {exc}"
    raise TelemetrySetupError(
        f"{variable}={name!r} names no OpenTelemetry {kind} provider that can be loaded "
        f"here ({problem}; providers are '{group}' entry points): install the package that "
        f"provides it (opentelemetry-sdk provides 'sdk_{kind}_provider'), or unset {variable}"
    )


_VERSION = _version()
TRACER = _from_api(lambda: trace.get_tracer(SCOPE, _VERSION), OTEL_PYTHON_TRACER_PROVIDER, "tracer")
METER = _from_api(
    lambda: metrics.get_meter(SCOPE, _VERSION or ""), OTEL_PYTHON_METER_PROVIDER, "meter"
)

# Bucket boundaries the GenAI conventions recommend for token counts and durations.
_TOKEN_BUCKETS = [4.0**n for n in range(14)]
_SECOND_BUCKETS = [0.01 * 2**n for n in range(14)]
_COUNT_BUCKETS = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 8.0, 10.0, 16.0, 32.0, 64.0, 128.0]

TOKEN_USAGE = METER.create_histogram(
    names.TOKEN_USAGE,
    unit="{token}",
    description="Tokens a model call used, by token type (input, output).",
    explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
)
OPERATION_DURATION = METER.create_histogram(
    names.OPERATION_DURATION,
    unit="s",
    description="How long a model call took (its search rounds included).",
    explicit_bucket_boundaries_advisory=_SECOND_BUCKETS,
)
TOOLS_LOADED = METER.create_histogram(
    names.TOOLS_LOADED,
    unit="{tool}",
    description="Distinct deferred tools tool search loaded during a run that answered.",
    explicit_bucket_boundaries_advisory=_COUNT_BUCKETS,
)
SEARCH_ROUNDS = METER.create_histogram(
    names.SEARCH_ROUNDS,
    unit="{round}",
    description="Tool search rounds of one planning activity.",
    explicit_bucket_boundaries_advisory=_COUNT_BUCKETS,
)
UNREPORTED_USAGE = METER.create_counter(
    names.UNREPORTED_USAGE,
    unit="{response}",
    description="Provider responses that reported no usage: their tokens are in no "
    "gen_ai.client.token.usage data point (a model call with one records none).",
)
TOOL_CALLS = METER.create_counter(
    names.TOOL_CALLS,
    unit="{call}",
    description="Tool calls, by outcome (ok, or the error kind the model was told).",
)
REGISTRY_REQUEST = METER.create_histogram(
    names.REGISTRY_REQUEST_DURATION,
    unit="s",
    description="How long a request to a registry took (its client's retries included).",
    explicit_bucket_boundaries_advisory=_SECOND_BUCKETS,
)
CATALOG_BUILD = METER.create_histogram(
    names.CATALOG_BUILD_DURATION,
    unit="s",
    description="How long building a planning activity's catalog took (registry reads and "
    "contract compilation included).",
    explicit_bucket_boundaries_advisory=_SECOND_BUCKETS,
)
