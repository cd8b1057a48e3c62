"""A run's trace for people: what was searched, loaded and called, what came back, the answer
and what it cost, read from a run's outcome or a stored transcript.

:func:`events` gives the steps as values; :func:`render` and :func:`print_trace` show them
(with ``rich``, an optional dependency: ``pip install 'agentgen[trace]'``); the command line
does the same for a stored transcript (``agentgen trace transcript.json``).
"""

from __future__ import annotations

from agentgen.runtime.trace.events import (
    TESTING_SEARCH_KEY,
    HasTranscript,
    TraceError,
    TraceEvent,
    Usage,
    events,
    loaded_tools,
)
from agentgen.runtime.trace.render import print_trace, render

__all__ = [
    "TESTING_SEARCH_KEY",
    "HasTranscript",
    "TraceError",
    "TraceEvent",
    "Usage",
    "events",
    "loaded_tools",
    "print_trace",
    "render",
]
