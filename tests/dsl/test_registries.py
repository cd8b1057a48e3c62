"""SPEC C: registries and dynamic catalogs in the DSL."""

from __future__ import annotations

import pytest

from agentgen.codegen.diagnostics import excerpt
from agentgen.dsl.durations import parse_duration
from agentgen.dsl.expr import RegistryExpr, RegistrySource, ToolsetExpr
from agentgen.dsl.registries import MAX_BACKOFF_S, MAX_RETRIES
from agentgen.runtime.registry import client_options
from tests.conftest import DesignRunner, format_errors

COMPANY = """
Company = Registry("company", lambda: URL("https://registry.example"))
Records = Toolset(FromRegistry(Company, "records"))
"""


def test_c1_registry_with_url_description_timeouts_and_retry(designs: DesignRunner) -> None:
    root = designs.load(
        """
with Registry("company") as Company:
    URL("https://registry.example:8443/catalog")
    Description("The company catalog.")
    Timeout("1m30s")
    SyncInterval(10)
    CacheTTL("250ms")
    Retry(3, "100ms", "2s")
"""
    )
    (registry,) = root.registries
    assert registry.url == "https://registry.example:8443/catalog"
    assert registry.description == "The company catalog."
    assert (registry.timeout, registry.sync_interval, registry.cache_ttl) == (90.0, 10.0, 0.25)
    assert registry.retry is not None
    assert (registry.retry.max_retries, registry.retry.backoff_base) == (3, 0.1)
    assert registry.retry.backoff_max == 2.0
    assert registry.api_version == "v1"


def test_c1_url_is_required_and_must_parse(designs: DesignRunner) -> None:
    designs.check(
        """
Missing = Registry("missing")  # <-
Broken = Registry("broken", lambda: URL("registry.example"))  # <-
BadPort = Registry("bad_port", lambda: URL("https://registry.example:99999"))  # <-
""",
        'registry "missing": registry URL is required; set it with URL("https://...")',
        'registry "broken": invalid registry URL "registry.example"',
        'invalid registry URL "https://registry.example:99999"',
    )


def test_a_password_in_a_registry_url_is_refused_without_being_repeated(
    designs: DesignRunner,
) -> None:
    # Generated packages are committed: a password in the URL would be committed with them.
    errors = designs.check(
        """
Secret = Registry("secret", lambda: URL("https://ops:hunter2-secret@registry.example/v1"))  # <-
Named = Registry("named", lambda: URL("https://ops@registry.example"))
""",
        'registry "secret": registry URL "https://ops:***@registry.example/v1" carries a '
        "password, which would be written into the generated packages you commit",
    )
    assert "hunter2" not in format_errors(errors)


def test_a_registry_url_with_a_query_or_fragment_is_refused(designs: DesignRunner) -> None:
    # The registry client appends the API path to the URL: after "?token=..." or "#..." it
    # would land in the query or the fragment, and every request would reach the base path.
    errors = designs.check(
        """
Query = Registry("query", lambda: URL("https://registry.example/base?token=s3cret"))  # <-
Fragment = Registry("fragment", lambda: URL("https://registry.example#top"))  # <-
Empty = Registry("empty", lambda: URL("https://registry.example/?"))  # <-
Plain = Registry("plain", lambda: URL("https://registry.example/base/"))
""",
        'registry "query": registry URL "https://registry.example/base" is followed by a query '
        "or a fragment (?... or #...): clients append the API path to the URL",
        'registry "fragment": registry URL "https://registry.example" is followed by a query',
        'registry "empty": registry URL "https://registry.example/" is followed by a query',
    )
    assert "s3cret" not in format_errors(errors)


def test_c1_settings_must_be_non_negative_and_parse(designs: DesignRunner) -> None:
    designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    Timeout(-1)  # <-
    SyncInterval("soon")  # <-
    Retry(-2)  # <-
    Retry(1, "5s", "1s")  # <- <-
    CacheTTL(10**400)  # <-
with Registry("other"):
    URL("https://other.example")
    Retry(3, "5s", 0)  # <-
