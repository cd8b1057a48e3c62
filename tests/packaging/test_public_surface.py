"""The runtime's public surface: what generated packages, docs and applications may import.

Committed generated packages import only names of ``agentgen.runtime`` itself, so internal
modules can move without breaking them; these tests fail when a template starts importing an
internal module, when a public name stops resolving, or when a module has no ``__all__``.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import agentgen.dsl
import agentgen.runtime

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"
#: Public submodules (namespaces of their own, documented in ``agentgen.runtime``'s docstring).
PUBLIC_SUBMODULES = {
    "agentgen.runtime.adapters",
    "agentgen.runtime.contracts",
    "agentgen.runtime.testing",
}


def _runtime_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from agentgen.runtime... import name`` in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentgen.runtime")
        for alias in node.names
    ]


def _generated_files() -> list[Path]:
    return sorted(ROOT.glob("examples/*/gen/**/*.py"))


def test_generated_code_imports_only_public_names() -> None:
    seen: set[str] = set()
    for path in _generated_files():
        for module, name in _runtime_imports(path):
            assert module == "agentgen.runtime", (
                f"{path.relative_to(ROOT)} imports {name} from {module}; generated code "
                "imports only from agentgen.runtime"
            )
            assert name in agentgen.runtime.__all__, f"{name} is not public ({path})"
            seen.add(name)
    # The examples exercise every kind of generated module (local, MCP and agent toolsets,
    # registries, confirmations, paging), so this list covers what the templates import.
    assert {"Runtime", "AgentDefinition", "ToolsetDeclarations", "SpecIndex"} <= seen


def test_templates_import_only_from_the_public_home() -> None:
    pattern = re.compile(r"^from (agentgen\.runtime[\w.]*) import", re.MULTILINE)
    for template in sorted((ROOT / "templates").glob("*.jinja")):
        for module in pattern.findall(template.read_text(encoding="utf-8")):
            assert module == "agentgen.runtime", f"{template.name} imports from {module}"


@pytest.mark.parametrize("name", sorted(agentgen.runtime.__all__))
def test_every_public_name_resolves(name: str) -> None:
    if name in {"AnthropicMessagesModel", "BedrockConverseModel", "OpenAIResponsesModel"}:
        pytest.importorskip({"A": "anthropic", "B": "boto3", "O": "openai"}[name[0]])
    if name in {"RunCancelledError", "TemporalEngine", "TemporalSettings"}:
        pytest.importorskip("temporalio")
    value = getattr(agentgen.runtime, name)
    assert value is not None
    assert name in dir(agentgen.runtime)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = agentgen.runtime.Nope  # type: ignore[attr-defined]


def _modules() -> list[str]:
    names = []
    for path in sorted(RUNTIME.rglob("*.py")):
        relative = path.relative_to(RUNTIME).with_suffix("")
        parts = [p for p in relative.parts if p != "__init__"]
        names.append(".".join(["agentgen.runtime", *parts]))
    return names


@pytest.mark.parametrize("module", _modules())
def test_every_runtime_module_declares_all(module: str) -> None:
    imported = importlib.import_module(module)
    exported = getattr(imported, "__all__", None)
    assert exported is not None, f"{module} has no __all__"
    for name in exported:
        if module == "agentgen.runtime" or module in PUBLIC_SUBMODULES:
            continue  # resolved lazily; checked above and by their own tests
        assert hasattr(imported, name), f"{module}.__all__ names {name}, which it lacks"


def test_importing_the_runtime_loads_nothing_heavy() -> None:
    # The lazy surface: importing the package must not import the provider SDKs, the Temporal
    # SDK or Jinja2.
    import subprocess
    import sys

    probe = (
        "import sys, agentgen.runtime\n"
        "heavy = [m for m in ('openai', 'anthropic', 'boto3', 'jinja2', 'jsonschema', 'pydantic',"
        " 'temporalio')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _runtime_classes() -> set[str]:
    """Every public class defined anywhere under ``runtime/``."""
    return {
        node.name
        for path in RUNTIME.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    }


@pytest.mark.parametrize("page", ["runtime.md", "providers.md", "testing.md"])
def test_runtime_classes_the_user_docs_name_are_importable_from_a_public_home(page: str) -> None:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    # The design's own names (``Confirmation(...)``) belong to agentgen.dsl.
    named = set(re.findall(r"`([A-Z]\w+)(?:\(|`)", text)) & _runtime_classes()
    named -= set(agentgen.dsl.__all__)
    homes = [agentgen.runtime, *(importlib.import_module(m) for m in sorted(PUBLIC_SUBMODULES))]
    hidden = sorted(n for n in named if not any(n in getattr(h, "__all__", ()) for h in homes))
    assert hidden == [], f"docs/{page} names {hidden}, which no public module exports"
