"""Text cut to a stated length, saying how long it was.

Text that comes from outside (a provider's failure message, a model's query or a tool name it
made up) travels on to places that keep it: the registry, traces, logs. Each keeps at most a
stated number of characters, and a cut reads the same wherever it is seen: ``... [cut: N
characters]``, N being the whole text's length.
"""

from __future__ import annotations

__all__ = ["cut"]


def cut(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters (the marker included) when longer."""
    if len(text) <= limit:
        return text
    note = f" [cut: {len(text)} characters]"
    return text[: max(limit - len(note), 0)] + note