""",
        "Timeout must be a positive, finite duration, got -1",
        'SyncInterval invalid duration "soon"',
        "Retry max_retries must be non-negative, got -2",
        'Retry is already set for registry "company" (line 7); keep one',
        "Retry backoff_base (5s) must not exceed backoff_max (1s)",
        # An int beyond any float is a design error, not an OverflowError out of the design.
        "CacheTTL is too long: the number exceeds any float",
        # A zero ceiling was exempt: the client then retried without ever waiting.
        "Retry backoff_base (5s) must not exceed backoff_max (0s)",
    )


def test_c1_a_setting_given_twice_names_the_first(designs: DesignRunner) -> None:
    # The last one used to win silently (a Timeout of 1 s overridden further down by 30 s).
    designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    APIVersion("v1")
    Timeout("1s")
    SyncInterval("1m")
    CacheTTL("5m")
    Retry(2)
    APIVersion("v2")  # <-
    Timeout("30s")  # <-
    SyncInterval("2m")  # <-
    CacheTTL("10m")  # <-
    Retry(5)  # <-
""",
        'APIVersion is already set for registry "company" (line 5); keep one',
        'Timeout is already set for registry "company" (line 6); keep one',
        'SyncInterval is already set for registry "company" (line 7); keep one',
        'CacheTTL is already set for registry "company" (line 8); keep one',
        'Retry is already set for registry "company" (line 9); keep one',
    )


def test_retry_reports_every_problem_of_the_call(designs: DesignRunner) -> None:
    # Retry stopped at its first problem: a negative count hid a base above the ceiling (it was
    # only checked on a Retry that was otherwise valid), and a bad repeat hid that it repeated.
    designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(-1, "5s", "1s")  # <- <-
    Retry("x", "bad", 0)  # <- <- <-
    Timeout(0)  # <-
    Timeout("1s")  # <-
Retry(1, "5s", "1s")  # <- <-
""",
        "Retry max_retries must be non-negative, got -1",
        "Retry backoff_base (5s) must not exceed backoff_max (1s)",
        'Retry is already set for registry "company" (line 5); keep one',
        "Retry max_retries must be an integer, got str",
        'Retry backoff_base invalid duration "bad"',
        "Timeout must be a positive, finite duration, got 0",
        'Timeout is already set for registry "company" (line 7); keep one',
        "Retry is not valid at the top level of the design; it belongs inside a Registry body",
        "Retry backoff_base (5s) must not exceed backoff_max (1s)",
    )


def test_retry_count_is_bounded(designs: DesignRunner) -> None:
    # Retry(10**9, ...) was accepted and generated: a provider or a command retried an outage
    # of its registry for ever instead of failing.
    root = designs.load(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(100, "5s", "5s")
"""
    )
    retry = root.registries[0].retry
    assert retry is not None and retry.max_retries == MAX_RETRIES == 100
    designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(10**9, "5s", "5s")  # <-
with Registry("other"):
    URL("https://other.example")
    Retry(101)  # <-
""",
        "Retry max_retries must be at most 100, got 1000000000: each retry is another request "
        "and another wait of up to backoff_max, so an outage would hold the request instead of "
        "failing it; give 100 or fewer (a longer backoff_max rides out a longer outage)",
        "Retry max_retries must be at most 100, got 101",
    )


def test_retry_backoff_is_bounded_as_the_runtime_bounds_it(designs: DesignRunner) -> None:
    # Retry(100, "1h", "24h") was accepted and generated: a provider or a command waited up to
    # a day between retries, for days in all. The runtime's RetryPolicy refuses the same.
    assert MAX_BACKOFF_S == client_options.MAX_BACKOFF_S == 60.0
    assert MAX_RETRIES == client_options.MAX_RETRIES == 100
    root = designs.load(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(100, "1m", "1m")
"""
    )
    retry = root.registries[0].retry
    assert retry is not None and retry.backoff_base == retry.backoff_max == 60.0
    designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(100, "1h", "24h")  # <- <-
with Registry("other"):
    URL("https://other.example")
    Retry(3, 1, "1m0.001s")  # <-
