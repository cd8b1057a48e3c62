"""Regular expressions from tool schemas, run on RE2: time linear in the text, always.

JSON Schema ``pattern`` and ``patternProperties`` come from registry providers and are matched
against text a model chose. Python's ``re`` backtracks: ``^(a+)+$`` against 40 characters
takes longer than anyone waits, and the event loop every run shares waits with it. RE2 (the
``google-re2`` bindings) never backtracks; in exchange it has no backreferences and no
lookaround, so a pattern using them is refused when the contract is compiled, never matched
some other way.
"""

from __future__ import annotations

import functools
import re

import re2

from agentgen.runtime.contracts.limits import MAX_PATTERN_CHARS, REGEX_MAX_MEMORY

__all__ = ["PatternError", "compile_pattern", "search"]


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
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(
            f"cannot run on RE2, the linear-time engine schema patterns use ({reason}); "
            "rewrite it without backreferences or lookaround"
        ) from None


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
