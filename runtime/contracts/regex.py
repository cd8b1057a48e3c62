"""Regular expressions from tool schemas, run on RE2: time linear in the text, always.

JSON Schema ``pattern`` and ``patternProperties`` come from registry providers and are matched
against text a model chose. Python's ``re`` backtracks: ``^(a+)+$`` against 40 characters
takes longer than anyone waits, and the event loop every run shares waits with it. RE2 (the
``google-re2`` bindings) never backtracks; in exchange it has no backreferences and no
lookaround, so a pattern using them is refused when the contract is compiled, never matched
some other way. ECMA-262's ``\\uXXXX`` escapes (the dialect JSON Schema names, and common in
schemas: ``^[\\u4e00-\\u9fa5]+$``) are spelled ``\\x{XXXX}`` for RE2, which has no ``\\u``.
"""

from __future__ import annotations

import functools
import re

import re2

from agentgen.runtime.contracts.limits import MAX_PATTERN_CHARS, REGEX_MAX_MEMORY

__all__ = ["PatternError", "compile_pattern", "re2_spelling", "search"]


class PatternError(ValueError):
    """A pattern the linear-time engine cannot run (or that is too long)."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # the error is raised, and reported by the caller
    options.max_mem = REGEX_MAX_MEMORY
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re2._Regexp[str]:
    """The compiled pattern; :class:`PatternError` saying why RE2 cannot run it."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"is {len(pattern)} characters long; patterns are limited to {MAX_PATTERN_CHARS}"
        )
    try:
        return re2.compile(re2_spelling(pattern), _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(
            f"cannot run on RE2, the linear-time engine schema patterns use ({reason}); "
            + _advice(str(reason))
        ) from None


def _advice(reason: str) -> str:
    """What to do about RE2's ``reason``: lookaround and backreferences are what RE2 leaves
    out by design; any other refusal is syntax ECMA-262 and RE2 spell differently."""
    if "perl operator" in reason or _BACKREFERENCE.search(reason):
        return "rewrite it without backreferences or lookaround"
    return "rewrite it in syntax ECMA-262 and RE2 share (not \\cX or \\u{...}: write \\uXXXX)"


_BACKREFERENCE = re.compile(r"escape sequence: \\[1-9k]")


def re2_spelling(pattern: str) -> str:
    """``pattern`` with each ECMA-262 ``\\uXXXX`` escape written as RE2's ``\\x{XXXX}``.

    A surrogate pair (``\\ud83d\\ude00``) is the one code point it spells; a lone surrogate
    escape is U+FFFD, as :func:`search` reads a lone surrogate in the text. Every other escape
    (``\\\\u0041`` is a backslash, then ``u0041``) is left as it is."""
    if "\\u" not in pattern:
        return pattern
    out: list[str] = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char != "\\":
            out.append(char)
            at += 1
            continue
        code = _unicode_escape(pattern, at)
        if code is None:
            out.append(pattern[at : at + 2])  # any other escape: the backslash and its char
            at += 2
            continue
        at += 6
        if 0xD800 <= code < 0xDC00:
            low = _unicode_escape(pattern, at)
            if low is not None and 0xDC00 <= low < 0xE000:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                at += 6
        if 0xD800 <= code < 0xE000:
            code = 0xFFFD
        out.append(f"\\x{{{code:04X}}}")
    return "".join(out)


def _unicode_escape(pattern: str, at: int) -> int | None:
    """The code of the ``\\uXXXX`` escape at ``at``, or None if none starts there."""
    digits = pattern[at + 2 : at + 6]
    if pattern.startswith("\\u", at) and len(digits) == 4 and _HEX.fullmatch(digits):
        return int(digits, 16)
    return None


_HEX = re.compile("[0-9A-Fa-f]{4}")


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (JSON Schema's unanchored match).

    RE2 matches UTF-8, which cannot hold a lone surrogate (half of a UTF-16 pair, which JSON
    lets a value spell as ``"\\ud800"``): such a half is matched as U+FFFD, one code point for
    one, as ``.`` and ``[^a]`` count it in ECMA-262 and Python's ``re``."""
    regex = compile_pattern(pattern)
    try:
        return regex.search(text) is not None
    except UnicodeEncodeError:  # only lone surrogates fail to encode
        return regex.search(_SURROGATES.sub("\ufffd", text)) is not None


#: A lone surrogate (Python's ``re``, which schema patterns never run on, is fine here: the
#: pattern is fixed and linear).
_SURROGATES = re.compile("[\ud800-\udfff]")