""",
        "Retry backoff_base must be at most 60s, got 3600s: a longer wait between retries holds "
        "a provider or a command through an outage instead of failing it; give 60s or less "
        "(more retries ride out a longer outage)",
        "Retry backoff_max must be at most 60s, got 86400s",
        "Retry backoff_max must be at most 60s, got 60.001s",
    )


def test_c1_settings_must_be_finite_and_a_timeout_positive(designs: DesignRunner) -> None:
    # Generated registries.py spelled these as `timeout=nan`, `cache_ttl=inf`: names that do not
    # exist, so the generated package failed on import.
    designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    Timeout(float("nan"))  # <-
    SyncInterval(float("inf"))  # <-
    CacheTTL("%ss")  # <-
    Retry(1, 0.1, float("inf"))  # <-
with Registry("zero"):
    URL("https://zero.example")
    Timeout(0)  # <-
    CacheTTL(0)
"""
        % ("9" * 400),
        "Timeout must be a positive, finite duration, got nan",
        "SyncInterval must be a finite duration, got inf",
        "CacheTTL must be a finite duration, got",
        "Retry backoff_max must be a finite duration, got inf",
        "Timeout must be a positive, finite duration, got 0",
    )


def test_c1_a_duration_under_one_millisecond_is_refused(designs: DesignRunner) -> None:
    # Timeout("0.0000001ms") was accepted (it is positive), yet counted in whole milliseconds
    # (the registry's wire and stores, Temporal's timers) it is zero: every request failed.
    errors = designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    Timeout("0.0000001ms")  # <-
    SyncInterval("0.5ms")  # <-
    CacheTTL(0.0009)  # <-
    Retry(1, timedelta(microseconds=10), "1s")  # <-
with Registry("edge"):
    URL("https://edge.example")
    Timeout("1ms")
    SyncInterval(0)
    CacheTTL("0.1ms0.9ms")
    Retry(1, 0, "1ms")
""".replace("with Registry", "from datetime import timedelta\nwith Registry", 1),
        "Timeout must be at least 1ms (timers and the registry count whole milliseconds), got "
        '"0.0000001ms"; give the time allowed, or leave the setting out',
        "SyncInterval must be 0 or at least 1ms (timers and the registry count whole "
        'milliseconds), got "0.5ms"',
        "CacheTTL must be 0 or at least 1ms",
        "Retry backoff_base must be 0 or at least 1ms",
    )
    assert all(":" in e.format() for e in errors)


def test_c2_from_registry_toolset_name_derived_or_given(designs: DesignRunner) -> None:
    root = designs.load(
        COMPANY + 'Named = Toolset("company_records", FromRegistry(Company, "records"))\n'
    )
    records, named = root.toolsets
    assert records.name == "records" and named.name == "company_records"
    assert isinstance(records.source, RegistrySource) and isinstance(named.source, RegistrySource)
    assert records.source.toolset == named.source.toolset == "records"
    assert records.source.registry is root.registries[0]


def test_c2_from_registry_rejects_none_and_empty_names(designs: DesignRunner) -> None:
    designs.check(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
A = Toolset(FromRegistry(None, "records"))  # <-
B = Toolset(FromRegistry(Company, ""))  # <-
C = Toolset(FromRegistry("company", "records"))  # <-
""",
        "FromRegistry requires a Registry(...) expression, got None",
        "FromRegistry requires a non-empty toolset name",
        "FromRegistry requires a Registry(...) expression, got str; pass the value Registry(...) "
        'returned, not its name: Company = Registry("company", ...), then '
        "FromRegistry(Company, ...)",
    )


def test_c3_whole_registry_use_creates_no_toolset(designs: DesignRunner) -> None:
    root = designs.load(
        COMPANY
        + """
with Service("assistant"):
    Agent("generalist", "Use the company catalog.", lambda: Use(Company, lambda: Deferred()))
    Agent("eager", "Use the company catalog.", lambda: Use(Company))
"""
    )
    generalist, eager = root.agents()
    (use,) = generalist.uses
    assert isinstance(use.target, RegistryExpr) and use.defers_all
    assert not eager.uses[0].defers_all
    assert [t.name for t in root.toolsets] == ["records"]


def test_c4_version_pins_that_consumer_only(designs: DesignRunner) -> None:
    root = designs.load(
        COMPANY
        + """
with Service("assistant"):
    Agent("pinned", "Read records.", lambda: Use(Records, lambda: Version("1.2.3")))
    Agent("floating", "Read records.", lambda: Use(Records))
"""
    )
    pinned, floating = root.agents()
    assert pinned.uses[0].version is not None and pinned.uses[0].version.version == "1.2.3"
    assert floating.uses[0].version is None
    assert pinned.uses[0].target is floating.uses[0].target is root.toolsets[0]
    target = pinned.uses[0].target
    assert isinstance(target, ToolsetExpr) and isinstance(target.source, RegistrySource)
    assert target.source.registry is root.registries[0]


