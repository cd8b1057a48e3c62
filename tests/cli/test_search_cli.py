"""``agentgen search``: the ranking an adapter's tool search would return, explained."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentgen.codegen.cli import main

RECORDS = str(Path(__file__).resolve().parents[2] / "examples/records/design.py")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["search", *args])
    return result.exit_code, result.stdout, result.stderr


def test_ranking_with_scores_and_term_contributions() -> None:
    code, out, _ = run(RECORDS, "--agent", "assistant.assistant", "analyze records")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "agent assistant.assistant: 2 deferred tools; query 'analyze records' → words: analyz, "
        "record"
    )
    assert lines[1].split()[:2] == ["1.", "records.analyze"]
    # Each word's contribution, split by the fields of the tool it came from.
    assert (
        "analyz 1.338 = name 0.757, title 0.252, description 0.252, parameter_text 0.076"
        in (lines[1])
    )
    # The idf, ln 2 for a word one of two tools uses, raised to IDF_EXPONENT (0.8).
    assert "(tf 4, idf 0.746)" in lines[1]
    # The query spells out the whole of analyze's name: its score is raised by NAME_COVERAGE.
    assert "[100% of its name used, ×1.150; analyz" in lines[1]
    assert "records.search" in lines[2] and "of its name used" not in lines[2]
    assert lines[2].split()[:2] == ["2.", "records.search"]
    assert len(lines) == 3


def test_classic_ranking_and_synonyms() -> None:
    code, out, _ = run(
        RECORDS, "--agent", "assistant.assistant", "analyze records", "--ranking", "classic"
    )
    assert code == 0
    assert "→ words: analyze, records" in out
    assert "analyze 1.089 (tf 3, idf 0.693)" in out
    code, out, _ = run(RECORDS, "--agent", "assistant.assistant", "find the records")
    assert code == 0
    assert "→ words: find, record (+ synonyms: locat, lookup, queri, search)" in out
    assert "search 0." in out and "(synonym of find, weight 0.2)" in out


def test_exact_provider_name_comes_first() -> None:
    code, out, _ = run(RECORDS, "--agent", "assistant", "records_analyze")
    assert code == 0
    assert "1. records.analyze" in out and "exact name" in out.splitlines()[1]


def test_a_query_naming_an_immediate_tool_says_search_never_returns_it() -> None:
    # records.lookup is immediate for the assistant: a user checking that it is findable got a
    # ranking without it and no word why.
    for named in ("records.lookup", "records_lookup"):
        code, out, _ = run(RECORDS, "--agent", "assistant", named)
        assert code == 0
        assert out.splitlines()[1] == (
            "  (records.lookup, which the query names, is immediate: the model sees it in every "
            "request, so search never returns it)"
        )
    code, out, _ = run(RECORDS, "--agent", "assistant", "look up a record")
    assert code == 0 and "is immediate" not in out


COMPANY = str(Path(__file__).resolve().parents[2] / "examples/company/design.py")


def test_eager_agents_and_unmatched_queries() -> None:
    # An agent with every tool up front has nothing to search, which is not "no match".
    code, out, _ = run(RECORDS, "--agent", "clerk", "records")
    assert code == 0 and "0 deferred tools" in out and "no tool matches" not in out
    assert "nothing to search: every compiled tool of the agent is loaded up front" in out
    assert 'Use(Toolset, lambda: Deferred("tool"))' in out
    code, out, _ = run(RECORDS, "--agent", "assistant", "weather in tokyo")
    assert code == 0 and "no tool matches" in out


def test_an_agent_of_registry_tools_only_has_no_compiled_tools_to_search() -> None:
    code, out, _ = run(COMPANY, "--agent", "reader", "find a customer")
    assert code == 0
    assert out.splitlines()[1:] == [
        "  (registry sources are resolved at run time and are not searched here)",
        "  nothing to search: the agent has no compiled tools",
    ]


def test_empty_queries_are_refused_and_stop_words_alone_explained() -> None:
    for query in ("", "   "):
        code, _, err = run(RECORDS, "--agent", "assistant", query)
        assert code == 2 and "Traceback" not in err
        assert "QUERY is empty: give the words a model would search with" in err
    code, out, _ = run(RECORDS, "--agent", "assistant", "the of, and?")
    assert code == 0 and "→ words: (none)" in out
    assert "nothing to search by: the query has no words left once stop words" in out
    assert "no tool matches" not in out


def test_unicode_and_very_long_queries() -> None:
    code, out, _ = run(RECORDS, "--agent", "assistant", "analyser les données 🙂")
    assert code == 0 and "'analyser les données 🙂' → words: analys, les, donné" in out
    code, out, _ = run(RECORDS, "--agent", "assistant", "analyze records " * 2000)
    assert code == 0
    header, first = out.splitlines()[:2]
    # The query is shown cut to 100 characters; the ranking is the whole query's.
    assert "query 'analyze records analyze" in header and "…' → words: analyz, record" in header
    assert len(header) < 200
    assert first.split()[:2] == ["1.", "records.analyze"]


def test_agent_selection_errors() -> None:
    code, _, err = run(RECORDS, "records")
    assert code == 2 and "pick one with --agent (assistant.assistant, assistant.clerk)" in err
    code, _, err = run(RECORDS, "--agent", "nobody", "records")
    assert code == 2 and "the design has no agent 'nobody'" in err


def test_limit_must_be_positive() -> None:
    for value in ("0", "-3"):
        code, _, err = run(RECORDS, "--agent", "assistant", "records", "--limit", value)
        assert code == 2 and "Traceback" not in err
        assert "Invalid value for '--limit'" in err and ">=1" in err
    code, out, _ = run(RECORDS, "--agent", "assistant", "records", "--limit", "1")
    assert code == 0 and len(out.splitlines()) == 2


def test_help_names_the_search_it_models() -> None:
    result = CliRunner().invoke(main, ["search", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "fields: BM25F over ID, title, description and arguments" in text
    assert "classic: the spec's plain BM25" in text
    assert "the ranking the OpenAI Responses adapter's client-side tool search uses" in text
    assert "Claude (the Anthropic Messages adapter) uses Anthropic's hosted regex search" in text


def test_a_ranked_tool_the_policy_hides_is_marked(tmp_path: Path) -> None:
    design = tmp_path / "design.py"
    design.write_text(
        """
