"""How tool search turns text into the words it matches on, one function per kind of text.

The analysis is versioned (:data:`SEARCH_VERSION`): the generator counts words with it when it
writes search documents, consumers compile registry declarations with it, and queries go
through it at run time, so the three always agree. Any change to what a document counts (the
stop words, the stemmer, how text splits into words, which fields there are) is a new version:
generated packages carry the version in their documents, so ``agentgen gen --check`` flags
packages written by another, the runtime refuses to register an agent that defers their
tools (saying to regenerate; eager tools are never ranked), and a registry consumer counts
the words of a declaration published with another version itself. Choices made only when a
query is ranked (the synonyms, the field weights, how idf is weighed, the name coverage) change
rankings, not documents, and need no new version.

Text is first brought to Unicode NFKC, so that the same words match however they were typed: a
decomposed "résumé" (as macOS and PDF copies write it) is one word, as are fullwidth "ＰＤＦ"
and ligatures (a matter of correctness; it changed nothing on the eval set, which holds no
such text). For the same reason, invisible characters that only change how text is drawn
(the zero-width non-joiner and joiner, soft hyphens, direction marks, variation selectors) are
removed, and a word's combining marks (Hindi or Tamil vowel signs and viramas) stay in it: a
Persian word is typed with or without its non-joiner ("می\u200cخواهم", "میخواهم") and is one word
either way, and "हिन्दी" is one word, not the consonants "ह", "न", "द". Words are split as
Unicode's word boundaries (UAX #29) split them there; the zero-width space still separates
words (Thai and Khmer writers put it between them).

Every other choice here was kept because it moved held-out recall on ``bench/search_eval``
(see its README): identifiers split at ``_``, ``.``, ``-`` and camelCase
(free text is not split at case changes: "GitHub" in a description stays one word; a query
word in lowerCamelCase, "listMergeRequests", is read whole and as its parts too), English
stop words dropped, words reduced to their Snowball (Porter 2) stem (Snowball 3's English
rules, checked on first use), and query words expanded with a small set of software synonyms
at a fifth of their weight. Text inside quotes is left out of queries when words remain
outside them: quoted text names values ("a page called "Incident review"") rather than what
the tool does.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

__all__ = [
    "FIELDS",
    "FIELD_B",
    "FIELD_WEIGHTS",
    "K1",
    "MAX_CACHED_WORD",
    "MAX_QUERY_WORDS",
    "SEARCH_VERSION",
    "STEMMER_CHECK",
    "STOP_WORDS",
    "SYNONYM_WEIGHT",
    "StemmerVersionError",
    "check_stemmer",
    "first_distinct",
    "identifier_words",
    "normalized",
    "query_words",
    "split_camel",
    "stem",
    "synonyms",
    "text_words",
    "word_runs",
]

#: The version of the analysis and of the documents it produces. 1 was the spec's plain
#: "<tool ID> <title> <description>" word bag, still available as the ``classic`` ranking;
#: 2 the fields, stems and stop words; 3 reads text in Unicode NFKC and follows every local
#: ``$ref`` of an argument schema (2 split "re\u0301sume\u0301" into "re" and "sume" and
#: read only ``#/$defs/...`` references); 4 removes invisible format characters and keeps
#: combining marks in their words (3 split "می\u200cخواهم" into "می" and "خواهم", and
#: "हिन्दी" into "ह", "न" and "द").
SEARCH_VERSION = 4

#: The fields of a search document, in the order their counts are stored.
FIELDS = ("name", "title", "description", "parameters", "parameter_text")
#: How much a word counts in each field (BM25F); tuned on the tuning half of the eval set.
FIELD_WEIGHTS = (3.0, 1.0, 1.0, 0.5, 0.3)
#: Length normalisation per field (0: none, 1: full), as BM25's ``b``.
FIELD_B = (0.3, 0.3, 0.75, 0.5, 0.75)
#: BM25 term-frequency saturation.
K1 = 1.2
#: The distinct words a query is ranked by, in either ranking: the first ones it holds. Queries
#: come from models (a model's whole output budget, 128 KB of new words, took 1.3 s to stem and
#: rank on the event loop every run shares, and 1.7 s to rank by ``classic``); a search query
#: of more than a few dozen words is not one.
MAX_QUERY_WORDS = 64
#: The weight of a synonym added to a query: the share of its frequency in a tool that counts
#: towards the frequency of the query word it stands in for.
SYNONYM_WEIGHT = 0.2

# Runs of letters and digits (``\w`` without ``_``); the classic tokenizer's rule. Text that
# is not ASCII may hold combining marks, which continue a word (see _marked_run).
_RUN = re.compile(r"[^\W_]+")
# Characters that change how text is drawn, not what it says, removed before words are read:
# Unicode's default-ignorable code points (the zero-width non-joiner and joiner, the soft
# hyphen, direction marks and isolates, the word joiner, the byte order mark, variation
# selectors, tags), which NFKC_Casefold drops as Lucene's ICU normaliser does, except the
# zero-width space, which separates words as a space does (UAX #29 breaks words there; Thai
# and Khmer writers put it between them), and the Hangul fillers, which are letters. Lucene's
# Persian analyser turns the non-joiner into a space instead, which splits "می\u200cخواهم" into
# two words that the word typed without it ("میخواهم") never matches.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u17b4\u17b5\u180b-\u180f\u200c-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufe00-\ufe0f\ufeff\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)
# Quoted values in a query: straight and typographic double quotes.
_QUOTED = re.compile(r'"[^"]*"|\u201c[^\u201d]*\u201d')

#: English function words and the filler of requests ("can you show me..."), which match
#: every tool's description equally and only add noise to a ranking.
STOP_WORDS = frozenset(
    """
    a an the and or of to in for on with by from at as is are be been was were this that these
    those it its into over under than then so such via per if else when which who whom whose
    what where how why not no do does did can could would should will shall may might must i me
    my we our you your he she they them their please want need let lets us
    """.split()  # noqa: SIM905 - a word list reads best as text
)

# Groups of words that name the same action or thing in requests and tool descriptions.
# General software vocabulary, written once; kept small because every synonym also widens
# what a query can match.
_SYNONYM_GROUPS = """
create make new add build insert compose
delete remove drop erase destroy trash purge
update edit change modify rename patch alter adjust
get fetch retrieve read view display detail details info inspect describe
list enumerate browse
search find lookup query locate
send post notify
issue ticket bug task story
pr pull merge request mr review
repository repo
comment note reply remark
run execute exec trigger launch invoke
copy duplicate clone
close stop end terminate finish kill
chart plot graph diagram visualization visualize
folder directory dir
user member person people account
calendar event meeting appointment schedule
alert alarm notification
image picture photo screenshot
page webpage site website url
email mail message inbox
price cost
metric measurement stat statistics
deploy deployment release rollout
error exception failure crash
permission access role
upload attach
download export
move relocate transfer
spreadsheet sheet worksheet workbook
sprint iteration
summary overview
click press tap
coordinates latitude longitude geocode lat lng
"""


#: Words whose Snowball stems changed between Snowball 2 and 3 (and a few that never did), with
#: the stems this search version counts. Documents are counted where a package is generated and
#: queries stemmed where it runs: a stemmer giving other stems on either machine would make
#: "adding" (``ad`` in Snowball 2) miss documents that count ``add``, silently.
STEMMER_CHECK = MappingProxyType(
    {
        "added": "add",
        "adding": "add",
        "internal": "internal",
        "interval": "interval",
        "organization": "organiz",
        "organize": "organiz",
        "paste": "paste",
        "issues": "issu",
        "running": "run",
        "generously": "generous",
    }
)


class StemmerVersionError(RuntimeError):
    """The installed stemmer does not give the stems this search version was counted with."""


#: Each thread's stemmer: a Snowball stemmer keeps its working buffers in the instance, so one
#: shared between threads (the registry compiles registrations in a worker thread, the
#: generator may run in one) could hand out another word's stem.
_local = threading.local()


def _stemmer() -> Any:
    """This thread's stemmer, made on its first use there (see :func:`_new_stemmer`)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = _new_stemmer()
    return stemmer