def test_c4_version_rejected_outside_registry_toolset_use(designs: DesignRunner) -> None:
    designs.check(
        COMPANY
        + """
Local = Toolset("local", lambda: Tool("ping", "Check the service."))
Pinned = Toolset("pinned", FromRegistry(Company, "pinned"), lambda: Version("1.0"))  # <-
with Service("assistant"):
    with Agent("a", "Reads."):
        Use(Local, lambda: Version("1.0"))  # <-
        Use(Records, lambda: (Version("1.0"), Version("2.0")))  # <-
    Agent("c", "Reads.", lambda: Use(Company, lambda: Version("1.0")))  # <-
    Agent("b", "Reads.", lambda: Use(Records, lambda: Version(" 1.0")))  # <-
""",
        "Version belongs inside the consuming Use(...) of this toolset: it pins that consumer only",
        "Version is only valid for FromRegistry toolsets",
        "Version is already set for Use(records)",
        "a whole registry cannot be pinned",
        "Version must be a non-empty string without surrounding spaces",
    )


def test_a_url_or_version_given_twice_is_a_repeat_even_when_the_first_was_refused(
    designs: DesignRunner,
) -> None:
    # A refused first URL (or Version pin) left no trace, so the second was taken without a
    # word: the repeat came out only once the first was fixed, in another run.
    designs.check(
        """
with Registry("company") as Company:
    URL("")  # <-
    URL("https://registry.example")  # <-
with Registry("other"):
    URL("https://other.example")
    URL("https://other.example")  # <-
Records = Toolset(FromRegistry(Company, "records"))
with Service("assistant"):
    Agent("a", "Reads.", lambda: Use(Records, lambda: (Version(" 1.0"), Version("2.0"))))  # <- <-
    Agent("b", "Reads.", lambda: Use(Records, lambda: (Version("1.0"), Version(""))))  # <- <-
""",
        "URL url cannot be empty",
        'URL is already set for registry "company" (line 4); keep one',
        'URL is already set for registry "other" (line 7); keep one',
        "Version must be a non-empty string without surrounding spaces, got ' 1.0'",
        "Version is already set for Use(records) (line 11)",
        "Version is already set for Use(records) (line 12)",
        "Version must be a non-empty string without surrounding spaces, got ''",
    )


def test_c5_same_registry_twice_and_overlaps(designs: DesignRunner) -> None:
    designs.check(
        COMPANY
        + """
Again = Toolset("again", FromRegistry(Company, "records"))
with Service("assistant"):
    with Agent("twice", "Reads."):
        Use(Company)
        Use(Company, Deferred)  # <-
    with Agent("overlap", "Reads."):
        Use(Company)
        Use(Records)  # <-
    with Agent("overlap_reverse", "Reads."):
        Use(Records)
        Use(Company)  # <-
    with Agent("same_toolset", "Reads."):
        Use(Records)
        Use(Records)  # <-
    with Agent("same_source", "Reads."):
        Use(Records)
        Use(Again)  # <-
""",
        'agent "twice" consumes registry "company" more than once (first at line',
        'registry toolset "records" overlaps whole registry "company" consumed at line',
        'whole registry "company" overlaps its toolset "records" already used at line',
        'agent "same_toolset" uses toolset "records" more than once',
        'uses registry toolset "records" of registry "company" more than once',
    )


