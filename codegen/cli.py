"""The ``agentgen`` command line: parses options, calls the library pipeline, prints.

Exit codes: 0 success; 1 the design is invalid or its own code raised; 2 the design file
cannot be used at all (missing, not Python), the output folder cannot be used or written, or
the command line is wrong; 3 a bug in agentgen (its traceback is printed; please report it);
130 interrupted; 141 the reader of the output went away (``| head``). See ``exits``.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import platform
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import click

from agentgen.codegen.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    quiet_closed_output,
    unusable,
)
from agentgen.codegen.registry_command import registry
from agentgen.codegen.trace_command import trace
from agentgen.codegen.worker_cli import worker

if TYPE_CHECKING:
    from agentgen.codegen.agent_views import AgentView, ToolView
    from agentgen.codegen.check import CheckedDesign
    from agentgen.codegen.generation_model import GenerationModel
    from agentgen.dsl.errors import DesignError
    from agentgen.dsl.expr import RootExpr
    from agentgen.runtime.search.index import TermContribution

# The design machinery (pydantic, Jinja2...) is imported by the commands that need it: a
# regeneration with nothing to do answers from the cache without loading any of it.

CONFLICT_HINT = "move those files out of the output folder, or choose another output folder with -o"
EDITED_HINT = (
    "move the changes into the design (or into a module of your own), then run "
    "`agentgen gen --force` to overwrite them"
)
KEPT_NOTE = (
    "it carries agentgen's header, but was edited by hand or written by an older agentgen: "
    "delete it if it is a leftover"
)
BUG_REPORT = (
    "this is a bug in agentgen, please report it with the traceback above and the design "
    "that triggered it"
)


@contextlib.contextmanager
def handled(design: Path) -> Iterator[None]:
    """Turn the pipeline's exceptions into messages and exit codes.

    A design file or an output folder that cannot be used exits 2, a design whose own code
    raised exits 1 with its traceback (the user's frames only). Any other exception is a bug
    in agentgen: the command group reports it (exit 3), never disguised as a design error.
    """
    from agentgen.codegen.loader import DesignFileError, UserCodeError
    from agentgen.codegen.output import OutputFolderError

    try:
        # What the design prints while it loads goes to standard error: standard output is the
        # command's own (``explain --json`` is read by tools, and a design's progress print
        # made it unparsable). Done here, in the command, not in the loader: a library call
        # must not swap the process's sys.stdout under other threads.
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except (DesignFileError, OutputFolderError) as exc:
        unusable(str(exc))
    except UserCodeError as exc:
        click.echo(
            f"error: the design raised an exception\n{exc.traceback_text}", err=True, nl=False
        )
        sys.exit(EXIT_INVALID)


def bug() -> NoReturn:
    """Print the current exception as a bug in agentgen and exit 3."""
    from importlib import metadata

    click.echo(traceback.format_exc(), err=True, nl=False)
    try:
        version = metadata.version("agentgen")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        version = "unknown"
    click.echo(
        f"error: {BUG_REPORT} (agentgen {version}, Python {platform.python_version()})", err=True
    )
    sys.exit(EXIT_BUG)


def checked_or_exit(design: Path) -> CheckedDesign:
    """Every check of ``design``; its design errors are printed and exit 1."""
    from agentgen.codegen.pipeline import batch_memory, check_file

    with handled(design), batch_memory():
        checked = check_file(design)
    if checked.errors:
        report(design, checked.errors)
        sys.exit(EXIT_INVALID)
    return checked


def model_or_exit(design: Path) -> GenerationModel:
    from agentgen.codegen.model_builder import build
    from agentgen.codegen.pipeline import batch_memory

    checked = checked_or_exit(design)
    with handled(design), batch_memory():
        return build(checked)


def views_or_exit(design: Path, agent_id: str | None) -> list[AgentView]:
    """The design's agents as ``explain`` and ``search`` show them (all, or the one named)."""
    from agentgen.codegen.agent_views import UnknownAgentError, select

    model = model_or_exit(design)
    try:
        return select(model, agent_id)
    except UnknownAgentError as exc:
        raise click.UsageError(str(exc)) from None


def report(design: Path, errors: tuple[DesignError, ...]) -> None:
    from agentgen.codegen.diagnostics import format_errors

    color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
    click.echo(format_errors(errors, color=color), err=True)
    count = len(errors)
    click.echo(f"{design}: {count} design error{'s' if count != 1 else ''}", err=True)


def plural(n: int, word: str, words: str | None = None) -> str:
    """``n`` and the word, in the plural (``words``, else ``word`` + s) unless n is 1."""
    return f"{n} {word if n == 1 else words or word + 's'}"


def summary(root: RootExpr) -> str:
    agents = root.agents()
    tools = sum(len(t.tools) for t in root.toolsets)
    return ", ".join(
        [
            plural(len(root.services), "service"),
            plural(len(agents), "agent"),
            plural(len(root.toolsets), "toolset"),
            plural(tools, "tool"),
            plural(len(root.registries), "registry", "registries"),
        ]
    )


class _Commands(click.Group):
    """The command group: an exception no command expected is reported as a bug (exit 3)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line with standard output writing what its encoding cannot hold as
        escapes: a pipe or console in ASCII or cp1252 (``PYTHONIOENCODING``, a Windows code
        page) could not encode a design's, a query's or a transcript's text, nor the arrows
        the commands print, and every such command ended as "a bug in agentgen" (exit 3)."""
        stdout = sys.stdout
        if isinstance(stdout, io.TextIOWrapper) and stdout.errors == "strict":
            stdout.reconfigure(errors="backslashreplace")
        return super().main(*args, **kwargs)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List every command with its whole summary (the first paragraph of its help),
        wrapped rather than cut at click's default 45 characters."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            summary = (command.short_help or command.help or "").split("\n\n")[0]
            rows.append((name, " ".join(summary.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the group's own options, of which --help and --version print and exit: a
        reader gone while they print exits 141 too, not click's 1 (an invalid design)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            raise _reader_gone() from None

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            # Not click's "Aborted!" with exit 1, which a script reads as an invalid design.
            click.echo("interrupted", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            # The reader went away (`agentgen ... | head`): not a bug, nothing more to say.
            raise _reader_gone() from None
        except Exception as exc:
            from agentgen.runtime.search.analysis import StemmerVersionError
            from agentgen.runtime.telemetry.config import TelemetrySetupError

            # The environment's (a variable, an installed library), not a bug: each says what
            # to do, and the environment is one more thing the command cannot use (exit 2).
            if isinstance(exc, TelemetrySetupError | StemmerVersionError):
                unusable(str(exc))
            bug()


def _reader_gone() -> click.exceptions.Exit:
    """The exit of a command whose output's reader went away: quietly, with 141."""
    quiet_closed_output()
    return click.exceptions.Exit(EXIT_BROKEN_PIPE)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentgen", prog_name="agentgen")
def main() -> None:
    """agentgen: typed agent packages with deferred tool loading, from a Python design."""


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
def validate(design: Path) -> None:
    """Evaluate DESIGN and check every rule, reporting all errors at once.

    Everything `agentgen gen` would report is checked (types that cannot be generated
    included); nothing is written.

    \b
    Example:
      agentgen validate examples/records/design.py
    """
    checked = checked_or_exit(design)
    for warning in checked.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"{design}: valid ({summary(checked.root)})")


def _output_folder(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """``-o ""`` would be the current folder (``Path("")`` is ``.``): refused, never guessed."""
    if value is None:
        return None
    if not value:
        raise click.BadParameter("is empty; name a folder, or leave -o out for gen/ next to DESIGN")
    return Path(value)


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    metavar="OUTPUT",
    type=click.Path(file_okay=False),
    callback=_output_folder,
    default=None,
    show_default="gen/ in the folder of DESIGN",
    help="Folder of the generated packages (a relative path is relative to the current folder).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 if OUTPUT is not current, listing missing, stale, edited and "
    "extra files and conflicts (files at generated paths that agentgen did not generate).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Overwrite generated files that were edited by hand (their content no longer matches "
    "the hash in their header). Files agentgen did not generate are never overwritten. Not "
    "with --check.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Always load and generate, even when nothing the last generation read has changed. "
    "The record of the last generation lives in $AGENTGEN_CACHE_DIR, else "
    "$XDG_CACHE_HOME/agentgen, else ~/.cache/agentgen; deleting that folder clears it.",
)
def gen(design: Path, output: Path | None, check: bool, force: bool, no_cache: bool) -> None:
    """Generate typed agent packages from DESIGN into OUTPUT.

    Every generated file carries a hash of its content in its header. A generated file
    edited by hand since is not overwritten: gen lists it and writes nothing, unless --force.
    Files that are no longer generated are removed only when untouched; others carrying
    agentgen's header are kept and listed. A file at a generated path that agentgen did not
    generate (no generated header) is a conflict: gen refuses to overwrite it, lists the
    conflicts and writes nothing.

    With --check nothing is written: gen exits 1 listing missing, stale (the design changed),
    edited (changed by hand) and extra files and conflicts when OUTPUT is not what DESIGN
    generates.

    \b
    Examples:
      agentgen gen design.py             # writes gen/ next to design.py
      agentgen gen examples/records/design.py -o build/records
      agentgen gen design.py --check     # in CI: fail when committed packages are stale
      agentgen gen design.py --force     # overwrite generated files edited by hand
    """
    from agentgen.codegen.pipeline import default_output, generate

    if check and force:
        # --force only changes what gen writes, and --check writes nothing: accepted, it was
        # silently ignored (and skipped --check's refusal of another design's folder).
        raise click.UsageError(
            "--check and --force cannot be combined: --check writes nothing, and --force only "
            "changes what gen writes; run `agentgen gen --force`, then `agentgen gen --check`"
        )
    output = default_output(design) if output is None else output
    with handled(design):
        result = generate(design, output, check=check, use_cache=not no_cache, force=force)
    if result.errors:
        report(design, result.errors)
        sys.exit(EXIT_INVALID)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    for path in result.kept:
        click.echo(f"kept: {output / path} ({KEPT_NOTE})", err=True)
    if check:
        if result.up_to_date:
            click.echo(f"{output}: up to date ({len(result.files)} files)")
            return
        click.echo(f"{output} is not what {design} generates:", err=True)
        for line in result.lines():
            click.echo(f"  {line}", err=True)
        if result.conflicts or result.links:
            # `agentgen gen` would refuse as well: the conflicts must go first.
            click.echo(CONFLICT_HINT, err=True)
        elif result.edited:
            click.echo(EDITED_HINT, err=True)
        else:
            click.echo("run `agentgen gen` again and commit the result", err=True)
        sys.exit(EXIT_INVALID)
    refusals = (
        (
            result.links,
            "write through symbolic links at generated paths (a link could lead outside the "
            "output folder)",
            CONFLICT_HINT,
        ),
        (
            result.conflicts,
            "overwrite what agentgen did not generate (no generated header) at generated paths",
            CONFLICT_HINT,
        ),
        (
            result.edited,
            "overwrite files edited by hand (their content no longer matches the hash in their "
            "header)",
            EDITED_HINT,
        ),
    )
    for paths, what, hint in refusals:
        if paths:
            click.echo(f"error: {output}: refusing to {what}; nothing was written:", err=True)
            for path in paths:
                click.echo(f"  {output / path}", err=True)
            click.echo(hint, err=True)
    if result.conflicts or result.edited or result.links:
        sys.exit(EXIT_INVALID)
    click.echo(
        f"{output}: {len(result.created)} created, {len(result.updated)} updated, "
        f"{len(result.removed)} removed, {result.unchanged} unchanged"
    )


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
@click.argument("query")
@click.option(
    "--agent",
    "agent_id",
    help="Agent ID (service.agent) or name; needed when the design has several.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="How many tools a search returns (at least 1).",
)
@click.option(
    "--ranking",
    type=click.Choice(["fields", "classic"]),
    default="fields",
    show_default=True,
    help="fields: BM25F over ID, title, description and arguments, with stems and synonyms "
    "(the adapter's default); classic: the spec's plain BM25 over ID, title and description.",
)
def search(design: Path, query: str, agent_id: str | None, limit: int, ranking: str) -> None:
    """Rank an agent's deferred tools for QUERY as the OpenAI adapter's tool search does.

    Shows the ranking the OpenAI Responses adapter's client-side tool search uses over the
    agent's deferred compiled tools, with each tool's score, every query word's contribution
    and, for the fields ranking, how much of it each field of the tool gave (name, title,
    description, parameters, parameter_text) and how much of the tool's name the query used
    (the best tools' scores are raised by it), so a team can check that its tools are findable
    before shipping and see why. Claude (the Anthropic Messages adapter) uses Anthropic's hosted
    regex search instead, which this ranking does not predict. Registry tools are resolved at
    run time and are not listed. Tools the agent's run policy hides are never searched at run
    time: the ranking leaves them out, and after it come the ones that match (the best --limit
    of them, ranked among themselves, and how many more match).

    \b
    Examples:
      agentgen search examples/records/design.py --agent assistant.assistant "analyze records"
      agentgen search design.py --agent reader "find a customer" --limit 10
      agentgen search design.py --agent reader "find a customer" --ranking classic
    """
    from agentgen.runtime.adapters.names import provider_name
    from agentgen.runtime.search.document import search_text
    from agentgen.runtime.search.index import NAME_COVERAGE, Ranking, SearchEntry, SearchIndex

    if not query.strip():
        raise click.UsageError(
            'QUERY is empty: give the words a model would search with, such as "find a customer"'
        )
    views = views_or_exit(design, agent_id)
    if not views:
        raise click.UsageError(
            "the design has no agents: search ranks the deferred tools of an agent; declare one "
            "with Agent(...) inside a Service and use its toolsets with Use(..., Deferred)"
        )
    if len(views) != 1:
        known = ", ".join(v.agent.id for v in views)
        raise click.UsageError(f"the design has several agents; pick one with --agent ({known})")
    (view,) = views
    chosen = cast(Ranking, ranking)

    def index(tools: list[ToolView]) -> SearchIndex:
        return SearchIndex(
            [
                SearchEntry(
                    t.tool.id,
                    t.tool.search,
                    (provider_name(t.tool.id),),
                    search_text(t.tool.id, t.tool.title, t.tool.description),
                )
                for t in tools
            ],
            chosen,
        )

    # The adapter searches only what the run policy lets through (the catalog it receives);
    # matching tools the policy hides are listed after the ranking.
    deferred = list(view.deferred)
    visible = [t for t in deferred if not view.hidden(t.tool)]
    ranked = index(visible)
    terms = ranked.query_terms(query)
    own = [word for word, _, origin in terms if origin is None]
    added = [word for word, _, origin in terms if origin is not None]
    words = ", ".join(own) or "(none)"
    if added:
        words += f" (+ synonyms: {', '.join(added)})"
    hidden_count = len(deferred) - len(visible)
    note = f", {hidden_count} of them hidden by the agent's run policy" if hidden_count else ""
    click.echo(
        f"agent {view.agent.id}: {len(deferred)} deferred tool{'s' if len(deferred) != 1 else ''}"
        f"{note}; query {_shown(query)} → words: {words}"
    )
    if view.registry_reads:
        click.echo("  (registry sources are resolved at run time and are not searched here)")
    # A query that names an immediate tool (checking that tool's findability) would otherwise
    # get a ranking without it and no word why.
    immediate = [t for t in view.immediate if not view.hidden(t.tool)]
    for hit in index(immediate).explain(query, 1) if immediate else []:
        if hit.exact_name:
            click.echo(
                f"  ({hit.tool_id}, which the query names, is immediate: the model sees it in "
                "every request, so search never returns it)"
            )
    if not deferred:
        click.echo(
            "  nothing to search: every compiled tool of the agent is loaded up front; search "
            'finds the tools its Use(...) makes deferred: Use(Toolset, lambda: Deferred("tool"))'
            if view.tools
            else "  nothing to search: the agent has no compiled tools"
        )
        return
    hits = ranked.explain(query, limit)
    # The hidden tools that match, ranked among themselves: those the ranking of every tool
    # would have put past --limit are hidden all the same.
    masked = [t for t in deferred if view.hidden(t.tool)]
    matching = index(masked).search(query, len(masked)) if masked else []
    hidden = [hit.tool_id for hit in matching[:limit]]
    if not hits and not hidden:
        click.echo(
            "  no tool matches (a deferred tool is found only by the words of its ID, title, "
            "description and arguments)"
            if terms
            else "  nothing to search by: the query has no words left once stop words (the, of, "
            "please...) and punctuation are dropped; name what the tool does"
        )
        return
    width = max(len(tool) for tool in [*(h.tool_id for h in hits), *hidden])
    for rank, hit in enumerate(hits, start=1):
        exact = "exact name; " if hit.exact_name else ""
        if hit.name_coverage:
            raised = 1.0 + NAME_COVERAGE * hit.name_coverage
            exact += f"{hit.name_coverage:.0%} of its name used, ×{raised:.3f}; "
        parts = "; ".join(_contribution(t, chosen) for t in hit.terms)
        click.echo(f"  {rank}. {hit.tool_id:<{width}}  score {hit.score:.3f}  [{exact}{parts}]")
    for tool_id in hidden:
        click.echo(
            f"  -  {tool_id:<{width}}  matches, but the agent's run policy hides it: the model "
            "never sees it (see RunPolicy's AllowTags/DenyTags)"
        )
    if len(matching) > len(hidden):
        more = len(matching) - len(hidden)
        click.echo(f"  -  and {more:,} more tool{'s' if more != 1 else ''} the policy hides match")


def _shown(query: str, width: int = 100) -> str:
    """A query as printed: quoted, and cut to ``width`` characters (a pasted document would
    otherwise fill the screen)."""
    if len(query) > width:
        query = query[: width - 1] + "…"
    return repr(query)


def _contribution(term: TermContribution, ranking: str) -> str:
    """One word's share of a score: its contribution, by field for the fields ranking."""
    head = f"{term.term} {term.contribution:.3f}"
    if term.synonym_of is not None:
        head += f" (synonym of {term.synonym_of}, weight {term.weight:g})"
    detail = f"tf {term.tf}, idf {term.idf:.3f}"
    if ranking == "fields":
        by_field = ", ".join(f"{f.field} {f.contribution:.3f}" for f in term.fields)
        return f"{head} = {by_field} ({detail})"
    return f"{head} ({detail})"


@main.command("eval-search")
@click.argument("catalog", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("queries", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--k",
    "k",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="How many hits count (recall@k, nDCG@k).",
)
@click.option(
    "--ranking",
    type=click.Choice(["fields", "classic"]),
    default="fields",
    show_default=True,
    help="The ranking to measure (classic: the spec's plain BM25, the baseline).",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def eval_search(catalog: Path, queries: Path, k: int, ranking: str, as_json: bool) -> None:
    """Measure tool search on CATALOG with the labelled QUERIES.

    CATALOG is a JSON list of tools {"name", "description", "parameters"} (OpenAI or MCP tool
    definitions; an MCP tools/list result, or its whole JSON-RPC response, works too); QUERIES
    a JSON list of {"query", "expected": [tool names]}, each with an optional "kind" label.
    Search documents are built exactly as the generator builds them and ranked by the runtime's
    search. Prints recall@1, recall@k, MRR and nDCG@k, recall@k by kind when queries have one,
    then the 10 worst misses: where the expected tool landed (ranked N of the catalog's tools,
    not found by the query at all, or below the 50 hits read) and what ranked above it. When
    stderr is a
    terminal, progress bars show there (tens of thousands of tools take a while); never on
    stdout, nor on a redirected stderr.

    \b
    Examples:
      agentgen eval-search bench/search_eval/catalog.json bench/search_eval/queries_heldout.json
      agentgen eval-search tools.json queries.json --ranking classic --k 3 --json
    """
    import json

    from agentgen.codegen.progress import terminal_progress
    from agentgen.codegen.search_eval import (
        CatalogError,
        evaluate_search,
        load_catalog,
        load_queries,
    )
    from agentgen.runtime.visible import visible

    try:
        tools = load_catalog(catalog)
        labelled = load_queries(queries, [tool.name for tool in tools])
    except CatalogError as exc:
        unusable(str(exc))
    bars = terminal_progress()
    with bars or contextlib.nullcontext():
        result = evaluate_search(tools, labelled, k=k, ranking=cast(Any, ranking), progress=bars)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return
    click.echo(
        f"{plural(len(labelled), 'query', 'queries')} over {plural(len(tools), 'tool')}, "
        f"ranking {ranking}\n"
        f"recall@1 {result.recall_at_1:.3f}\n"
        f"recall@{k} {result.recall_at_k:.3f}\n"
        f"mrr {result.mrr:.3f}\n"
        f"ndcg@{k} {result.ndcg_at_k:.3f}"
    )
    if result.by_kind:
        kinds = ", ".join(
            f"{visible(kind.kind)} {kind.recall_at_k:.3f} ({kind.queries})"
            for kind in result.by_kind
        )
        click.echo(f"recall@{k} by kind: {kinds}")
    worst = result.worst()
    if worst:
        missed = plural(len(result.misses), "query", "queries")
        click.echo(f"worst misses ({missed} missed the top {k}):")
    # Tool names and kinds come from the files (a catalog may be an MCP server's tools/list):
    # a control character in one is printed as its escape, never obeyed by the terminal.
    for miss in worst:
        where = miss.placed(result.depth, result.tools)
        expected = ", ".join(map(visible, miss.expected))
        click.echo(f"  {_shown(miss.query)}: expected {expected} ({where})")
        click.echo(f"    above it: {', '.join(map(visible, miss.above)) or '(nothing matched)'}")


@main.command()
@click.argument("design", type=click.Path(path_type=Path))
@click.option(
    "--agent",
    "agent_id",
    help="Agent ID (service.agent) or name; every agent of the design when left out.",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def explain(design: Path, agent_id: str | None, as_json: bool) -> None:
    """Show what each agent of DESIGN loads up front and what it finds by search.

    For every agent: its default run policy (the RunPolicy of the design: limits, the model
    call timeout, tag filters); each compiled tool with its source (local, agent, mcp), whether
    it is immediate or deferred, its tags and its toolset's schema fingerprint; the registry
    sources it reads (their tools are resolved at run time); and the size of the first model request
    for OpenAI Responses and Anthropic Messages, in bytes and o200k tokens, as designed and with
    every tool eager. The requests are built by the real adapters and captured in memory:
    nothing is sent. Sizes need the provider SDKs (pip install 'agentgen[openai,anthropic]'),
    token counts need pip install 'agentgen[tokens]'; without them the other columns still
    print.

    \b
    Examples:
      agentgen explain examples/records/design.py
      agentgen explain design.py --agent assistant.assistant
      agentgen explain design.py --json | jq '.agents[].first_request.openai'
    """
    import json

    from agentgen.codegen.explain import explain as explain_agents
    from agentgen.codegen.explain import render_json, render_text

    views = views_or_exit(design, agent_id)
    explanations = explain_agents(views)
    if as_json:
        click.echo(json.dumps(render_json(str(design), explanations), indent=2))
    else:
        click.echo(render_text(explanations) or f"{design}: the design has no agents")


main.add_command(registry)
main.add_command(trace)
main.add_command(worker)


def run() -> None:
    """The ``agentgen`` console script.

    A command is one short process: the cyclic garbage collector is paused for all of it (a
    large design's hundreds of thousands of long-lived objects made every full collection
    slower), and the process ends without tearing those objects down one by one.
    """
    gc.disable()
    try:
        try:
            main()
        except SystemExit as exc:
            code = exc.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
            if not isinstance(code, int | None):
                click.echo(code, err=True)
        else:  # pragma: no cover - click always exits in standalone mode
            status = 0
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        # Past the commands: click's own report of a usage error on a closed stderr, or output
        # written without click.echo (which flushes) that only this flush sends.
        quiet_closed_output()
        status = EXIT_BROKEN_PIPE
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()