def check_stemmer() -> None:
    """Raise :class:`StemmerVersionError` now if the installed stemmer gives other stems than
    this search version counts with: the runtime asks when an agent that searches tools is
    registered, so a misconfigured environment fails before any run rather than at a model's
    first tool search, mid-run."""
    _stemmer()


def _new_stemmer() -> Any:
    """An English Snowball stemmer (PyStemmer, the Snowball project's C binding), checked
    against :data:`STEMMER_CHECK` before it stems any word."""
    import Stemmer  # type: ignore[import-not-found]

    stemmer = Stemmer.Stemmer("english")
    wrong = {
        word: stemmer.stemWord(word)
        for word, expected in STEMMER_CHECK.items()
        if stemmer.stemWord(word) != expected
    }
    if wrong:
        found = ", ".join(
            f"{word!r} as {got!r} (expected {STEMMER_CHECK[word]!r})" for word, got in wrong.items()
        )
        raise StemmerVersionError(
            f"the installed stemmer (PyStemmer {Stemmer.version()}, {Stemmer.__file__}) stems "
            f"{found}: search version {SEARCH_VERSION} counts Snowball 3 stems, so documents and "
            "queries would not match. Install the version agentgen depends on: "
            "pip install 'PyStemmer>=3.1,<4'"
        )
    return stemmer


