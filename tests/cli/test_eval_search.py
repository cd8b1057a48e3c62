"""``agentgen eval-search`` and its library: measuring tool search on a labelled set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main
from agentgen.codegen.search_eval import (
    CatalogError,
    EvalQuery,
    EvalTool,
    evaluate_search,
    load_catalog,
    load_queries,
)

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "bench" / "search_eval"

TOOLS = [
    {"name": "github.create_issue", "description": "Create a new issue in a repository.",
     "parameters": {"type": "object", "properties": {"title": {"type": "string"}}}},
    {"name": "github.list_pull_requests", "description": "List pull requests.",
     "parameters": {"type": "object", "properties": {"state": {"enum": ["open", "closed"]}}}},
    {"name": "files.read_file", "description": "Read a file from disk.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
]  # fmt: skip
QUERIES = [
    {"query": "make a new ticket", "expected": ["github.create_issue"]},
    {"query": "which pull requests are open", "expected": ["github.list_pull_requests"]},
    {"query": "read notes.txt from disk", "expected": ["files.read_file"]},
    {"query": "zzz qqq", "expected": ["files.read_file"]},
]


def write(tmp_path: Path, name: str, value: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["eval-search", *args])
    return result.exit_code, result.stdout, result.stderr


def tools() -> list[EvalTool]:
    return [
        EvalTool(t["name"], t["description"], t.get("parameters", t.get("inputSchema", {})))
        for t in TOOLS
    ]  # type: ignore[arg-type]


def test_metrics_are_computed_from_the_ranks() -> None:
    queries = [EvalQuery(q["query"], tuple(q["expected"])) for q in QUERIES]  # type: ignore[arg-type]
    result = evaluate_search(tools(), queries, k=5)
    # Three queries find their tool first; "zzz qqq" matches nothing at all.
    assert result.queries == 4
    assert result.recall_at_1 == result.recall_at_k == pytest.approx(0.75)
    assert result.mrr == pytest.approx(0.75)
    assert result.ndcg_at_k == pytest.approx(0.75)
    (miss,) = result.misses
    assert (miss.query, miss.rank, miss.above) == ("zzz qqq", None, ())


def test_a_lower_rank_counts_in_mrr_and_ndcg_but_not_recall_at_1() -> None:
    queries = [EvalQuery("list issues and pull requests", ("github.create_issue",))]
    result = evaluate_search(tools(), queries, k=5)
    assert result.recall_at_1 == 0.0 and result.recall_at_k == 1.0
    assert result.mrr == pytest.approx(0.5)
    assert result.ndcg_at_k == pytest.approx(1 / 1.584962500721156)


def test_cli_prints_the_metrics_and_the_worst_misses(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    queries = write(tmp_path, "queries.json", QUERIES)
    code, out, _ = run(str(catalog), str(queries))
    assert code == 0
    assert "4 queries over 3 tools, ranking fields" in out
    assert "recall@5 0.750" in out and "recall@1 0.750" in out
    assert (
        "'zzz qqq': expected files.read_file (not found by the query, which matched none of the "
        "3 tools)"
    ) in out
    code, out, _ = run(str(catalog), str(queries), "--json", "--k", "1", "--ranking", "classic")
    data = json.loads(out)
    assert data["ranking"] == "classic" and data["k"] == 1 and "recall@1" in data
    assert data["tools"] == 3
    assert data["worst_misses"][0] == {
        "query": "zzz qqq", "expected": ["files.read_file"], "rank": None, "matched": 0,
        "above": [],
    }  # fmt: skip


def test_recall_is_also_reported_by_kind_when_queries_have_one(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    kinds = ["paraphrase", "direct", "direct", "paraphrase"]
    labelled = [{**query, "kind": kind} for query, kind in zip(QUERIES, kinds, strict=True)]
    queries = write(tmp_path, "queries.json", labelled)
    code, out, _ = run(str(catalog), str(queries))
    assert code == 0
    # "zzz qqq" (a paraphrase) finds nothing; the other three find their tool first.
    assert "recall@5 by kind: direct 1.000 (2), paraphrase 0.500 (2)" in out
    code, out, _ = run(str(catalog), str(queries), "--json")
    assert json.loads(out)["by_kind"] == {
        "direct": {"queries": 2, "recall@5": 1.0},
        "paraphrase": {"queries": 2, "recall@5": 0.5},
    }
    # Without kinds there is nothing to report by kind.
    code, out, _ = run(str(catalog), str(write(tmp_path, "plain.json", QUERIES)))
    assert code == 0 and "by kind" not in out
    bad = write(tmp_path, "bad.json", [{"query": "x", "expected": ["files.read_file"], "kind": 3}])
    code, _, err = run(str(catalog), str(bad))
    assert code == 2 and 'query 0: "kind", when given, must be a non-empty string' in err


def test_a_whole_json_rpc_tools_list_response_is_a_catalog(tmp_path: Path) -> None:
    """``curl`` and MCP inspectors save the whole response, envelope included."""
    response = {"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}}
    path = write(tmp_path, "tools.json", response)
    assert load_catalog(path) == load_catalog(write(tmp_path, "bare.json", {"tools": TOOLS}))
    code, out, err = run(str(path), str(write(tmp_path, "queries.json", QUERIES)))
    assert code == 0, err
    assert out.startswith("4 queries over 3 tools")


def test_an_mcp_tools_list_result_is_a_catalog(tmp_path: Path) -> None:
    path = write(tmp_path, "tools.json", {"tools": TOOLS})
    assert [t.name for t in load_catalog(path)][2] == "files.read_file"
    assert load_catalog(path)[2].parameters["properties"]["path"] == {"type": "string"}


@pytest.mark.parametrize(
    ("catalog", "message"),
    [
        ({"name": "x"}, "a catalog is a JSON list of tools"),
        ([{"description": "no name"}], 'each tool needs a non-empty string "name"'),
        ([{"name": "a"}, {"name": "a"}], "the name 'a' is repeated"),
        ([{"name": "a", "parameters": []}], '"parameters" .or "inputSchema". must be a JSON'),
        # A JSON-RPC error response holds no tools: the server's error is named.
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}},
            r"a JSON-RPC error response \(code -32601: Method not found\), not a tools/list "
            "result; the server refused the request",
        ),
        # The server's message reaches a terminal: escaped, and cut.
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "\x1b[2J" + "x" * 999}},
            r"\(code 1: \\x1b\[2Jx{296}\), not a tools/list",
        ),
        (
            {"jsonrpc": "2.0", "id": 1},
            'a JSON-RPC message with neither "result" nor "error"',
        ),
        # The result of a whole response is read as the result alone would be.
        (
            {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}},
            "the catalog has no tools",
        ),
        ([], "the catalog has no tools; list the tools to search"),
        ({"tools": [], "nextCursor": None}, "the catalog has no tools"),
        # One page of a paginated listing would be measured as if it were every tool.
        (
            {"tools": [{"name": "a"}], "nextCursor": "page-2"},
            r"this tools/list result is one page \(nextCursor 'page-2'\): save every page's",
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a"}], "nextCursor": "2"}},
            r"one page \(nextCursor '2'\)",
        ),
        # A description of the wrong type is refused, not read as an empty one.
        ([{"name": "a", "description": {}}], 'tool 0 .a.: "description" must be a string, not a'),
        ([{"name": "a", "description": 0}], '"description" must be a string, not a number'),
    ],
)
def test_bad_catalogs_are_refused_with_where(tmp_path: Path, catalog: object, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        load_catalog(write(tmp_path, "catalog.json", catalog))


def test_bad_queries_and_files_are_usage_errors(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    bad = write(tmp_path, "queries.json", [{"query": "x", "expected": ["nope.tool"]}])
    code, _, err = run(str(catalog), str(bad))
    assert code == 2 and "expects tools the catalog lacks: nope.tool" in err
    with pytest.raises(CatalogError, match='"expected" must be a non-empty list'):
        load_queries(write(tmp_path, "q2.json", [{"query": "x", "expected": []}]))
    (tmp_path / "broken.json").write_text("{")
    code, _, err = run(str(tmp_path / "broken.json"), str(bad))
    assert code == 2 and "not JSON" in err and "Traceback" not in err


def test_the_committed_set_loads_and_fields_beats_classic_on_it() -> None:
    catalog = load_catalog(EVAL / "catalog.json")
    names = [tool.name for tool in catalog]
    assert len(catalog) >= 800
    tune = load_queries(EVAL / "queries_tune.json", names)
    heldout = load_queries(EVAL / "queries_heldout.json", names)
    assert len(tune) + len(heldout) >= 400
    fields = evaluate_search(catalog, heldout)
    classic = evaluate_search(catalog, heldout, ranking="classic")
    assert fields.recall_at_k > classic.recall_at_k
    assert fields.mrr > classic.mrr
    # Every query of the set says how it was written, and the kinds cover the whole half.
    assert {kind.kind for kind in fields.by_kind} == {
        "arguments",
        "direct",
        "keywords",
        "paraphrase",
    }
    assert sum(kind.queries for kind in fields.by_kind) == len(heldout)


def test_duplicate_names_say_where_the_first_one_is_and_what_to_do(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", [{"name": "a"}, {"name": "b"}, {"name": "a"}])
    code, _, err = run(str(catalog), str(write(tmp_path, "q.json", QUERIES)))
    assert code == 2
    assert (
        "catalog.json: tool 2: the name 'a' is repeated (tool 0); tool names must be unique: "
        "rename or remove one"
    ) in " ".join(err.split())


def test_names_that_differ_only_in_case_are_two_tools(tmp_path: Path) -> None:
    # As for the runtime's tool search: the catalog was refused ("differs only in case").
    tools = [
        {"name": "users.getUser", "description": "Get one user by ID."},
        {"name": "users.GetUser", "description": "Legacy user lookup by email."},
    ]
    queries = [
        {"query": "users.getUser", "expected": ["users.getUser"]},
        {"query": "users.GetUser", "expected": ["users.GetUser"]},
    ]
    catalog, asked = write(tmp_path, "catalog.json", tools), write(tmp_path, "q.json", queries)
    for ranking in ("fields", "classic"):
        code, out, err = run(str(catalog), str(asked), "--json", "--ranking", ranking)
        assert (code, err) == (0, "")
        assert json.loads(out)["recall@1"] == 1.0


def test_files_that_are_not_utf8_are_usage_errors_naming_the_file(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    queries = write(tmp_path, "queries.json", QUERIES)
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('[{"query": "café", "expected": ["files.read_file"]}]'.encode("latin-1"))
    for args in ([str(latin1), str(queries)], [str(catalog), str(latin1)]):
        code, _, err = run(*args)
        assert code == 2 and "Traceback" not in err
        assert "latin1.json: not UTF-8 text (byte 15: invalid continuation byte); save it as " in (
            " ".join(err.split())
        )


@pytest.mark.parametrize(
    ("queries", "message"),
    [
        ([], "there are no queries; list the requests to measure"),
        (
            {"queries": QUERIES},
            "queries are a JSON list of .*; found a JSON object .keys: 'queries'.",
        ),
        ([QUERIES[0], {"query": "", "expected": ["files.read_file"]}], 'query 1: "query" is empty'),
        ([{"query": " \t", "expected": ["files.read_file"]}], 'query 0: "query" is empty; write'),
        ([{"query": 3, "expected": ["files.read_file"]}], "query 0: each query needs a string"),
        (
            [{"query": "x", "expected": ["nope.tool"]}],
            "query 0: expects tools the catalog lacks: nope.tool; correct the names or add",
        ),
    ],
)
def test_bad_query_files_name_the_query_at_fault(
    tmp_path: Path, queries: object, message: str
) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    code, _, err = run(str(catalog), str(write(tmp_path, "queries.json", queries)))
    assert code == 2 and "Traceback" not in err
    assert re.search("queries.json: " + message, " ".join(err.split()))


def test_no_queries_is_an_error_not_zero_recall() -> None:
    with pytest.raises(ValueError, match="no queries to measure"):
        evaluate_search(tools(), [])


def test_one_query_over_one_tool_reads_in_the_singular(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS[:1])
    queries = write(tmp_path, "queries.json", [{"query": "zzz", "expected": [TOOLS[0]["name"]]}])
    code, out, _ = run(str(catalog), str(queries))
    assert code == 0
    assert out.splitlines()[0] == "1 query over 1 tool, ranking fields"
    assert "worst misses (1 query missed the top 5):" in out


def test_a_miss_says_what_is_true_of_a_catalog_smaller_than_the_depth(tmp_path: Path) -> None:
    """ "not in the top 50" was printed for a catalog of 3 tools (and "not in the top 60" with
    --k 60), for a tool the query did not match at all: a ranking that was never cut."""
    catalog = write(tmp_path, "catalog.json", TOOLS)
    queries = write(
        tmp_path,
        "queries.json",
        [
            {"query": "zzz qqq", "expected": ["files.read_file"]},
            {"query": "read a file", "expected": ["github.create_issue"]},
            {"query": "list pull requests and issues", "expected": ["github.create_issue"]},
        ],
    )
    code, out, _ = run(str(catalog), str(queries), "--k", "1")
    assert code == 0
    assert "top 50" not in out
    assert (
        "'zzz qqq': expected files.read_file (not found by the query, which matched none of the "
        "3 tools)"
    ) in out
    assert (
        "'read a file': expected github.create_issue (not found by the query, which matched 1 "
        "other tool of the 3 tools)"
    ) in out
    assert (
        "'list pull requests and issues': expected github.create_issue (ranked 2 of 3 tools)"
    ) in out


def test_a_miss_below_the_depth_says_how_deep_the_ranking_was_read(tmp_path: Path) -> None:
    many = [
        {"name": f"crm.customer_{n}", "description": "Customer customer customer."}
        for n in range(60)
    ]
    wordy = "customer " + " ".join(f"word{n}" for n in range(60))
    catalog = write(tmp_path, "catalog.json", [*many, {"name": "x.y", "description": wordy}])
    queries = write(tmp_path, "queries.json", [{"query": "customer", "expected": ["x.y"]}])
    code, out, _ = run(str(catalog), str(queries))
    assert code == 0
    assert "'customer': expected x.y (not in the top 50 of 61 tools)" in out


def test_long_queries_are_cut_in_the_misses_but_kept_in_json(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    long = "zzz " * 5000
    queries = write(tmp_path, "queries.json", [{"query": long, "expected": ["files.read_file"]}])
    code, out, _ = run(str(catalog), str(queries))
    assert code == 0
    (line,) = [line for line in out.splitlines() if "expected files.read_file" in line]
    assert line == (
        f"  {'zzz ' * 24 + 'zzz…'!r}: expected files.read_file (not found by the query, which "
        "matched none of the 3 tools)"
    )
    code, out, _ = run(str(catalog), str(queries), "--json")
    assert json.loads(out)["worst_misses"][0]["query"] == long


def test_json_nested_too_deeply_is_a_usage_error_not_a_bug(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run(str(deep), str(write(tmp_path, "queries.json", QUERIES)))
    assert code == 2 and "Traceback" not in err
    assert "deep.json: JSON nested too deeply to read" in err


def test_a_lone_surrogate_is_a_usage_error_naming_where(tmp_path: Path) -> None:
    # "\ud800" is valid JSON but no UTF-8 text: printing the report crashed ("bug in agentgen").
    catalog = write(tmp_path, "catalog.json", TOOLS)
    queries = write(tmp_path, "queries.json", QUERIES)
    odd_tool = [*TOOLS, {"name": "odd", "description": "x", "parameters": {
        "type": "object", "properties": {"q": {"description": "lone \ud800"}}}}]  # fmt: skip
    code, out, err = run(str(write(tmp_path, "odd.json", odd_tool)), str(queries))
    assert code == 2 and "Traceback" not in err and not out
    assert (
        f'tool {len(TOOLS)}: "parameters"."properties"."q"."description" holds a lone '
        "surrogate" in err
    )
    odd_query = [{"query": "find \udc00", "expected": [TOOLS[0]["name"]]}]
    for flags in ((), ("--json",)):
        code, out, err = run(str(catalog), str(write(tmp_path, "q.json", odd_query)), *flags)
        assert code == 2 and "Traceback" not in err
        assert 'q.json: query 0: "query" holds a lone surrogate' in err


def test_a_byte_order_mark_is_read_and_an_empty_file_named(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(TOOLS), encoding="utf-8-sig")
    assert [tool.name for tool in load_catalog(catalog)] == [t["name"] for t in TOOLS]
    (tmp_path / "empty.json").write_text("\n")
    code, _, err = run(str(catalog), str(tmp_path / "empty.json"))
    assert code == 2 and "empty.json: the file is empty; it should hold a JSON list" in err


def test_files_given_in_the_wrong_order_are_named_as_such(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    queries = write(tmp_path, "queries.json", QUERIES)
    code, _, err = run(str(queries), str(catalog))
    assert code == 2
    assert (
        'queries.json: tool 0: each tool needs a non-empty string "name" (this looks like a '
        "queries file: the catalog comes first)"
    ) in " ".join(err.split())
    with pytest.raises(CatalogError, match="this looks like a catalog: the queries come second"):
        load_queries(catalog)


@pytest.mark.parametrize(
    ("catalog", "message"),
    [
        (None, "cannot read {path}: No such file or directory"),
        ("{", "{path}: not JSON: "),
        ('{"name": "x"}', "{path}: a catalog is a JSON list of tools"),
    ],
)
def test_a_file_that_cannot_be_used_is_reported_like_the_other_commands(
    tmp_path: Path, catalog: str | None, message: str
) -> None:
    # The command line is right, the file it names is not: the error alone, as `gen` and
    # `search` report a design file they cannot use, without click's usage banner.
    path = tmp_path / "catalog.json"
    if catalog is not None:
        path.write_text(catalog)
    code, out, err = run(str(path), str(write(tmp_path, "queries.json", QUERIES)))
    assert code == 2 and out == ""
    assert err.startswith("error: " + message.format(path=path)), err
    assert "Usage:" not in err and "Try 'agentgen eval-search -h'" not in err
    assert len(err.strip().splitlines()) == 1
    # The same shape as a design file `agentgen search` cannot read.
    result = CliRunner().invoke(main, ["search", str(tmp_path / "missing.py"), "x"])
    assert result.exit_code == 2 and result.stderr.startswith("error: ")
    assert "Usage:" not in result.stderr


def _eval_with_stderr_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """``agentgen eval-search`` in its own process, stderr on a pseudo-terminal, stdout piped."""
    import os
    import pty
    import subprocess
    import sys

    main_fd, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "agentgen.codegen.cli", "eval-search", *args],
        stdout=subprocess.PIPE,
        stderr=terminal,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "100"},
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    assert process.stdout is not None
    out = process.stdout.read().decode()
    process.wait(60)
    os.close(main_fd)
    return process.returncode, out, shown.decode(errors="replace")


def test_progress_shows_on_a_terminals_stderr_and_never_on_stdout(tmp_path: Path) -> None:
    many = [{**TOOLS[0], "name": f"github.create_issue_{i}"} for i in range(2500)]
    catalog = write(tmp_path, "catalog.json", [*TOOLS, *many])
    queries = write(tmp_path, "queries.json", QUERIES)
    code, out, shown = _eval_with_stderr_on_a_terminal(str(catalog), str(queries), "--json")
    assert code == 0, shown
    assert json.loads(out)["queries"] == 4  # stdout is the JSON alone
    assert "search documents" in shown and "2503/2503" in shown
    assert "queries" in shown and "4/4" in shown


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    catalog = write(tmp_path, "catalog.json", TOOLS)
    queries = write(tmp_path, "queries.json", QUERIES)
    for extra in ([], ["--json"]):
        code, out, err = run(str(catalog), str(queries), *extra)
        assert code == 0 and out and err == ""


def test_the_library_reports_progress_by_stage() -> None:
    seen: list[tuple[str, int, int]] = []
    queries = [EvalQuery(q["query"], tuple(q["expected"])) for q in QUERIES]  # type: ignore[arg-type]
    evaluate_search(tools(), queries, progress=lambda *step: seen.append(step))
    assert seen[0] == ("search documents", 3, 3)
    assert [step for step in seen if step[0] == "queries"] == [
        ("queries", done, 4) for done in range(5)
    ]


@pytest.mark.usefixtures("snowball_2_stemmer")
def test_a_stemmer_of_another_version_is_an_error_of_the_environment_not_a_bug(
    tmp_path: Path,
) -> None:
    # StemmerVersionError says what to install; the CLI printed it as "a bug in agentgen"
    # with a traceback (exit 3).
    catalog, queries = tmp_path / "catalog.json", tmp_path / "queries.json"
    catalog.write_text(json.dumps(TOOLS))
    queries.write_text(json.dumps(QUERIES))
    result = CliRunner().invoke(main, ["eval-search", str(catalog), str(queries)])
    assert result.exit_code == 2
    assert result.output.startswith("error: the installed stemmer (PyStemmer")
    assert "'adding' as 'ad' (expected 'add')" in result.output
    assert "pip install 'PyStemmer>=3.1,<4'" in result.output
    assert "Traceback" not in result.output
    assert "bug in agentgen" not in result.output


def test_control_characters_in_names_and_kinds_print_as_escapes(tmp_path: Path) -> None:
    # A catalog may be an MCP server's tools/list: its names reached the terminal as they were
    # (ESC[2J cleared the screen). color=True: click strips nothing, as on a terminal.
    evil = "evil\x1b[2J"
    catalog = write(
        tmp_path,
        "catalog.json",
        [{"name": evil, "description": "send mail"}, {"name": "b", "description": "other"}],
    )
    queries = write(
        tmp_path, "queries.json", [{"query": "other", "expected": [evil], "kind": "k\x1b[31m"}]
    )
    result = CliRunner().invoke(main, ["eval-search", str(catalog), str(queries)], color=True)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout
    assert (
        "'other': expected evil\\x1b[2J (not found by the query, which matched 1 other tool of "
        "the 2 tools)"
    ) in result.stdout
    assert "recall@5 by kind: k\\x1b[31m 0.000 (1)" in result.stdout
    bad = write(tmp_path, "bad.json", [{"name": evil, "description": 5}])
    result = CliRunner().invoke(main, ["eval-search", str(bad), str(queries)], color=True)
    assert result.exit_code == 2
    assert result.stderr == (
        f'error: {bad}: tool 0 (evil\\x1b[2J): "description" must be a string, not a number\n'
    )


def test_a_json_rpc_response_with_a_null_error_is_read_from_its_result(tmp_path: Path) -> None:
    # Servers written against JSON-RPC 1.0 habits send "error": null beside a result; the
    # response was refused as "a JSON-RPC error response (None)" though it holds the tools.
    response = {"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}, "error": None}
    path = write(tmp_path, "tools.json", response)
    assert load_catalog(path) == load_catalog(write(tmp_path, "bare.json", {"tools": TOOLS}))