from agentgen.dsl import AllowTags, Agent, Deferred, RunPolicy, Service, Tags, Tool, Toolset, Use

with Toolset("tickets") as Tickets:
    Tool("search", "Search tickets.", lambda: Tags("read"))
    Tool("purge", "Purge old tickets.", lambda: Tags("admin"))

with Service("svc"):
    with Agent("a", "A."):
        Use(Tickets, Deferred)
        RunPolicy(lambda: AllowTags("read"))
"""
    )
    code, out, _ = run(str(design), "tickets")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("agent svc.a: 2 deferred tools, 1 of them hidden by the agent's")
    # The ranking is what the adapter searches: the tools the policy lets through.
    assert lines[1].split()[:2] == ["1.", "tickets.search"]
    assert lines[2].split()[:2] == ["-", "tickets.purge"]
    assert "the agent's run policy hides it: the model never sees it" in lines[2]
    assert len(lines) == 3


def test_every_matching_tool_the_policy_hides_is_listed_past_the_limit(tmp_path: Path) -> None:
    # Hidden tools were listed only when the ranking of every tool put them within --limit:
    # here the visible tool is the best, and no hidden one was listed at --limit 1.
    design = tmp_path / "design.py"
    design.write_text(
        """
from agentgen.dsl import AllowTags, Agent, Deferred, RunPolicy, Service, Tags, Tool, Toolset, Use

with Toolset("tickets") as Tickets:
    Tool("search", "Search tickets by ticket text or ticket tags.", lambda: Tags("read"))
    Tool("purge", "Purge old tickets.", lambda: Tags("admin"))
    Tool("close", "Close tickets.", lambda: Tags("admin"))
    Tool("archive", "Archive tickets.", lambda: Tags("admin"))

with Service("svc"):
    with Agent("a", "A."):
        Use(Tickets, Deferred)
        RunPolicy(lambda: AllowTags("read"))
"""
    )
    code, out, _ = run(str(design), "tickets", "--limit", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split()[:2] == ["1.", "tickets.search"]
    assert lines[2].split()[:2] == ["-", "tickets.archive"]  # the first of three: equal scores
    assert lines[3] == "  -  and 2 more tools the policy hides match"
    assert len(lines) == 4
    code, out, _ = run(str(design), "tickets", "--limit", "5")
    hidden = [line.split()[1] for line in out.splitlines()[2:]]
    assert hidden == ["tickets.archive", "tickets.close", "tickets.purge"]


def test_a_design_without_agents_says_so(tmp_path: Path) -> None:
    design = tmp_path / "empty.py"
    design.write_text(
        'from agentgen.dsl import Tool, Toolset\n\nToolset("t", lambda: Tool("x", "X."))\n'
    )
    code, _, err = run(str(design), "x")
    assert code == 2
    assert "several agents" not in err
    assert "the design has no agents: search ranks the deferred tools of an agent" in err