#: Words up to this length have their stems cached. The cache is bounded by entries, and
#: queries come from models: 65,536 distinct words of 128 KB each would have held 8 GiB. No
#: natural word is this long, and a longer one is stemmed each time (in time linear in it; a
#: query ranks at most MAX_QUERY_WORDS words).
MAX_CACHED_WORD = 64


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of a lower-case word; digits and non-Latin words are
    returned as they are by the stemmer. Cached: call it with words up to
    :data:`MAX_CACHED_WORD` characters (:func:`_stemmed` does)."""
    result: str = _stemmer().stemWord(word)
    return result


def _stemmed(word: str) -> str:
    """:func:`stem`, leaving words longer than :data:`MAX_CACHED_WORD` out of its cache."""
    if len(word) <= MAX_CACHED_WORD:
        return stem(word)
    result: str = _stemmer().stemWord(word)
    return result


def split_camel(run: str) -> list[str]:
    """Split an identifier's letter-and-digit run at case changes: ``getHTTPStatus`` →
    ``get``, ``HTTP``, ``Status``; ``base64`` and ``v2`` stay whole."""
    if run.islower() or run.isupper() or not any(c.isupper() for c in run[1:]):
        return [run]
    parts: list[str] = []
    start = 0
    for index in range(1, len(run)):
        before, char = run[index - 1], run[index]
        after = run[index + 1] if index + 1 < len(run) else ""
        lower_to_upper = (before.islower() or before.isdigit()) and char.isupper()
        acronym_end = before.isupper() and char.isupper() and after.islower()
        if lower_to_upper or acronym_end:
            parts.append(run[start:index])
            start = index
    parts.append(run[start:])
    return parts


def _words(runs: Iterable[str]) -> Iterator[str]:
    for run in runs:
        word = run.lower()
        if word not in STOP_WORDS:
            yield _stemmed(word)


def normalized(text: str) -> str:
    """Text in Unicode NFKC without its invisible format characters, the form every word is
    read in. A decomposed (NFD) "résumé" is the composed one, which a query is typed as; NFKC
    also reads fullwidth letters and ligatures as the plain ones ("ＰＤＦ" as "PDF", "ﬁle" as
    "file") and superscript digits as digits. The zero-width non-joiner and joiner, soft
    hyphens, direction marks and variation selectors (:data:`_INVISIBLE`) are removed: a
    Persian word written with its non-joiner ("می\u200cخواهم", as Persian keyboards type it) and
    without ("میخواهم", as others do) are the same word, as "infor\u00admation" (hyphenated
    for display) is "information". ASCII text is already in this form, which spares the usual
    identifier and query the work."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))


def word_runs(text: str) -> list[str]:
    """The words of normalised text (:func:`normalized`), as written: runs of letters and
    digits (a ``_`` or any other character splits them) with the combining marks that follow
    them. Python's ``\\w`` holds no marks, and without them "हिन्दी" (whose vowel
    signs and virama are marks) was the consonants "ह", "न", "द", which match any word with
    those consonants. Enclosing marks (the keycap of "1\u20e3") decorate a symbol rather
    than spell a word, and are not kept."""
    if text.isascii():
        return _RUN.findall(text)
    return _marked_run(text).findall(text.replace("_", " "))


def _word_runs_lazily(text: str) -> Iterator[str]:
    """:func:`word_runs`, found as they are taken (a query reads only its first words)."""
    if text.isascii():
        matches = _RUN.finditer(text)
    else:
        matches = _marked_run(text).finditer(text.replace("_", " "))
    return (match.group() for match in matches)


def _marked_run(text: str) -> re.Pattern[str]:
    """The pattern of the runs of ``text`` once its ``_`` are spaces (:func:`_mark_patterns`):
    with the marks beyond the Basic Multilingual Plane only when it holds characters there."""
    plain, every, beyond = _mark_patterns()
    return every if beyond.search(text) else plain


