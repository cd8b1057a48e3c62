"""The library pipeline: one checker for every design error, ``generate()``, and bugs that
surface as bugs."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen import GenerationResult, check_file, generate, model_builder
from agentgen.codegen.cli import main

DESIGN = textwrap.dedent(
    """
    from agentgen.dsl import *
    def records():
        Tool("lookup", "Look up a record by its ID.")
        Tool("search", "Search records.")
    Records = Toolset("records", records)
    with Service("assistant"):
        Agent("assistant", "Find records.", lambda: Use(Records, lambda: Deferred("search")))
    """
)


def write(folder: Path, source: str, name: str = "design.py") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args))
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def test_every_type_problem_of_a_model_comes_out_in_one_run(tmp_path: Path) -> None:
    design = write(
        tmp_path,
        """
        from pydantic import BaseModel, field_validator
        from agentgen.dsl import *

        class Odd(BaseModel):
            ids: set[int]
            raw: bytes

            @field_validator("ids")
            @classmethod
            def _positive(cls, value: set[int]) -> set[int]:
                return value

        Odd_ = Toolset("odd", lambda: Tool("weird", "Weird.", lambda: Args(Odd)))
        Service("svc", lambda: Agent("a", "Uses odd.", lambda: Use(Odd_)))
        """,
    )
    messages = [e.message for e in check_file(design).errors]
    assert any("has custom validators" in m for m in messages), messages
    assert any('field "ids": type set[int] is not supported' in m for m in messages), messages
    assert any('field "raw": bytes have no JSON form' in m for m in messages), messages


def test_a_template_with_a_syntax_error_still_reports_unknown_names(tmp_path: Path) -> None:
    design = write(
        tmp_path,
        """
        from pydantic import BaseModel
        from agentgen.dsl import *

        class RefundArgs(BaseModel):
            amount: int

        def refunds():
            with Tool("refund", "Refund a payment."):
                Args(RefundArgs)
                with Confirmation():
                    PromptTemplate("Refund {{ amout }} {% if amount %} now?")
                    DeniedResultTemplate("Refund of {{ amount }} denied.")

        Refunds = Toolset("refunds", refunds)
        Service("svc", lambda: Agent("a", "Refunds.", lambda: Use(Refunds)))
        """,
    )
    messages = [e.message for e in check_file(design).errors]
    assert any("PromptTemplate is not a valid template" in m for m in messages), messages
    assert any('PromptTemplate refers to "amout"' in m for m in messages), messages
    assert len(messages) == 2, messages


def test_validate_and_gen_report_the_same_errors(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
        from agentgen.dsl import *
        Records = Toolset("records", lambda: Tool("lookup", "Look up."))
        with Service("svc"):
            Agent("a", "Defers a typo.", lambda: Use(Records, lambda: Deferred("lokup")))
            Agent("b", "No description.", lambda: Use(Toolset("x", lambda: Tool("t"))))
        """,
    )
    code_v, _, err_v = cli("validate", "design.py", cwd=tmp_path)
    code_g, _, err_g = cli("gen", "design.py", cwd=tmp_path)
    assert code_v == code_g == 1
    assert err_v == err_g
    assert "2 design errors" in err_v
    assert not (tmp_path / "gen").exists()


