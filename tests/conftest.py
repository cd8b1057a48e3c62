"""Shared helpers: run a design given as source text and look at its errors.

Designs in tests mark the lines where an error is expected with ``# <-``, so each rule's test
checks the reported line as well as the text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from agentgen.codegen.pipeline import check_file
from agentgen.dsl.errors import DesignError, DesignErrors
from agentgen.dsl.expr import RootExpr
from agentgen.runtime.testing import record_telemetry

# Property tests assert what holds, never how fast: hypothesis's default 200 ms deadline per
# example failed test_order_never_matters (about 3.5 ms an example) on a loaded machine.
settings.register_profile("agentgen", deadline=None)
settings.load_profile("agentgen")

HEADER = "from agentgen.dsl import *\n"
MARK = "# <-"


class DesignRunner:
    """Writes a design into a temporary folder, loads it, returns its tree or its errors."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.count = 0

    def write(self, source: str, name: str | None = None) -> Path:
        self.count += 1
        path = self.tmp_path / (name or f"design_{self.count}.py")
        path.write_text(HEADER + textwrap.dedent(source))
        return path

    def load(self, source: str) -> RootExpr:
        """The tree of a valid design (every check passed); ``DesignErrors`` otherwise."""
        checked = check_file(self.write(source))
        if checked.errors:
            raise DesignErrors(checked.errors)
        return checked.root

    def errors(self, source: str) -> list[DesignError]:
        """Every error of the design, as ``agentgen validate`` reports them."""
        checked = check_file(self.write(source))
        if not checked.errors:
            raise AssertionError("the design validated, errors were expected")
        return list(checked.errors)

    def check(self, source: str, *fragments: str) -> list[DesignError]:
        """Assert the errors are on the marked lines and each contains its fragment(s).

        ``fragments`` are matched in order against the errors sorted by line; pass one per
        expected error.
        """
        errors = self.errors(source)
        expected_lines = marked_lines(HEADER + textwrap.dedent(source))
        assert [e.loc.line for e in errors] == expected_lines, format_errors(errors)
        assert len(fragments) == len(errors), format_errors(errors)
        for error, fragment in zip(errors, fragments, strict=True):
            assert fragment in str(error), f"{fragment!r} not in {error}"
        return errors


def marked_lines(source: str) -> list[int]:
    lines: list[int] = []
    for number, line in enumerate(source.splitlines(), start=1):
        if MARK in line:
            lines.extend([number] * line.split(MARK, 1)[1].count("<-") + [number])
    return lines


def format_errors(errors: list[DesignError]) -> str:
    return "\n".join(str(e) for e in errors)


@pytest.fixture
def designs(tmp_path: Path) -> DesignRunner:
    return DesignRunner(tmp_path)


Design = Callable[[], object]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        help="rewrite the expected outputs of tests/designs_with_errors",
    )


@pytest.fixture(autouse=True)
def _private_generation_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests never read or write the user's agentgen cache."""
    monkeypatch.setenv("AGENTGEN_CACHE_DIR", str(tmp_path_factory.mktemp("agentgen-cache")))


@pytest.fixture(autouse=True)
def _forget_recorded_spans() -> Iterator[None]:
    """Once a test (or a docs snippet) installs the in-memory OpenTelemetry SDK, it records
    every later test's runs too: the spans a test did not read are dropped after it, so that
    the session does not keep them all (a growing heap slows the collector, and timing tests
    with it)."""
    yield
    if record_telemetry.cache_info().currsize:
        record_telemetry().clear()


#: Words Snowball 2's English stemmer stemmed otherwise than Snowball 3 (agentgen's version).
SNOWBALL_2 = {"added": "ad", "adding": "ad", "paste": "past"}


@pytest.fixture
def snowball_2_stemmer(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyStemmer replaced by one stemming :data:`SNOWBALL_2`'s words as Snowball 2 did (and
    every other word as the installed one), with no stemmer made or word stemmed yet: what an
    environment with another Snowball version gives agentgen."""
    import threading

    import Stemmer  # type: ignore[import-not-found]

    from agentgen.runtime.search import analysis

    real = Stemmer.Stemmer("english")

    class Snowball2:
        def __init__(self, language: str) -> None:
            assert language == "english"

        def stemWord(self, word: str) -> str:
            return SNOWBALL_2.get(word) or str(real.stemWord(word))

    monkeypatch.setattr(Stemmer, "Stemmer", Snowball2)
    monkeypatch.setattr(analysis, "_local", threading.local())
    analysis.stem.cache_clear()
