"""Writing generated trees: --check, stale files, and what a Deferred change touches."""

from __future__ import annotations

import errno
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentgen.codegen.cli import main
from agentgen.codegen.loader import load_design
from agentgen.codegen.stamp import PLACEHOLDER, stamp
from tests.codegen.helpers import EXAMPLES, tree

DESIGN = textwrap.dedent(
    """
    from agentgen.dsl import *
    def records():
        Tool("lookup", "Look up a record by its ID.")
        Tool("search", "Search records.")
        Tool("analyze", "Analyze records.")
    Records = Toolset("records", records)
    with Service("assistant"):
        Agent("assistant", "Find records.", lambda: Use(Records, lambda: Deferred("search")))
        Agent("clerk", "Everything up front.", lambda: Use(Records))
    """
)


def gen(*args: str, cwd: Path) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, ["gen", *args])
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def test_gen_writes_then_reports_nothing_to_do(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    code, out, err = gen("design.py", cwd=tmp_path)
    assert code == 0, err
    assert out.startswith("gen: 20 created, 0 updated, 0 removed, 0 unchanged")
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert (code, out) == (0, "gen: 0 created, 0 updated, 0 removed, 20 unchanged\n")
    code, out, _ = gen("design.py", "--check", cwd=tmp_path)
    assert (code, out) == (0, "gen: up to date (20 files)\n")


def test_check_with_force_is_refused_as_a_usage_error(tmp_path: Path) -> None:
    # --force was accepted with --check and silently ignored.
    (tmp_path / "design.py").write_text(DESIGN)
    code, _, err = gen("design.py", "--check", "--force", cwd=tmp_path)
    assert code == 2
    assert "Error: --check and --force cannot be combined" in err
    assert not (tmp_path / "gen").exists()


def test_check_lists_missing_stale_and_extra_files_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    gen("design.py", cwd=tmp_path)
    out = tmp_path / "gen"
    (out / "assistant/agents/clerk/agent.py").unlink()
    # Stale: untouched output of an older generation (a different text, stamped by agentgen).
    specs = out / "assistant/toolsets/records/specs.py"
    older = re.sub(r"\(hash [0-9a-f]{16}\)", PLACEHOLDER, specs.read_text())
    specs.write_text(stamp(older.replace("Search records.", "Search the records.")))
    # Untouched generated output that the design no longer generates (a renamed agent).
    leftover = out / "assistant/agents/old/agent.py"
    leftover.parent.mkdir()
    leftover.write_text((out / "assistant/agents/assistant/agent.py").read_text())
    own = out / "assistant/notes.py"
    own.write_text("# the application's own file\n")
    before = tree(out)
    code, _, err = gen("design.py", "--check", cwd=tmp_path)
    assert code == 1
    assert err.splitlines() == [
        "gen is not what design.py generates:",
        "  missing: assistant/agents/clerk/agent.py",
        "  stale:   assistant/toolsets/records/specs.py",
        "  extra:   assistant/agents/old/agent.py",
        "run `agentgen gen` again and commit the result",
    ]
    assert tree(out) == before
    code, out_text, _ = gen("design.py", cwd=tmp_path)
    assert code == 0
    assert out_text == "gen: 1 created, 1 updated, 1 removed, 18 unchanged\n"
    assert not leftover.exists() and not leftover.parent.exists()
    assert own.read_text() == "# the application's own file\n"
    assert gen("design.py", "--check", cwd=tmp_path)[0] == 0


def test_removed_agent_files_are_cleaned_up(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    gen("design.py", cwd=tmp_path)
    (tmp_path / "design.py").write_text(DESIGN.replace('    Agent("clerk"', '    # Agent("clerk"'))
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert code == 0 and "6 removed" in out
    assert not (tmp_path / "gen/assistant/agents/clerk").exists()


def test_changing_only_a_deferred_selection_changes_only_the_deferred_list(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "records" / "design.py", tmp_path / "design.py")
    gen("design.py", cwd=tmp_path)
    before = tree(tmp_path / "gen")
    design = (tmp_path / "design.py").read_text()
    changed = design.replace('Deferred("search", "analyze")', 'Deferred("search")')
    assert changed != design
    (tmp_path / "design.py").write_text(changed)
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert (code, out.split(":")[1].strip()) == (0, "0 created, 1 updated, 0 removed, 20 unchanged")
    after = tree(tmp_path / "gen")
    (path,) = [p for p in before if before[p] != after[p]]
    assert path == "assistant/agents/assistant/agent.py"
    # The header's content hash changes with the content; the code changes in one line.
    old_lines = set(before[path].splitlines()[1:])
    new_lines = set(after[path].splitlines()[1:])
    assert old_lines - new_lines == {
        'DEFERRED_TOOL_IDS: tuple[str, ...] = ("records.analyze", "records.search")'
    }
    assert new_lines - old_lines == {'DEFERRED_TOOL_IDS: tuple[str, ...] = ("records.search",)'}


def test_unknown_deferred_names_fail_generation_with_the_full_tool_list(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN.replace('Deferred("search")', 'Deferred("serach")'))
    code, _, err = gen("design.py", cwd=tmp_path)
    assert code == 1
    assert 'design.py:9: service "assistant" › agent "assistant" › Use(records): agent ' in err
    assert 'Deferred selects unknown tool "serach" (its tools: lookup, search, analyze)' in err
    assert not (tmp_path / "gen").exists()


def test_a_design_that_declares_nothing_is_an_error_and_removes_nothing(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    gen("design.py", cwd=tmp_path)
    before = tree(tmp_path / "gen")
    # The DSL calls moved into a block that never runs when agentgen loads the design.
    body = DESIGN.replace("\nRecords = ", '\nif __name__ == "__main__":\n  Records = ')
    body = body.replace("\nwith Service", "\n  with Service")
    body = body.replace("\n    Agent", "\n      Agent")
    (tmp_path / "design.py").write_text(body)
    for args in (("design.py",), ("design.py", "--check")):
        code, out, err = gen(*args, cwd=tmp_path)
        assert (code, out) == (1, "")
        assert err == (
            "design.py: the design declares nothing: no Service, Toolset or Registry call ran "
            "while it was evaluated; call them at the module's top level (calls under "
            '`if __name__ == "__main__":` or in a function nothing calls never run)\n'
            "design.py: 1 design error\n"
        )
    assert tree(tmp_path / "gen") == before


def test_generation_makes_no_network_call(tmp_path: Path, monkeypatch: object) -> None:
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("generation tried to open a network connection")

    assert hasattr(monkeypatch, "setattr")
    monkeypatch.setattr(socket, "socket", refuse)  # type: ignore[attr-defined]
    monkeypatch.setattr(socket, "create_connection", refuse)  # type: ignore[attr-defined]
    shutil.copy(EXAMPLES / "company" / "design.py", tmp_path / "design.py")
    code, _, err = gen("design.py", cwd=tmp_path)
    assert code == 0, err


def test_regeneration_with_nothing_changed_skips_loading(
    tmp_path: Path, monkeypatch: object
) -> None:
    from agentgen.codegen import loader

    (tmp_path / "data.txt").write_text("Look up a record by its ID.")
    (tmp_path / "design.py").write_text(
        DESIGN.replace('"Look up a record by its ID."', 'open("data.txt").read()')
    )
    assert gen("design.py", cwd=tmp_path)[0] == 0
    calls: list[object] = []
    real = loader.load_design

    def spy(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    assert hasattr(monkeypatch, "setattr")
    monkeypatch.setattr(loader, "load_design", spy)  # type: ignore[attr-defined]
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert (code, out, calls) == (0, "gen: 0 created, 0 updated, 0 removed, 20 unchanged\n", [])

    # A file the design read changed: load and generate again.
    (tmp_path / "data.txt").write_text("Find one record.")
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert (code, len(calls)) == (0, 1)
    assert "5 updated" in out  # specs, declarations, executor, two tool_schemas.json
    assert "Find one record." in (tmp_path / "gen/assistant/toolsets/records/specs.py").read_text()

    # A generated file edited by hand: generate again, which notices the edit (and restores
    # the file only when forced).
    specs = tmp_path / "gen/assistant/toolsets/records/specs.py"
    specs.write_text(specs.read_text() + "# hand edit\n")
    code, _, err = gen("design.py", cwd=tmp_path)
    assert (code, len(calls)) == (1, 2) and "refusing to overwrite files edited by hand" in err
    code, out, _ = gen("design.py", "--force", cwd=tmp_path)
    assert (code, len(calls)) == (0, 3) and "1 updated" in out
    assert "# hand edit" not in specs.read_text()

    # --no-cache always loads.
    assert gen("design.py", "--no-cache", cwd=tmp_path)[0] == 0
    assert len(calls) == 4


@pytest.mark.parametrize("library", ["PyStemmer", "pydantic", "ruff"])
def test_a_library_that_shapes_generated_bytes_changing_version_loads_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: str
) -> None:
    # Search documents hold PyStemmer's stems, schemas pydantic's JSON Schema, code ruff's
    # formatting: another version may write other bytes, so the no-change cache must not
    # answer for it.
    from importlib import metadata

    from agentgen.codegen import cache, loader

    (tmp_path / "design.py").write_text(DESIGN)
    assert gen("design.py", cwd=tmp_path)[0] == 0
    calls: list[object] = []
    real_load, real_version = loader.load_design, metadata.version

    def spy(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "load_design", spy)
    assert gen("design.py", cwd=tmp_path)[0] == 0 and calls == []
    monkeypatch.setattr(
        cache.metadata,
        "version",
        lambda name: "999.0" if name == library else real_version(name),
    )
    assert gen("design.py", cwd=tmp_path)[0] == 0
    assert len(calls) == 1


def test_changed_imported_module_is_noticed(tmp_path: Path) -> None:
    (tmp_path / "texts.py").write_text('LOOKUP = "Look up a record by its ID."\n')
    (tmp_path / "design.py").write_text(
        DESIGN.replace('"Look up a record by its ID."', "texts.LOOKUP").replace(
            "from agentgen.dsl import *", "from agentgen.dsl import *\nimport texts"
        )
    )
    assert gen("design.py", cwd=tmp_path)[0] == 0
    (tmp_path / "texts.py").write_text('LOOKUP = "Fetch a record."\n')
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert code == 0 and "5 updated" in out


def test_files_of_the_application_at_generated_paths_are_never_overwritten(
    tmp_path: Path,
) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    app = tmp_path / "app"
    (app / "assistant").mkdir(parents=True)
    (app / "__init__.py").write_text("APP = 'my own code'\n")
    (app / "assistant" / "__init__.py").write_text("")
    (app / "main.py").write_text("print('hello')\n")
    before = tree(app)
    code, out, err = gen("design.py", "-o", "app", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "error: app: refusing to overwrite what agentgen did not generate (no generated header) "
        "at generated paths; nothing was written:",
        "  app/__init__.py",
        "  app/assistant/__init__.py",
        "move those files out of the output folder, or choose another output folder with -o",
    ]
    assert tree(app) == before
    code, _, err = gen("design.py", "-o", "app", "--check", cwd=tmp_path)
    assert code == 1
    lines = err.splitlines()
    assert lines[1:3] == [
        "  conflict: __init__.py (not generated by agentgen)",
        "  conflict: assistant/__init__.py (not generated by agentgen)",
    ]
    assert "  missing: assistant/toolsets/records/specs.py" in lines
    # Running `agentgen gen` again would refuse in the same way: the conflicts go first.
    assert lines[-1] == (
        "move those files out of the output folder, or choose another output folder with -o"
    )
    assert "run `agentgen gen` again and commit the result" not in lines
    assert tree(app) == before
    # Once they are moved away, generation proceeds and keeps the application's other files.
    (app / "__init__.py").unlink()
    (app / "assistant" / "__init__.py").unlink()
    code, _, err = gen("design.py", "-o", "app", cwd=tmp_path)
    assert code == 0, err
    assert (app / "main.py").read_text() == "print('hello')\n"


def test_gen_help_describes_conflicts() -> None:
    result = CliRunner().invoke(main, ["gen", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert (
        "--check Write nothing; exit 1 if OUTPUT is not current, listing missing, stale, edited "
        "and extra files and conflicts (files at generated paths that agentgen did not generate)."
    ) in text
    assert (
        "A file at a generated path that agentgen did not generate (no generated header) is a "
        "conflict: gen refuses to overwrite it, lists the conflicts and writes nothing."
    ) in text


def test_a_file_where_a_generated_folder_goes_is_a_conflict(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "assistant").write_text("not a folder\n")
    code, _, err = gen("design.py", cwd=tmp_path)
    assert code == 1
    assert "  gen/assistant/__init__.py" in err.splitlines()
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == ["assistant"]
    # A folder where a generated file goes.
    (tmp_path / "gen" / "assistant").unlink()
    (tmp_path / "gen" / "__init__.py").mkdir()
    code, _, err = gen("design.py", cwd=tmp_path)
    assert code == 1 and "  gen/__init__.py" in err.splitlines()
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == ["__init__.py"]


def test_an_output_folder_above_another_generation_leaves_it_alone(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "design.py").write_text(DESIGN)
    assert gen("other/design.py", cwd=tmp_path)[0] == 0
    before = tree(tmp_path / "other" / "gen")
    (tmp_path / "design.py").write_text(DESIGN.replace('"clerk"', '"helper"'))
    code, out, err = gen("design.py", "-o", ".", cwd=tmp_path)
    assert (code, out) == (0, ".: 20 created, 0 updated, 0 removed, 0 unchanged\n"), err
    assert tree(tmp_path / "other" / "gen") == before
    assert gen("design.py", "-o", ".", "--check", cwd=tmp_path)[:2] == (
        0,
        ".: up to date (20 files)\n",
    )


def test_an_empty_output_folder_option_is_refused(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    code, _, err = gen("design.py", "-o", "", cwd=tmp_path)
    assert code == 2
    assert err.splitlines()[-1] == (
        "Error: Invalid value for '-o' / '--output': is empty; name a folder, or leave -o out "
        "for gen/ next to DESIGN"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["design.py"]


def test_an_output_folder_under_a_file_is_named_not_listed_as_conflicts(tmp_path: Path) -> None:
    (tmp_path / "design.py").write_text(DESIGN)
    (tmp_path / "build").write_text("a file\n")
    for check in ((), ("--check",)):
        code, out, err = gen("design.py", "-o", "build/gen", *check, cwd=tmp_path)
        assert (code, out) == (2, "")
        assert err == (
            "error: output folder build/gen cannot be created: build is a file, not a folder; "
            "choose another output folder with -o\n"
        )
    assert (tmp_path / "build").read_text() == "a file\n"


def test_an_output_folder_that_cannot_be_written_is_named_not_reported_as_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentgen.codegen import output

    def refuse(target: Path, text: str) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(target))

    (tmp_path / "design.py").write_text(DESIGN)
    with monkeypatch.context() as patch:
        patch.setattr(output, "_replace", refuse)
        code, out, err = gen("design.py", cwd=tmp_path)
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith("error: cannot write gen/")
    assert line.endswith(
        ": Permission denied; make the output folder gen writable or choose another one with -o; "
        "files were written part-way: run `agentgen gen` again once it can write, to complete "
        "the generation"
    )
    assert "Traceback" not in err
    code, out, err = gen("design.py", cwd=tmp_path)  # completes it (and removes the journal)
    assert (code, out) == (0, "gen: 20 created, 0 updated, 1 removed, 0 unchanged\n"), err
    assert gen("design.py", "--check", cwd=tmp_path)[0] == 0


def test_a_new_file_in_a_listed_folder_is_noticed(tmp_path: Path, monkeypatch: object) -> None:
    from agentgen.codegen import loader

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "lookup.txt").write_text("Look up a record by its ID.")
    (tmp_path / "design.py").write_text(
        "from glob import glob\n"
        "from pathlib import Path\n"
        "from agentgen.dsl import *\n"
        "def tools():\n"
        '    for path in sorted(glob("tools/*.txt")):\n'
        "        Tool(Path(path).stem, Path(path).read_text())\n"
        'Records = Toolset("records", tools)\n'
        'Service("assistant", lambda: Agent("assistant", "Finds.", lambda: Use(Records)))\n'
    )
    code, out, err = gen("design.py", cwd=tmp_path)
    assert code == 0, err
    loads: list[object] = []
    real = loader.load_design

    def spy(*args: object, **kwargs: object) -> object:
        loads.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    assert hasattr(monkeypatch, "setattr")
    monkeypatch.setattr(loader, "load_design", spy)  # type: ignore[attr-defined]
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert (code, out, loads) == (0, "gen: 0 created, 0 updated, 0 removed, 14 unchanged\n", [])
    (tmp_path / "tools" / "search.txt").write_text("Search records.")
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert code == 0 and "0 updated" not in out and len(loads) == 1
    assert "records.search" in (tmp_path / "gen/assistant/toolsets/records/specs.py").read_text()
    # A folder the design globs that does not exist yet is watched as well.
    (tmp_path / "design.py").write_text(
        (tmp_path / "design.py")
        .read_text()
        .replace('sorted(glob("tools/*.txt"))', 'sorted(glob("tools/*.txt") + glob("more/*.txt"))')
    )
    assert gen("design.py", cwd=tmp_path)[0] == 0
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "analyze.txt").write_text("Analyze records.")
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert code == 0 and "0 updated" not in out
    assert "records.analyze" in (tmp_path / "gen/assistant/toolsets/records/specs.py").read_text()


def test_a_folder_listed_by_a_module_the_design_imports_is_noticed(tmp_path: Path) -> None:
    # The helper lists the folder while it is being imported, with importlib's frames further
    # up the stack: the listing is still the design's, not the import machinery's.
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "lookup.json").write_text('{"description": "Look up a record."}')
    (tmp_path / "helper.py").write_text(
        "import json\n"
        "from glob import glob\n"
        "from pathlib import Path\n"
        'TOOLS = {Path(p).stem: json.loads(Path(p).read_text()) for p in glob("tools/*.json")}\n'
    )
    (tmp_path / "design.py").write_text(
        "import helper\n"
        "from agentgen.dsl import *\n"
        "def tools():\n"
        "    for name, spec in sorted(helper.TOOLS.items()):\n"
        '        Tool(name, spec["description"])\n'
        'Records = Toolset("records", tools)\n'
        'Service("assistant", lambda: Agent("assistant", "Finds.", lambda: Use(Records)))\n'
    )
    assert gen("design.py", cwd=tmp_path)[0] == 0
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert (code, out) == (0, "gen: 0 created, 0 updated, 0 removed, 14 unchanged\n")
    (tmp_path / "tools" / "search.json").write_text('{"description": "Search records."}')
    code, out, _ = gen("design.py", cwd=tmp_path)
    assert code == 0 and "0 updated" not in out
    assert "records.search" in (tmp_path / "gen/assistant/toolsets/records/specs.py").read_text()
    # What the import machinery lists to find the helper (the design's folder) is not watched.
    listed: set[str] = set()
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        load_design("design.py", listed=listed)
    finally:
        os.chdir(old)
    assert listed == {str(tmp_path / "tools")}


def test_the_default_output_folder_is_next_to_the_design(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "design.py").write_text(DESIGN)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, err = gen("../project/design.py", cwd=elsewhere)
    assert code == 0, err
    assert out.startswith("../project/gen: 20 created")
    assert (project / "gen" / "assistant" / "agents" / "clerk" / "agent.py").is_file()
    assert list(elsewhere.iterdir()) == []
    # -o stays relative to the current folder, as paths on a command line are.
    code, _, err = gen("../project/design.py", "-o", "out", cwd=elsewhere)
    assert code == 0, err
    assert (elsewhere / "out" / "__init__.py").is_file()


def test_gen_help_states_the_default_output_folder_and_the_cache() -> None:
    result = CliRunner().invoke(main, ["gen", "--help"], terminal_width=200)
    text = " ".join(result.stdout.split())
    assert "[default: (gen/ in the folder of DESIGN)]" in text
    assert "$AGENTGEN_CACHE_DIR, else $XDG_CACHE_HOME/agentgen, else ~/.cache/agentgen" in text


def test_a_folder_generated_from_another_design_is_refused(tmp_path: Path) -> None:
    """Two design files in one folder both default to gen/: the second once removed every
    package of the first without a word."""
    (tmp_path / "tools_a.py").write_text(DESIGN)
    (tmp_path / "tools_b.py").write_text(DESIGN.replace('"assistant"', '"support"'))
    assert gen("tools_a.py", cwd=tmp_path)[0] == 0
    before = tree(tmp_path / "gen")
    for check in ((), ("--check",)):
        code, out, err = gen("tools_b.py", "--no-cache", *check, cwd=tmp_path)
        assert (code, out) == (2, "")
        assert err == (
            "error: output folder gen holds the packages generated from tools_a.py, not from "
            "tools_b.py: generating tools_b.py there would remove them; give each design its "
            "own output folder with -o (for example -o tools_b_gen), or pass --force if "
            "tools_b.py is tools_a.py renamed\n"
        )
    assert tree(tmp_path / "gen") == before
    assert gen("tools_b.py", "-o", "tools_b_gen", cwd=tmp_path)[0] == 0
    assert gen("tools_a.py", "--check", cwd=tmp_path)[0] == 0
    # A renamed design takes its folder over when told to.
    (tmp_path / "tools_a.py").rename(tmp_path / "tools.py")
    code, out, err = gen("tools.py", "--force", cwd=tmp_path)
    assert code == 0, err
    assert gen("tools.py", "--check", cwd=tmp_path)[0] == 0