def test_generate_writes_compares_and_reports(tmp_path: Path) -> None:
    design = write(tmp_path, DESIGN)
    out = tmp_path / "gen"
    first = generate(design, out)
    assert isinstance(first, GenerationResult)
    assert first.errors == () and first.conflicts == ()
    assert set(first.created) == set(first.files) and len(first.files) > 5
    assert first.up_to_date
    checked = generate(design, out, check=True)
    assert checked.up_to_date and checked.created == checked.updated == checked.removed == ()
    specs = out / "assistant/toolsets/records/specs.py"
    specs.write_text(specs.read_text() + "# edited\n")
    # Untouched generated output at a path no longer generated (say, a renamed module).
    old = out / "assistant/toolsets/records/old.py"
    old.write_text((out / "assistant/toolsets/records/declarations.py").read_text())
    changed = generate(design, out, check=True)
    assert not changed.up_to_date
    assert changed.edited == ("assistant/toolsets/records/specs.py",) and changed.updated == ()
    assert changed.removed == ("assistant/toolsets/records/old.py",)
    assert (
        "edited:  assistant/toolsets/records/specs.py (edited by hand since it was generated)"
        in changed.lines()
    )
    refused = generate(design, out, use_cache=False)
    assert refused.edited == ("assistant/toolsets/records/specs.py",) and not refused.up_to_date
    assert old.exists() and specs.read_text().endswith("# edited\n")  # nothing written
    rewritten = generate(design, out, use_cache=False, force=True)
    assert rewritten.updated == ("assistant/toolsets/records/specs.py",)
    assert rewritten.removed == ("assistant/toolsets/records/old.py",)
    assert rewritten.unchanged == len(rewritten.files) - 1
    assert not old.exists()


def test_generate_returns_design_errors_and_writes_nothing(tmp_path: Path) -> None:
    design = write(tmp_path, DESIGN.replace('Deferred("search")', 'Deferred("serach")'))
    result = generate(design, tmp_path / "gen")
    assert not result.up_to_date
    (error,) = result.errors
    assert 'unknown tool "serach"' in error.message
    assert result.files == () and not (tmp_path / "gen").exists()


def test_generate_reports_conflicts_and_writes_nothing(tmp_path: Path) -> None:
    design = write(tmp_path, DESIGN)
    mine = tmp_path / "gen/assistant/toolsets/records/specs.py"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my own file\n")
    result = generate(design, tmp_path / "gen")
    assert result.conflicts == ("assistant/toolsets/records/specs.py",)
    assert not result.up_to_date
    assert mine.read_text() == "# my own file\n"
    assert not (tmp_path / "gen/assistant/agents").exists()


def test_a_bug_in_the_generator_is_reported_as_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, DESIGN)

    def broken(*args: object, **kwargs: object) -> object:
        raise KeyError("oops")

    # build_agent: the toolsets' models were built by the checker (and kept).
    monkeypatch.setattr(model_builder, "build_agent", broken)
    code, _, err = cli("gen", "design.py", "--no-cache", cwd=tmp_path)
    assert code == 3
    assert "Traceback (most recent call last)" in err and "KeyError: 'oops'" in err
    assert "this is a bug in agentgen, please report it" in err
    assert "design error" not in err
    assert not (tmp_path / "gen").exists()


def test_a_design_with_errors_never_reaches_the_builders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No partial mode: an invalid design is checked, reported and stops there.
    write(tmp_path, DESIGN.replace('Deferred("search")', 'Deferred("serach")'))

    def unreachable(*args: object, **kwargs: object) -> object:
        raise AssertionError("the builders ran on an invalid design")

    monkeypatch.setattr(model_builder, "build", unreachable)
    code, _, err = cli("gen", "design.py", cwd=tmp_path)
    assert code == 1 and "1 design error" in err and "bug" not in err


def test_check_file_leaves_other_threads_standard_output_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # check_file and generate are library calls: the loader swapped the process's sys.stdout for
    # stderr while a design ran, so another thread's print went to stderr meanwhile (and a
    # library caller's design print was not where it printed it). Only the CLI sends a
    # design's prints to stderr (its own stdout is read by tools).
    import sys
    import threading
    import types

    loading, printed = threading.Event(), threading.Event()
    sync = types.ModuleType("_agentgen_test_stdout_sync")
    sync.loading, sync.printed = loading, printed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, sync.__name__, sync)

    def other() -> None:
        loading.wait(60)
        print("from another thread")
        printed.set()

    thread = threading.Thread(target=other)
    thread.start()
    design = write(
        tmp_path,
        "import _agentgen_test_stdout_sync as sync\n"
        "sync.loading.set()\n"
        "sync.printed.wait(60)\n"
        'print("from the design")\n' + DESIGN,
    )
    checked = check_file(design)
    thread.join()
    assert not checked.errors
    out, err = capsys.readouterr()
    assert "from another thread" in out and "from another thread" not in err
    assert "from the design" in out