def test_c5_a_published_toolset_overlaps_the_registry_it_is_published_to(
    designs: DesignRunner,
) -> None:
    """Once the provider publishes, the registry serves the tool IDs the compiled toolset
    supplies: the agent's every run would fail with a duplicate tool."""
    designs.check(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
Other = Registry("other", lambda: URL("https://other.example"))
Directory = Toolset("directory", lambda: (Tool("find", "Find."), PublishTo(Company)))
Remote = Toolset("remote_directory", FromRegistry(Company, "hr.directory"))
Unrelated = Toolset("people", FromRegistry(Company, "hr.people"))
with Service("hr"):
    Export(Directory)
with Service("assistant"):
    with Agent("whole", "Reads."):
        Use(Directory)
        Use(Company, Deferred)  # <-
    with Agent("whole_first", "Reads."):
        Use(Company)
        Use(Directory)  # <-
    with Agent("named", "Reads."):
        Use(Remote)
        Use(Directory)  # <-
    with Agent("fine", "Reads."):
        Use(Directory)
        Use(Unrelated)
        Use(Other)
""",
        'agent "whole" uses toolset "directory" (line 12) and the whole registry "company" '
        "(line 13), which serves that same toolset once published (PublishTo(Company) at line "
        "5): the agent would get its tools twice",
        'agent "whole_first" uses toolset "directory" (line 16) and the whole registry',
        'agent "named" uses toolset "directory" (line 19) and registry toolset "hr.directory" '
        'of registry "company" (line 18)',
    )


def test_c5_inline_tools_tags_publish_and_export_of_registry_references(
    designs: DesignRunner,
) -> None:
    designs.check(
        COMPANY
        + """
Other = Registry("other", lambda: URL("https://other.example"))
Defined = Toolset(FromRegistry(Company, "defined"), lambda: Tool("x", "An inline tool."))  # <-
with Service("assistant"):
    Export(Records)  # <-
    with Agent("reader", "Reads."):
        with Use(Records):
            Tool("search", "Search records.")  # <-
            Tool("lookup")  # <-
            Tags("fast")  # <-
            PublishTo(Other)  # <-
        Export(Records)  # <-
    Agent("generalist", "All.", lambda: Use(Company, lambda: Tags("x")))  # <-
""",
        'registry toolset "defined" cannot declare inline Tool schemas or subsets',
        'registry toolset "records" cannot be exported',
        "a registry reference cannot declare inline Tool schemas or subsets",
        "a registry reference cannot declare inline Tool schemas or subsets",
        "Tags on a registry reference: tool tags belong to the provider",
        "PublishTo on a registry reference: a consumer cannot publish provider contracts",
        'registry toolset "records" cannot be exported',
        "tool tags belong to the provider",
    )


def test_registry_toolset_definitions_refuse_descriptions_and_tags(
    designs: DesignRunner,
) -> None:
    # Both were kept on the reference and written nowhere: the provider publishes them.
    designs.check(
        """
Company = Registry("company", lambda: URL("https://registry.example"))
with Toolset(FromRegistry(Company, "records")) as Records:
    Description("Our records.")  # <-
    Tags("records")  # <-
with Service("assistant"):
    Agent("reader", "Reads.", lambda: Use(Records))
""",
        'registry toolset "records" cannot be described here: its provider publishes its '
        "description",
        'Tags on registry toolset "records": tool tags belong to the provider; filter them '
        "with the consuming agent's RunPolicy instead",
    )


def test_c6_duplicate_registry_toolset_and_tool_names(designs: DesignRunner) -> None:
    errors = designs.check(
        """
A = Registry("company", lambda: URL("https://a.example"))
B = Registry("company", lambda: URL("https://b.example"))  # <-
def records():
    Tool("lookup", "Look up.")
    Tool("lookup", "Look up again.")  # <-
R1 = Toolset("records", records)
R2 = Toolset("records", lambda: Tool("lookup", "Same tool name, other toolset: fine."))  # <-
R3 = Toolset(FromRegistry(A, "records"))  # <-
""",
        'registry name "company" duplicates a registry declared at',
        'tool name "lookup" duplicates a tool declared at',
        'toolset name "records" duplicates a toolset declared at',
        'toolset name "records" duplicates a toolset declared at',
    )
    # Duplicates name both places: the message cites the first declaration's line.
    assert errors[0].related[0].line == errors[0].loc.line - 1
    assert ":6 " in str(errors[1]).split("declared at ")[1] + " "
    assert errors[2].related[0].line == 8


def test_c6_empty_and_unsafe_names(designs: DesignRunner) -> None:
    designs.check(
        """
T1 = Toolset("", lambda: Tool("a", "A tool."))  # <-
T2 = Toolset("My Tools", lambda: Tool("a", "A tool."))  # <-
T3 = Toolset("class", lambda: Tool("a", "A tool."))  # <-
T4 = Toolset("ok", lambda: Tool("Bad-Name", "A tool."))  # <-
with Service("svc"):
    Agent("", "Empty.")  # <-
    Agent("2fast", "Starts with a digit.")  # <-
""",
        "toolset name cannot be empty",
        'toolset name "My Tools" must be a lower snake_case identifier',
        'toolset name "class" is a Python keyword',
        'tool name "Bad-Name" must be a lower snake_case identifier',
        "agent name cannot be empty",
        'agent name "2fast" must be a lower snake_case identifier',
    )


@pytest.mark.parametrize("text", ["١٠s", "１０s", "1.５s", "10s "])
def test_durations_are_written_with_ascii_digits(text: str) -> None:
    # `\d` matched any script's digits: "١٠s" (Arabic-Indic) read as ten seconds.
    if text.strip().isascii():
        assert parse_duration(text) == 10.0
    else:
        with pytest.raises(ValueError, match="invalid duration"):
            parse_duration(text)


def test_a_version_pin_no_published_toolset_can_have_is_refused(designs: DesignRunner) -> None:
    # The registry keeps a toolset's version as a single line of at most 256 characters
    # without control or format characters: a pin with a zero-width space pasted in, or on two
    # lines, never matched, and every run of the agent failed with VersionMismatchError.
    designs.check(
        COMPANY
        + """
Other = Toolset("other", FromRegistry(Company, "other"))
Third = Toolset("third", FromRegistry(Company, "third"))
with Service("svc"):
    with Agent("a", "A."):
        Use(Records, lambda: Version("1.2\\u200b"))  # <-
        Use(Other, lambda: Version("1.2\\n1.3"))  # <-
        Use(Third, lambda: Version("v" * 257))  # <-
    Agent("b", "B.", lambda: Use(Records, lambda: Version("2026.11-rc.1+büild")))
""",
        "Version '1.2\\u200b' can never match: a published toolset's version is a non-empty "
        "single line of at most 256 characters without surrounding spaces or control or format "
        "characters (must not contain control or format character '\\u200b'); write the version "
        "as its provider publishes it",
        "(must not contain control or format character '\\n')",
        "(String should have at most 256 characters)",
    )


def test_a_count_too_long_to_write_is_refused_not_a_crash(designs: DesignRunner) -> None:
    # str() of an integer over 4,300 digits raises ValueError: writing the error about
    # Retry(10**5000) failed as a bug in agentgen, and so did MaxToolCalls(-10**5000).
    designs.check(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(10**5000)  # <-
with Registry("other"):
    URL("https://other.example")
    Retry(-(10**5000))  # <-
with Service("svc"):
    Agent("a", "A.", lambda: RunPolicy(lambda: MaxToolCalls(-(10**5000))))  # <-
""",
        "Retry max_retries must be at most 100, got an integer of 16610 bits",
        "Retry max_retries must be non-negative, got an integer of 16610 bits",
        "MaxToolCalls must be non-negative, got an integer of 16610 bits",
    )


