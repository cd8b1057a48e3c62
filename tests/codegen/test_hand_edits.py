"""Hand edits to generated files are never lost silently.

Every generated file carries a hash of its content in its header. ``gen`` and ``gen --check``
tell a file edited by hand from a stale one; ``gen`` refuses to overwrite an edited file unless
``--force``; a file is removed as no longer generated only when its hash shows it is untouched
generated output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentgen.codegen.pipeline import generate
from agentgen.codegen.stamp import state
from tests.codegen.test_output import DESIGN, gen

SPECS = "assistant/toolsets/records/specs.py"
CLERK = "assistant/agents/clerk/agent.py"
HASH = re.compile(r"\(hash [0-9a-f]{16}\)")


def project(tmp_path: Path) -> Path:
    (tmp_path / "design.py").write_text(DESIGN)
    code, _, err = gen("design.py", cwd=tmp_path)
    assert code == 0, err
    return tmp_path / "gen"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_every_generated_file_carries_the_hash_of_its_content(tmp_path: Path) -> None:
    out = project(tmp_path)
    files = sorted(p for p in out.rglob("*") if p.suffix in (".py", ".json"))
    assert files
    for path in files:
        text = path.read_text()
        head = text.splitlines()[0] if path.suffix == ".py" else text[:256]
        assert HASH.search(head), path
        assert state(text) == "untouched", path
    schemas = json.loads((out / "assistant/agents/clerk/tool_schemas.json").read_text())
    assert HASH.search(schemas["generated_by"])
    specs = (out / SPECS).read_text()
    assert state(specs.replace("Search records.", "Search records!")) == "edited"
    assert state(HASH.sub("", specs)) == "legacy"  # written before hashes: cannot tell
    assert state("print('mine')\n") == "foreign"


def test_check_tells_edited_from_stale(tmp_path: Path) -> None:
    out = project(tmp_path)
    edit(out / SPECS, "Search records.", "Search records, by hand.")
    (tmp_path / "design.py").write_text(DESIGN.replace("Everything up front.", "All up front."))
    code, _, err = gen("design.py", "--check", cwd=tmp_path)
    assert code == 1
    lines = err.splitlines()
    assert f"  edited:  {SPECS} (edited by hand since it was generated)" in lines
    assert f"  stale:   {CLERK}" in lines
    assert not any(line.startswith("  stale:   " + SPECS) for line in lines)


def test_gen_refuses_to_overwrite_a_hand_edit_without_force(tmp_path: Path) -> None:
    out = project(tmp_path)
    edit(out / SPECS, "Search records.", "Search records, by hand.")
    (tmp_path / "design.py").write_text(DESIGN.replace("Everything up front.", "All up front."))
    before = (out / CLERK).read_text()
    code, _, err = gen("design.py", cwd=tmp_path)
    assert code == 1
    assert (
        "error: gen: refusing to overwrite files edited by hand (their content no longer "
        "matches the hash in their header); nothing was written:"
    ) in err
    assert f"  gen/{SPECS}" in err.splitlines()
    assert "agentgen gen --force" in err
    assert "by hand" in (out / SPECS).read_text()
    assert (out / CLERK).read_text() == before  # nothing was written
    code, out_text, err = gen("design.py", "--force", cwd=tmp_path)
    assert code == 0, err
    assert out_text.startswith("gen: 0 created, 3 updated")
    assert "by hand" not in (out / SPECS).read_text()
    assert state((out / SPECS).read_text()) == "untouched"


def test_only_untouched_generated_files_are_removed(tmp_path: Path) -> None:
    out = project(tmp_path)
    # A file of the user's that happens to carry the header (copied from a generated one).
    mine = out / "assistant/agents/clerk/mine.py"
    mine.write_text((out / CLERK).read_text() + "\nEXTRA = 1\n")
    # A generated file that is no longer produced once the clerk is gone.
    (tmp_path / "design.py").write_text(
        DESIGN.replace('    Agent("clerk", "Everything up front.", lambda: Use(Records))\n', "")
    )
    code, _, err = gen("design.py", cwd=tmp_path)
    assert code == 0, err
    assert not (out / CLERK).exists()
    assert mine.exists()
    assert (
        "kept: gen/assistant/agents/clerk/mine.py (it carries agentgen's header, but was "
        "edited by hand or written by an older agentgen: delete it if it is a leftover)"
    ) in err
    result = generate(tmp_path / "design.py", out, check=True)
    assert result.up_to_date and result.kept == ("assistant/agents/clerk/mine.py",)


def test_files_written_before_hashes_are_replaced_but_never_removed(tmp_path: Path) -> None:
    out = project(tmp_path)
    for path in (out / SPECS, out / CLERK):
        path.write_text(HASH.sub("", path.read_text()))
    (tmp_path / "design.py").write_text(
        DESIGN.replace('    Agent("clerk", "Everything up front.", lambda: Use(Records))\n', "")
    )
    result = generate(tmp_path / "design.py", out)
    assert result.updated == (SPECS,) and result.edited == ()
    assert state((out / SPECS).read_text()) == "untouched"
    assert (out / CLERK).exists() and result.kept == (CLERK,) and CLERK not in result.removed
    assert "assistant/agents/clerk/register.py" in result.removed  # untouched: removed


def test_an_edit_is_noticed_by_the_no_change_cache_and_a_kept_file_does_not_defeat_it(
    tmp_path: Path,
) -> None:
    out = project(tmp_path)
    (out / "assistant/mine.py").write_text(
        HASH.sub("(hash 0123456789abcdef)", (out / CLERK).read_text())
    )
    # A kept file is reported by a generation and does not make the next one load the design.
    first = generate(tmp_path / "design.py", out, use_cache=False)
    assert first.kept == ("assistant/mine.py",)
    assert generate(tmp_path / "design.py", out).from_cache
    edit(out / SPECS, "Search records.", "Search records, by hand.")
    again = generate(tmp_path / "design.py", out)
    assert not again.from_cache and again.edited == (SPECS,)
