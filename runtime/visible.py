"""Text from models and tools, as people see it: no character that acts instead of showing.

Traces and confirmation prompts show what models and tools wrote, often in a terminal, which
obeys escape sequences (``\\x1b[1A\\x1b[2K`` erases the line above) and bidi overrides
(``\\u202e`` shows ``fdp.exe`` as ``exe.pdf``). Such characters are written as their escapes
instead; spaces of every kind stay.
"""

from __future__ import annotations

from unicodedata import category

__all__ = ["QUOTED_LENGTH", "escape", "quoted", "visible"]

#: How much of a text that comes from outside (a name or ID a model made up) an error message
#: quotes: enough to recognise it, while one of 200 KB is not echoed whole.
QUOTED_LENGTH = 80


def visible(text: str, keep: str = "") -> str:
    """``text`` with every control, format, separator, private-use, surrogate or unassigned
    character, except those in ``keep`` (``"\\n\\t"``), written as its Python escape."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or char in keep or category(char) == "Zs" else escape(char)
        for char in text
    )


def escape(char: str) -> str:
    """The Python escape of one character (``\\x00``, ``\\u2028``, ``\\ud800``...)."""
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def quoted(text: object) -> str:
    """``text`` quoted for an error message: the ``repr`` of its first :data:`QUOTED_LENGTH`
    characters, then ``...`` if it is longer (a value that is not a string: its ``repr``, cut
    the same way). The run loop and the model adapters quote a made-up tool name or call ID
    this way, so that one of any size is recognisable, yet never echoed whole into logs,
    traces or the model's next request."""
    if not isinstance(text, str):
        shown = repr(text)
        return shown if len(shown) <= QUOTED_LENGTH else shown[:QUOTED_LENGTH] + "..."
    return repr(text[:QUOTED_LENGTH] + ("..." if len(text) > QUOTED_LENGTH else ""))