def test_retry_errors_caret_the_argument_at_fault(designs: DesignRunner) -> None:
    # Every Retry problem carets the whole call: with three arguments, which was at fault was
    # left to the message, and in a call spanning lines the error named the call's first line.
    errors = designs.errors(
        """
with Registry("company"):
    URL("https://registry.example")
    Retry(3, backoff_base="2m", backoff_max=-1)
with Registry("other"):
    URL("https://other.example")
    Retry(
        500,
        backoff_max="1s",
        backoff_base=2,
    )
with Registry("third"):
    URL("https://third.example")
    Retry("x", "soon")
"""
    )
    shown = [(e.loc.line, excerpt(e)[1].strip(), str(e).split(": ", 2)[2][:32]) for e in errors]
    assert shown == [
        (5, "^" * len('backoff_base="2m"'), "Retry backoff_base must be at mo"),
        (5, "^" * len("backoff_max=-1"), "Retry backoff_max must be non-ne"),
        (9, "^^^", "Retry max_retries must be at mos"),
        (11, "^" * len("backoff_base=2"), "Retry backoff_base (2s) must not"),
        (15, "^^^", "Retry max_retries must be an int"),
        (15, "^^^^^^", "Retry backoff_base invalid durat"),
    ]
    columns = [(e.loc.col, e.loc.end_col) for e in errors]
    assert columns[0] == (13, 30) and columns[1] == (32, 46)
    # The base above the ceiling names both: either may be the one to change.
    assert errors[3].related[0].line == 10
    assert "lower backoff_base or raise backoff_max" in str(errors[3])
