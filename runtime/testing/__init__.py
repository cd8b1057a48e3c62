"""Testing agents without a network: model clients for tests and recorded provider exchanges.

* :class:`ScriptedModel` plays scripted turns (tool calls and text per turn) and
  :class:`FunctionModel` asks a function for each turn, like pydantic-ai's ``TestModel`` and
  ``FunctionModel``. Both behave like a provider with tool search: a deferred tool must be
  found by a :class:`Search` before it can be called, and a tool the request does not offer
  cannot be called at all (:class:`ScriptError`).
* :class:`Recording` and :class:`RecordedProvider` play a provider's recorded replies through
  the real SDK client and the real adapter, in process: every request is built and every reply
  parsed as in production, each reply validated with the SDK's public response type, and each
  request compared with the summary the recording keeps of it.
* :func:`record_telemetry` installs the OpenTelemetry SDK recording in memory (once per
  process), to test the spans and metrics runs report; :func:`span_tree` reads spans as text.
* :class:`LocalRegistry` runs the real registry service in process (an in-memory store on a
  free 127.0.0.1 port), for agents that consume registries; it needs the ``registry`` extra and
  is imported only when used.

Register either with ``rt.register_model(id, model)``, as you would a provider adapter. See
docs/testing.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgen.runtime.lazy_names import lazy_names
from agentgen.runtime.testing.models import (
    METADATA_KEY,
    Answer,
    Call,
    FunctionModel,
    ScriptedModel,
    ScriptError,
    Search,
    Step,
    Turn,
)
from agentgen.runtime.testing.recordings import (
    Exchange,
    RecordedProvider,
    Recording,
    RecordingError,
)
from agentgen.runtime.testing.summaries import (
    Provider,
    summarize,
    summarize_anthropic,
    summarize_openai,
)
from agentgen.runtime.testing.telemetry import (
    MetricPoint,
    TelemetryRecorder,
    record_telemetry,
    span_tree,
)

if TYPE_CHECKING:
    from agentgen.runtime.registry.local import LocalRegistry as LocalRegistry

__all__ = [
    "METADATA_KEY",
    "Answer",
    "Call",
    "Exchange",
    "FunctionModel",
    "LocalRegistry",
    "MetricPoint",
    "Provider",
    "RecordedProvider",
    "Recording",
    "RecordingError",
    "ScriptError",
    "ScriptedModel",
    "Search",
    "Step",
    "TelemetryRecorder",
    "Turn",
    "record_telemetry",
    "span_tree",
    "summarize",
    "summarize_anthropic",
    "summarize_openai",
]

# The registry service needs FastAPI and uvicorn: loaded only by tests that use it.
__getattr__, _ = lazy_names(__name__, {"LocalRegistry": "agentgen.runtime.registry.local"}, __all__)