@cache
def _mark_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Runs of letters and digits continued by the combining marks (categories Mn and Mc)
    that follow them, as UAX #29 keeps them in words, in text whose ``_`` were made spaces:
    with the marks of the Basic Multilingual Plane, with every mark, and the characters
    beyond that plane up to its last mark. The marks are those of the Python running here,
    as ``\\w``'s letters are (found on first use, reading 130,000 code points: 20 ms); beyond
    U+20000 there are only the variation selectors, which :func:`normalized` removed.

    The plane's marks make one table that the regular expression engine reads in one step;
    the hundred ranges of marks beyond it (historic scripts) are tried one by one, which
    doubled the time words were found in, so only text holding a character among them (not
    emoji, which come after) is read with them."""
    category = unicodedata.category
    marks = [code for code in range(0x0300, 0x20000) if category(chr(code)) in ("Mn", "Mc")]
    plain = [code for code in marks if code <= 0xFFFF]

    def runs(codes: list[int]) -> re.Pattern[str]:
        ranges: list[str] = []
        start = previous = codes[0]
        for code in [*codes[1:], -1]:
            if code != previous + 1:
                ranges.append(chr(start) if start == previous else f"{chr(start)}-{chr(previous)}")
                start = code
            previous = code
        return re.compile(f"[^\\W_][\\w{''.join(ranges)}]*")

    beyond = re.compile(f"[\U00010000-{chr(max(marks[-1], 0x10000))}]")
    return runs(plain), runs(marks), beyond


def identifier_words(text: str) -> list[str]:
    """Words of identifiers (tool IDs, argument names): split at every character that is not a
    letter or digit (or a mark following one, :func:`word_runs`) and at camelCase boundaries,
    stop words dropped, stemmed."""
    runs = word_runs(normalized(text))
    return list(_words(part for run in runs for part in split_camel(run)))


def text_words(text: str) -> list[str]:
    """Words of prose (titles, descriptions): split at every character that is not a letter
    or digit (or a mark following one, :func:`word_runs`), stop words dropped, stemmed."""
    return list(_words(word_runs(normalized(text))))


def query_words(query: str) -> list[str]:
    """The distinct words of a query, in order, at most :data:`MAX_QUERY_WORDS` of them (the
    first): quoted values left out when words remain outside the quotes."""
    query = normalized(query)
    unquoted = _QUOTED.sub(" ", query)
    return _first_words(unquoted) or _first_words(query)


def _first_words(text: str) -> list[str]:
    """The first :data:`MAX_QUERY_WORDS` distinct words of prose, stemming no more than it
    keeps (and the repeats among them): the words are made as they are taken."""
    runs = (word for run in _word_runs_lazily(text) for word in _query_run(run))
    return first_distinct(_stemmed(word) for word in runs if word not in STOP_WORDS)


def _query_run(run: str) -> list[str]:
    """A query's letter-and-digit run, lowercased; an identifier written in camelCase
    (``getUser``, as a model searching for a tool it saw named may write) also gives its
    parts, which is how tool names are read (:func:`identifier_words`), after the whole word,
    which is how descriptions are read."""
    word = run.lower()
    if not run[0].islower() or word == run:
        return [word]
    parts = split_camel(run)
    if len(parts) < 2 or len(parts[0]) < 2:
        return [word]
    return [word, *(part.lower() for part in parts)]


def first_distinct(words: Iterable[str]) -> list[str]:
    """The first :data:`MAX_QUERY_WORDS` distinct words, in order, reading no further: what
    every ranking ranks a query by, however long the query a model wrote."""
    found: dict[str, None] = {}
    for word in words:
        found[word] = None
        if len(found) >= MAX_QUERY_WORDS:
            break
    return list(found)


@cache
def _synonym_table() -> Mapping[str, tuple[str, ...]]:
    """The synonym groups by stemmed word (stemmed on first use, see :func:`_stemmer`)."""
    table: dict[str, set[str]] = {}
    for line in _SYNONYM_GROUPS.strip().splitlines():
        group = [stem(word) for word in line.split()]
        for word in group:
            table.setdefault(word, set()).update(other for other in group if other != word)
    return MappingProxyType({word: tuple(sorted(others)) for word, others in table.items()})


def synonyms(word: str) -> tuple[str, ...]:
    """The (stemmed) synonyms of a stemmed query word, sorted."""
    return _synonym_table().get(word, ())
