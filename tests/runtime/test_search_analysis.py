"""The versioned word analysis of tool search, pinned on inputs that are easy to get wrong.

Generated documents, compiled registry declarations and run-time queries all go through these
functions; a change to any output here is a new ``SEARCH_VERSION``.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgen.runtime.search import analysis
from agentgen.runtime.search.analysis import (
    SEARCH_VERSION,
    STOP_WORDS,
    identifier_words,
    query_words,
    split_camel,
    stem,
    synonyms,
    text_words,
)


def test_the_version_is_pinned() -> None:
    # Changing the analysis without bumping this would let stale packages rank differently
    # from fresh ones; bumping it makes `agentgen gen --check` flag them. 3: text read in NFKC,
    # every local $ref of an argument schema followed. 4: invisible format characters (the
    # zero-width non-joiner...) removed, combining marks kept in their words.
    assert SEARCH_VERSION == 4


@pytest.mark.parametrize(
    ("run", "parts"),
    [
        ("getHTTPStatus", ["get", "HTTP", "Status"]),
        ("XMLHttpRequest", ["XML", "Http", "Request"]),
        ("listPullRequests", ["list", "Pull", "Requests"]),
        ("iPhone", ["i", "Phone"]),
        ("base64", ["base64"]),
        ("v2", ["v2"]),
        ("utf8Decode", ["utf8", "Decode"]),
        ("HTTP", ["HTTP"]),
        ("lower", ["lower"]),
        ("Title", ["Title"]),
        ("ÉtéChaud", ["Été", "Chaud"]),
        ("", [""]),
    ],
)
def test_camel_case_splitting(run: str, parts: list[str]) -> None:
    assert split_camel(run) == parts


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("gitlab.create_merge_request", ["gitlab", "creat", "merg", "request"]),
        ("k8s.kubectl_get", ["k8s", "kubectl", "get"]),
        ("API-create-a-data-source", ["api", "creat", "data", "sourc"]),
        ("stories-get-by-id", ["stori", "get", "id"]),
        ("getHTTPStatus", ["get", "http", "status"]),
        ("größe.berechnen", ["größe", "berechnen"]),
        ("データ.取得", ["データ", "取得"]),
        ("²³", ["23"]),  # NFKC: superscript digits are digits
        ("re\u0301sume\u0301.parse", ["résumé", "pars"]),  # NFD: one word, as NFC
        ("ＰＤＦ.read", ["pdf", "read"]),  # fullwidth letters are the plain ones
        # A zero-width non-joiner or joiner inside a word is removed, marks stay in it.
        ("فایل.می\u200cخواهم", ["فایل", "میخواهم"]),
        ("हिन्दी.अनुवाद", ["हिन्दी", "अनुवाद"]),
        ("get\u200dUser\u00adName", ["get", "user", "name"]),
        ("...---___", []),
        ("", []),
    ],
)
def test_identifier_words(text: str, words: list[str]) -> None:
    assert identifier_words(text) == words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Creates a new issue in the GitHub repository.", ["creat", "new", "issu", "github",
                                                            "repositori"]),
        ("Lists the 20 most recent runs (2024-07)", ["list", "20", "most", "recent", "run",
                                                      "2024", "07"]),
        ("Café résumé naïve", ["café", "résumé", "naïv"]),
        ("Поиск задач", ["поиск", "задач"]),
        # Persian with and without the zero-width non-joiner, Hindi and Tamil with their vowel
        # signs and viramas, a Sinhala conjunct drawn with a joiner: one word each.
        ("فایل را می\u200cخواهم", ["فایل", "را", "میخواهم"]),
        ("فایل را میخواهم", ["فایل", "را", "میخواهم"]),
        ("हिन्दी में अनुवाद करें", ["हिन्दी", "में", "अनुवाद", "करें"]),
        ("தமிழ் மொழிபெயர்ப்பு", ["தமிழ்", "மொழிபெயர்ப்பு"]),
        ("ශ්\u200dරී ලංකා", ["ශ්රී", "ලංකා"]),
        # Emoji are no words, ZWJ sequences included, and glue nothing to the words around.
        ("Deploy 👩\u200d💻 now🚀\u200dok", ["deploy", "now", "ok"]),
        ("—…‽!?", []),
        ("the and of to", []),
    ],
)  # fmt: skip
def test_text_words(text: str, words: list[str]) -> None:
    # Prose is not split at case changes: "GitHub" in a description stays one word.
    assert text_words(text) == words


def test_stop_words_and_stems() -> None:
    assert {"the", "a", "please", "you", "can"} <= STOP_WORDS
    assert "list" not in STOP_WORDS and "all" not in STOP_WORDS
    assert [stem(w) for w in ("issues", "running", "created", "queries")] == [
        "issu",
        "run",
        "creat",
        "queri",
    ]


def test_snowball_3_stems() -> None:
    # Snowball 2 stemmed these differently ("added" -> "ad"): documents counted by one and
    # queries stemmed by the other would not match.
    assert [stem(w) for w in ("added", "adding", "organization", "paste", "interval")] == [
        "add",
        "add",
        "organiz",
        "paste",
        "interval",
    ]


@pytest.mark.usefixtures("snowball_2_stemmer")
def test_a_stemmer_with_other_stems_is_refused_before_any_word_is_stemmed() -> None:
    with pytest.raises(analysis.StemmerVersionError) as caught:
        analysis._stemmer()
    message = str(caught.value)
    assert "'added' as 'ad' (expected 'add')" in message
    assert "'paste' as 'past' (expected 'paste')" in message
    assert "'organization'" not in message  # only the words it stems otherwise
    assert f"search version {SEARCH_VERSION}" in message
    assert "pip install 'PyStemmer>=3.1,<4'" in message


def test_each_thread_stems_with_its_own_stemmer() -> None:
    # A Snowball stemmer keeps its working buffers in the instance: threads must not share one.
    both_running = threading.Barrier(2)

    def stemmer_of_this_thread(_: int) -> object:
        both_running.wait(timeout=10)  # two live threads, so two different threads
        stemmer = analysis._stemmer()
        assert stemmer is analysis._stemmer()  # kept for the thread
        assert stemmer.stemWord("organizations") == "organiz"
        return stemmer

    with ThreadPoolExecutor(max_workers=2) as pool:
        first, second = pool.map(stemmer_of_this_thread, range(2))
    assert first is not second
    assert analysis._stemmer() not in (first, second)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ('create a page called "Incident review"', ["creat", "page", "call"]),
        ("\u201cIncident review\u201d page", ["page"]),
        ('"only quoted words"', ["onli", "quot", "word"]),
        ("search search SEARCH", ["search"]),
        # An identifier in lowerCamelCase also gives its parts, as tool names are read;
        # product names (GitHub, iPhone) stay whole, as descriptions hold them.
        ("getHTTPStatus", ["gethttpstatus", "get", "http", "status"]),
        ("users.getUser", ["user", "getus", "get"]),
        ("GitHub issues on my iPhone", ["github", "issu", "iphon"]),
        # Typed with or without the zero-width non-joiner, a Persian word is the same word.
        ("می\u200cخواهم", ["میخواهم"]),
        ("میخواهم", ["میخواهم"]),
        ("हिन्दी", ["हिन्दी"]),
        ("", []),
    ],
)
def test_query_words(query: str, words: list[str]) -> None:
    # Quoted text names values, not what a tool does: left out unless nothing else remains.
    assert query_words(query) == words


def test_a_query_is_ranked_by_its_first_words_and_only_those_are_stemmed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Queries come from models: a model's whole output budget of new words (128 KB) took
    # 1.3 s to stem and rank on the event loop every run shares.
    words = [f"word{number}x" for number in range(20_000)]
    stemmed: list[str] = []

    def counting(word: str) -> str:
        stemmed.append(word)
        return stem(word)

    monkeypatch.setattr(analysis, "stem", counting)
    assert query_words(" ".join(words)) == words[: analysis.MAX_QUERY_WORDS]
    assert len(stemmed) == analysis.MAX_QUERY_WORDS
    # Repeats and stop words do not count towards the limit.
    assert query_words("the the search search " * 1000 + "issues") == ["search", "issu"]


def test_synonyms_are_symmetric_and_stemmed() -> None:
    assert "delet" in synonyms("remov") and "remov" in synonyms("delet")
    assert synonyms("creat") == tuple(sorted(synonyms("creat")))
    assert "creat" not in synonyms("creat")
    assert synonyms("unrelatedword") == ()


def test_very_long_text() -> None:
    text = "Creates issues and lists pullRequests. " * 20_000
    words = identifier_words(text)
    assert len(words) == 5 * 20_000
    assert words[:5] == ["creat", "issu", "list", "pull", "request"]
    assert len(text_words(text)) == 4 * 20_000
    single = "a" * 100_000 + "B" * 10
    assert identifier_words(single) == ["a" * 100_000, "b" * 10]


def test_only_words_of_natural_length_have_their_stems_cached() -> None:
    # The stem cache is bounded by entries: a model's long query words were each kept whole.
    long = "running" * 20
    assert len(long) > analysis.MAX_CACHED_WORD
    analysis.stem.cache_clear()
    stemmed = long.removesuffix("running") + "run"  # stemmed all the same
    assert query_words(f"running {long} {long}s") == ["run", stemmed]
    assert text_words(f"{long}s {long}") == [stemmed, stemmed]
    assert analysis.stem.cache_info().currsize == 1  # "running" only
    assert query_words("a" * analysis.MAX_CACHED_WORD) == ["a" * analysis.MAX_CACHED_WORD]
    assert analysis.stem.cache_info().currsize == 2


@given(st.text())
def test_analysis_never_fails_and_is_lower_case(text: str) -> None:
    for words in (identifier_words(text), text_words(text), query_words(text)):
        assert all(word and word == word.lower() for word in words)
        assert not set(words) & STOP_WORDS
