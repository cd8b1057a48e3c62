"""Words of a tool's search text, counted once per field at generation time.

Tool search ranks deferred tools by the words of their ID, title, description and arguments.
Counting those words is done by the code generator (or when a registry contract is compiled),
so the runtime only adds up precomputed counts. Every side builds documents with
:func:`search_document` and analyses words with :mod:`agentgen.runtime.search.analysis`, and a
document records the version of that analysis, so documents and queries always agree.
:func:`tokenize` is the spec's original word rule, kept for the ``classic`` ranking.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import Any

from agentgen.runtime.json_pointer import resolve_reference
from agentgen.runtime.search.analysis import (
    FIELDS,
    SEARCH_VERSION,
    identifier_words,
    normalized,
    text_words,
    word_runs,
)
from agentgen.runtime.visible import quoted

__all__ = [
    "CLASSIC_VERSION",
    "MAX_WORD_COUNT",
    "VERSION_FIELDS",
    "SearchDocument",
    "parameter_text",
    "search_document",
    "search_text",
    "tokenize",
]

#: The spec's plain BM25 document: word counts of "<tool ID> <title> <description>".
CLASSIC_VERSION = 1

# For str patterns, `\w` is exactly `str.isalnum()` plus "_", so the analysis' runs
# (:func:`~agentgen.runtime.search.analysis.word_runs`) are a superset of the word rule:
# `isalnum` also accepts numeric characters that are neither letters nor decimal digits
# (categories Nl and No, such as "Ⅻ"). Those only exist outside ASCII, so only non-ASCII runs
# need a second look.

_INVALID_COUNT = "tool search document has an invalid word count"

#: The most times a document read from elsewhere (a registry) may count one word in one field.
#: The text a document counts is part of a registry declaration, at most 1 MiB, and every word
#: takes at least one character of it, so no honest count is larger; a count such as 10**400
#: made every search over its catalog fail (BM25 divides it as a float).
MAX_WORD_COUNT = 1024 * 1024
_WORD_TYPES = frozenset({str})
_COUNT_TYPES = frozenset({int})
_ROW_TYPES = frozenset({tuple})
_LIST_TYPES = frozenset({list})


def tokenize(text: str) -> list[str]:
    """Split text into the words that tool search matches on.

    The rule, shared by generated search documents and run-time queries so that they agree:
    bring the text to the form every word is read in
    (:func:`~agentgen.runtime.search.analysis.normalized`: Unicode NFKC, so a decomposed
    "résumé" is one word, without invisible format characters, so a Persian word typed with
    or without its zero-width non-joiner is the same word), lower-case it with `str.lower`,
    then split it at every character that is neither a Unicode letter (`str.isalpha`), a
    Unicode decimal digit (`str.isdecimal`) nor a combining mark following one (the vowel
    signs of "हिन्दी"), and drop empty pieces. So "records.search" and "records_search" both
    give ["records", "search"], "v2" stays one word, and repeats are kept.
    """
    lowered = normalized(text).lower()
    runs = word_runs(lowered)
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
    """Split a run of letters, digits and marks at characters that are numeric but not
    decimal digits, dropping the marks that follow such a character with it (a mark only
    continues a word)."""
    word: list[str] = []
    for char in run:
        if char.isalpha() or char.isdecimal():
            word.append(char)
        elif char.isnumeric():
            if word:
                yield "".join(word)
                word = []
        elif word:
            word.append(char)
    if word:
        yield "".join(word)


def search_text(tool_id: str, title: str, description: str) -> str:
    """Return the text a tool's search document is built from.

    The ID comes first so that a search for a toolset or tool name finds the tool even when
    its title and description use other words.
    """
    return f"{tool_id} {title} {description}"


#: The fields of a document of each version, in the order their counts are stored.
#: Versions 2 and 3 (the same fields, counted before text was normalised, and before format
#: characters were removed and marks kept in words) are still read, so that a package
#: generated with them imports and its registration can say to regenerate it.
VERSION_FIELDS: Mapping[int, tuple[str, ...]] = MappingProxyType(
    {CLASSIC_VERSION: ("text",), 2: FIELDS, 3: FIELDS, SEARCH_VERSION: FIELDS}
)

# Count tuples repeat across tools ((1, 0, 0, 0, 0) is most of them): one shared object each
# keeps a catalog of thousands of documents small.
_COUNTS: dict[tuple[int, ...], tuple[int, ...]] = {}
# How many distinct count tuples are shared at most. The table lives as long as the process
# and documents also come from registries, whose counts are anyone's: kept unbounded, it held
# every tuple every registration ever sent (100,000 entries, 17 MB, after 50 revisions of a
# 2,000-word toolset, long after the documents were gone). The common tuples come first and
# stay; a tuple met once the table is full is used as it is (equal, only not shared).
_MAX_SHARED_COUNTS = 8192


def _shared(counts: tuple[int, ...]) -> tuple[int, ...]:
    found = _COUNTS.get(counts)
    if found is not None:
        return found
    if len(_COUNTS) < _MAX_SHARED_COUNTS:
        return _COUNTS.setdefault(counts, counts)
    return counts


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """How often each word occurs in each field of a tool's search text.

    ``terms`` maps a word to its counts per field, in the order of ``VERSION_FIELDS[version]``:
    for the current version the tool ID, title, description, argument names and argument text
    (descriptions and enum values); version 1 (``classic``) has one field, the spec's
    "<tool ID> <title> <description>". ``lengths`` (words per field, repeats included) follow
    from the counts; BM25 uses them to discount long fields. An empty document is valid: such a
    tool is only found by its exact name.
    """

    terms: Mapping[str, tuple[int, ...]]
    version: int = SEARCH_VERSION
    lengths: tuple[int, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        fields = VERSION_FIELDS.get(self.version) if _is_int(self.version) else None
        if fields is None:
            known = ", ".join(str(v) for v in VERSION_FIELDS)
            raise ValueError(
                f"tool search document version {self.version!r} is not one this runtime ranks "
                f"with ({known}); regenerate the package or upgrade agentgen"
            )
        width = len(fields)
        rows = self.terms.values()
        # Exact tuples of exact ints, checked and summed at C speed (a catalog reads thousands
        # of documents); anything else is looked at count by count below.
        if (
            set(map(type, rows)) <= _ROW_TYPES
            and set(map(len, rows)) <= {width}
            and set(map(type, chain.from_iterable(rows))) <= _COUNT_TYPES
        ):
            sums = tuple(map(sum, zip(*rows, strict=True)))
            object.__setattr__(self, "lengths", sums or (0,) * width)
            return
        lengths = [0] * width
        for counts in rows:
            if type(counts) is not tuple or len(counts) != width:
                raise ValueError(_INVALID_COUNT)
            for index, count in enumerate(counts):
                if type(count) is not int:  # bool and float included: JSON mixes them up
                    raise ValueError(_INVALID_COUNT)
                lengths[index] += count
        object.__setattr__(self, "lengths", tuple(lengths))

    @classmethod
    def of(
        cls, fields: Mapping[str, Iterable[str]], version: int = SEARCH_VERSION
    ) -> SearchDocument:
        """Count the words of each field (``{field: words}``); terms sorted so output is stable."""
        names = VERSION_FIELDS[version]
        unknown = sorted(set(fields) - set(names))
        if unknown:
            raise ValueError(f"tool search documents of version {version} have no field {unknown}")
        counters = [Counter(fields.get(name, ())) for name in names]
        words = sorted(set().union(*counters))
        return cls(
            {sys.intern(word): _shared(tuple(c[word] for c in counters)) for word in words},
            version,
        )

    @classmethod
    def from_text(cls, text: str) -> SearchDocument:
        """The classic (version 1) document: the words of ``text`` by :func:`tokenize`."""
        return cls.of({"text": tokenize(text)}, CLASSIC_VERSION)

    @property
    def fields(self) -> tuple[str, ...]:
        return VERSION_FIELDS[self.version]

    def field_terms(self, name: str) -> dict[str, int]:
        """The counts of one field, as a plain mapping (for showing and testing)."""
        index = self.fields.index(name)
        return {word: counts[index] for word, counts in self.terms.items() if counts[index]}

    def validate(self) -> None:
        """Reject counts that BM25 cannot use, such as documents read from a registry."""
        for term, word_counts in self.terms.items():
            if not isinstance(term, str) or not term:
                raise ValueError(_INVALID_COUNT)
            if not all(_is_int(c) and c >= 0 for c in word_counts) or not any(word_counts):
                raise ValueError(_INVALID_COUNT)
            largest = max(word_counts)
            if largest > MAX_WORD_COUNT:
                raise ValueError(
                    f"tool search document counts the word {quoted(term)} "
                    f"{_shown_count(largest)} times in one field, more than the "
                    f"{MAX_WORD_COUNT:,} a tool's text can hold: publish the document agentgen "
                    "counts (search_document), or regenerate the provider"
                )

    def to_json(self) -> dict[str, Any]:
        """The JSON form used in registry contracts; terms sorted so bytes are stable."""
        return {
            "version": self.version,
            "terms": {term: list(self.terms[term]) for term in sorted(self.terms)},
        }

    @classmethod
    def from_json(cls, obj: object) -> SearchDocument:
        """Read the JSON form strictly, since it may come from another process."""
        if not isinstance(obj, dict):
            raise ValueError("tool search document must be a JSON object")
        keys = set(obj)
        if keys != {"version", "terms"}:
            unknown = sorted(str(key) for key in keys - {"version", "terms"})
            missing = sorted({"version", "terms"} - keys)
            detail = f"unknown keys {unknown}" if unknown else f"missing keys {missing}"
            raise ValueError(f"tool search document has {detail}")
        version, terms = obj["version"], obj["terms"]
        if not isinstance(terms, dict):
            raise ValueError("tool search document terms must be a JSON object")
        words = sorted(terms)
        rows = list(map(terms.__getitem__, words))
        fields = VERSION_FIELDS.get(version) if type(version) is int else None
        if (
            fields is not None
            and set(map(type, words)) <= _WORD_TYPES
            and set(map(type, rows)) <= _LIST_TYPES
            and set(map(len, rows)) <= {len(fields)}
        ):
            # Exact words and lists of counts, the usual case: checked and converted at C speed,
            # with the same verdicts as the constructor and validate() below.
            counts = list(chain.from_iterable(rows))
            if (
                set(map(type, counts)) <= _COUNT_TYPES
                and min(counts, default=0) >= 0
                and max(counts, default=0) <= MAX_WORD_COUNT
                and "" not in terms
                and all(map(any, rows))
            ):
                tuples = list(map(tuple, rows))
                # Added to the shared table only while it has room for all of them (see
                # _MAX_SHARED_COUNTS); otherwise only the tuples it holds already are shared.
                share = (
                    _COUNTS.setdefault
                    if len(_COUNTS) + len(tuples) <= _MAX_SHARED_COUNTS
                    else _COUNTS.get
                )
                shared = map(share, tuples, tuples)
                counted = dict(zip(map(sys.intern, words), shared, strict=True))
                return cls._counted(counted, version, len(fields))
        converted: dict[str, tuple[int, ...]] = {}
        for term, counts in zip(words, rows, strict=True):
            if (
                not isinstance(term, str)
                or not isinstance(counts, list)
                or not all(type(count) is int for count in counts)
            ):
                raise ValueError(_INVALID_COUNT)
            # Only exact ints are shared: (True,) and (1.0,) would compare equal to (1,).
            converted[sys.intern(term)] = _shared(tuple(counts))
        document = cls(converted, version)
        document.validate()
        return document

    @classmethod
    def _counted(
        cls, terms: dict[str, tuple[int, ...]], version: int, width: int
    ) -> SearchDocument:
        """A document whose counts were checked already (exact non-negative ints, ``width``
        per word, none all zero, of a known version): built without checking them again."""
        document = object.__new__(cls)
        object.__setattr__(document, "terms", terms)
        object.__setattr__(document, "version", version)
        sums = tuple(map(sum, zip(*terms.values(), strict=True)))
        object.__setattr__(document, "lengths", sums or (0,) * width)
        return document

    def __hash__(self) -> int:
        # The generated hash would fail on the dict; documents are values, so hash by content.
        return hash((self.version, frozenset(self.terms.items())))


def search_document(
    tool_id: str,
    title: str,
    description: str,
    parameters: Mapping[str, Any] | None = None,
) -> SearchDocument:
    """The search document of a tool, in the current version: the one function the generator,
    the registry compiler and ``agentgen eval-search`` build documents with."""
    names, texts = parameter_text(parameters or {})
    return SearchDocument.of(
        {
            "name": identifier_words(tool_id),
            "title": text_words(title),
            "description": text_words(description),
            "parameters": [w for name in names for w in identifier_words(name)],
            "parameter_text": [w for text in texts for w in text_words(text)],
        }
    )


#: How deep argument schemas are read for names and text, and how many properties at most.
_MAX_PARAMETER_DEPTH = 4
_MAX_PARAMETERS = 512
#: How many subschemas are read at most: ``$ref``s shared by many branches would otherwise be
#: read once per path (40 branches of 40 branches of 40: 64,000 reads of a 3 KB schema).
_MAX_PARAMETER_VISITS = 4096
#: How many values of one enum, and how much text in all (names, descriptions and enum values),
#: are read: every distinct word is stemmed (about 0.1 ms each), and a registry's schema of
#: 25,000 enum values took 3 s.
_MAX_ENUM_VALUES = 256
_MAX_PARAMETER_TEXT = 32 * 1024


def parameter_text(schema: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The argument names of a payload schema and their text (descriptions, enum values), in
    schema order, nested objects and array items included; local ``$ref``s are followed
    (``#/$defs/...``, draft-07's ``#/definitions/...`` as zod-to-json-schema writes them, any
    ``#/...`` pointer into the schema). The walk is bounded in depth and size, since schemas
    may come from a registry."""
    names: list[str] = []
    texts: list[str] = []
    visits = 0
    text_left = _MAX_PARAMETER_TEXT

    def read(text: str, into: list[str]) -> None:
        nonlocal text_left
        if text_left > 0:
            into.append(text[:text_left])
            text_left -= len(text)

    def resolve(node: Any) -> Any:
        for _ in range(_MAX_PARAMETER_DEPTH):
            ref = node.get("$ref") if isinstance(node, Mapping) else None
            if not isinstance(ref, str) or not ref.startswith("#"):
                break
            try:
                node = resolve_reference(schema, ref)
            except LookupError:
                return {}
        return node

    def walk(node: Any, depth: int) -> None:
        nonlocal visits
        visits += 1
        if visits > _MAX_PARAMETER_VISITS:
            return
        node = resolve(node)
        if not isinstance(node, Mapping) or depth > _MAX_PARAMETER_DEPTH:
            return
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                if len(names) >= _MAX_PARAMETERS:
                    return
                read(str(name), names)
                prop = resolve(sub)
                if isinstance(prop, Mapping):
                    description = prop.get("description")
                    if isinstance(description, str):
                        read(description, texts)
                    values = prop.get("enum")
                    if isinstance(values, list):
                        for value in values[:_MAX_ENUM_VALUES]:
                            if isinstance(value, str | int):
                                read(str(value), texts)
                    walk(prop, depth + 1)
        items = node.get("items")
        if isinstance(items, Mapping):
            walk(items, depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            variants = node.get(key)
            if isinstance(variants, list):
                for variant in variants:
                    walk(variant, depth + 1)

    walk(schema, 0)
    return names, texts


def _shown_count(count: int) -> str:
    """A count for a message: in digits when short (``str`` refuses ints of over 4,300
    digits, and a 400-digit number says no more than its size)."""
    return f"{count:,}" if count.bit_length() <= 64 else f"about 2**{count.bit_length() - 1}"


def _is_int(value: object) -> bool:
    """Tell integers from booleans, which JSON and Python would otherwise mix up."""
    return isinstance(value, int) and not isinstance(value, bool)
