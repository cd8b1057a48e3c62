"""Words of a tool's search text, counted once at generation time.

Tool search ranks deferred tools by the words of their ID, title and description. Counting
those words is done by the code generator (or when a registry contract is compiled), so the
runtime only adds up precomputed counts. Both sides must split text into words the same way,
which is why the tokenizer lives here, next to the document it produces.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SearchDocument", "search_text", "tokenize"]

# For str patterns, `\w` is exactly `str.isalnum()` plus "_", so this matches runs of
# characters that are alphanumeric. That is a superset of the word rule: `isalnum` also accepts
# numeric characters that are neither letters nor decimal digits (categories Nl and No, such as
# "²" or "Ⅻ"). Those only exist outside ASCII, so only non-ASCII runs need a second look.
_ALNUM_RUN = re.compile(r"[^\W_]+")

_INVALID_COUNT = "tool search document has an invalid word count"
_WORD_TYPES = frozenset({str})
_COUNT_TYPES = frozenset({int})
_LENGTH_MISMATCH = "tool search document length does not match its word counts"


def tokenize(text: str) -> list[str]:
    """Split text into the words that tool search matches on.

    The rule, shared by generated search documents and run-time queries so that they agree:
    lower-case the whole text with `str.lower`, then split it at every character that is
    neither a Unicode letter (`str.isalpha`) nor a Unicode decimal digit (`str.isdecimal`),
    and drop empty pieces. So "records.search" and "records_search" both give
    ["records", "search"], "v2" stays one word, and repeats are kept.
    """
    lowered = text.lower()
    runs = _ALNUM_RUN.findall(lowered)
    if lowered.isascii():
        return runs
    words: list[str] = []
    for run in runs:
        if run.isascii() or run.isalpha() or run.isdecimal():
            words.append(run)
        else:
            words.extend(_split_numeric(run))
    return words


def _split_numeric(run: str) -> Iterator[str]:
    """Split an alphanumeric run at characters that are numeric but not decimal digits."""
    start = 0
    for index, char in enumerate(run):
        if not (char.isalpha() or char.isdecimal()):
            if index > start:
                yield run[start:index]
            start = index + 1
    if start < len(run):
        yield run[start:]


def search_text(tool_id: str, title: str, description: str) -> str:
    """Return the text a tool's search document is built from.

    The ID comes first so that a search for a toolset or tool name finds the tool even when
    its title and description use other words.
    """
    return f"{tool_id} {title} {description}"


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """How often each word occurs in a tool's search text, and how many words it has.

    `length` counts repeats, so it equals the sum of the counts; BM25 needs it to discount
    long descriptions. An empty document is valid: such a tool is only found by its exact name.
    """

    terms: Mapping[str, int]
    length: int

    @classmethod
    def from_text(cls, text: str) -> SearchDocument:
        """Count the words of text; terms are kept in sorted order so output is stable."""
        words = tokenize(text)
        counts = Counter(words)
        return cls(terms={word: counts[word] for word in sorted(counts)}, length=len(words))

    def validate(self) -> None:
        """Reject counts that BM25 cannot use, such as documents read from a registry."""
        terms, counts = self.terms, self.terms.values()
        # A registry catalog validates thousands of documents: plain words and counts pass in a
        # few C-speed passes; anything else goes through the checks below.
        if (
            set(map(type, terms)) <= _WORD_TYPES
            and set(map(type, counts)) <= _COUNT_TYPES
            and "" not in terms
            and min(counts, default=1) >= 1
            and _is_int(self.length)
            and self.length == sum(counts)
        ):
            return
        total = 0
        for term, count in self.terms.items():
            if not isinstance(term, str) or not term:
                raise ValueError(_INVALID_COUNT)
            if not _is_int(count) or count < 1:
                raise ValueError(_INVALID_COUNT)
            total += count
        if not _is_int(self.length) or self.length != total:
            raise ValueError(_LENGTH_MISMATCH)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form used in contracts; terms are sorted so bytes are stable."""
        return {
            "length": self.length,
            "terms": {term: self.terms[term] for term in sorted(self.terms)},
        }

    @classmethod
    def from_json(cls, obj: object) -> SearchDocument:
        """Read the JSON form strictly, since it may come from another process."""
        if not isinstance(obj, dict):
            raise ValueError("tool search document must be a JSON object")
        keys = set(obj)
        if keys != {"length", "terms"}:
            unknown = sorted(str(key) for key in keys - {"length", "terms"})
            missing = sorted({"length", "terms"} - keys)
            detail = f"unknown keys {unknown}" if unknown else f"missing keys {missing}"
            raise ValueError(f"tool search document has {detail}")
        length, terms = obj["length"], obj["terms"]
        if not _is_int(length):
            raise ValueError("tool search document length must be an integer")
        if not isinstance(terms, dict):
            raise ValueError("tool search document terms must be a JSON object")
        for term, count in terms.items():
            if not isinstance(term, str) or not _is_int(count):
                raise ValueError(_INVALID_COUNT)
        document = cls(terms={term: terms[term] for term in sorted(terms)}, length=length)
        document.validate()
        return document

    def __hash__(self) -> int:
        # The generated hash would fail on the dict; documents are values, so hash by content.
        return hash((self.length, frozenset(self.terms.items())))


def _is_int(value: object) -> bool:
    """Tell integers from booleans, which JSON and Python would otherwise mix up."""
    return isinstance(value, int) and not isinstance(value, bool)
