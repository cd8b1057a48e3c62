"""What the registry keeps of each catalog entry: its admission and its declaration's text, the
declaration parsed again only when asked for (a parsed 2,000-tool declaration is 160,000
objects for the garbage collector to walk; ``bench/registry_loop.py`` measures the stalls)."""

from __future__ import annotations

import gc
import uuid
from typing import Any

import pytest

from agentgen.runtime.contracts.declarations import ToolsetDeclaration
from agentgen.runtime.lru import LRU
from agentgen.runtime.registry import kept, operations
from agentgen.runtime.registry.admission import CatalogEntry, catalog_key
from agentgen.runtime.registry.kept import PARSED_KEPT, KeptEntry
from agentgen.runtime.registry.operations import RegistryOperations
from agentgen.runtime.registry.sqlite_store import SQLiteStore
from agentgen.runtime.registry.store import Store
from tests.registry.conftest import FAST
from tests.registry.helpers import SAY, echo_toolset, registration


def wide(name: str, tools: int, tags: tuple[str, ...] = ()) -> ToolsetDeclaration:
    tool = echo_toolset(name).tools[0].to_json()
    return ToolsetDeclaration.model_validate(
        {
            "name": name,
            "description": f"The {name} tools.",
            "tags": list(tags),
            "tools": [{**tool, "name": f"{name}.say_{i}"} for i in range(tools)],
        }
    )


def held(root: object) -> int:
    """How many objects the garbage collector tracks among those ``root`` holds (classes
    aside): what each full collection walks for it."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type) or not gc.is_tracked(item):
            continue
        seen.add(id(item))
        stack.extend(gc.get_referents(item))
    return len(seen)


@pytest.fixture
async def ops() -> Any:
    store = SQLiteStore(":memory:")
    await store.open()
    yield RegistryOperations(store, FAST)
    await store.close()


def named(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


async def test_a_kept_entry_holds_as_many_objects_whatever_its_tools(
    ops: RegistryOperations,
) -> None:
    small, large = named("small"), named("large")
    await ops.register(registration(wide(small, 1)))
    await ops.register(registration(wide(large, 200)))
    kept_small, kept_large = await ops.resolve_entry(small), await ops.resolve_entry(large)
    assert held(kept_large) == held(kept_small) < 50
    # The whole entry, declaration parsed, is what the registry kept before.
    assert held(kept_large.entry()) > 200 * 20


async def test_a_kept_entry_answers_as_the_parsed_stored_entry(ops: RegistryOperations) -> None:
    name = named("set")
    declaration = wide(name, 3, tags=("ops", "Finance"))
    done = await ops.register(registration(declaration))
    await ops.renew(name, done.registration_token, "p1", "i1", 5_000)
    entry = await ops.resolve_entry(name)
    stored = await ops.store.get(catalog_key(name))
    assert stored is not None and entry.stored() == stored
    whole = CatalogEntry.model_validate_json(stored)
    assert entry.entry() == whole and entry.toolset == declaration == whole.toolset
    assert entry.declaration.text == declaration.model_dump_json()
    assert (entry.declaration.name, entry.declaration.tags) == (name, ("ops", "Finance"))
    assert entry.declaration.description == declaration.description
    assert await ops.resolve(name) == (declaration, done.registration_token)
    # Listings and searches read the kept name, description and tags.
    assert name in await ops.list_toolsets(["Finance"])
    assert name in await ops.search_toolsets(f"THE {name.upper()} TOOLS", ["ops"])
    assert name not in await ops.search_toolsets(name, ["missing"])


async def test_an_entry_another_node_wrote_is_kept_from_its_stored_form(
    ops: RegistryOperations, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = named("set")
    declaration = wide(name, 2)
    done = await ops.register(registration(declaration))
    # A registry process that did not write the entry (another node, or after a restart).
    monkeypatch.setattr(operations, "_ENTRIES", LRU(1024))
    monkeypatch.setattr(kept, "_PARSED", LRU(PARSED_KEPT))
    entry = await ops.resolve_entry(name)
    assert isinstance(entry, KeptEntry)
    assert entry.registration_token == done.registration_token
    assert entry.declaration.text == declaration.model_dump_json()
    assert entry.toolset == declaration
    assert entry.stored() == await ops.store.get(catalog_key(name))


async def test_the_parsed_declarations_kept_are_bounded(
    ops: RegistryOperations, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache: LRU[str, ToolsetDeclaration] = LRU(PARSED_KEPT)
    monkeypatch.setattr(kept, "_PARSED", cache)
    declarations = [wide(named("set"), 2) for _ in range(PARSED_KEPT + 3)]
    for declaration in declarations:
        await ops.register(registration(declaration))
    for declaration in declarations:
        entry = await ops.resolve_entry(declaration.name)
        assert entry.toolset == declaration
        assert entry.toolset is entry.toolset  # parsed once while it is among the last few
        assert len(cache.entries) <= PARSED_KEPT
    # A declaration no longer kept parsed is parsed again, the same.
    first = await ops.resolve_entry(declarations[0].name)
    assert first.declaration.text not in cache.entries
    assert first.toolset == declarations[0]
    assert first.declaration.text in cache.entries and len(cache.entries) <= PARSED_KEPT


async def test_the_same_registration_again_keeps_the_declaration_first_admitted(
    ops: RegistryOperations,
) -> None:
    name = named("set")
    first = echo_toolset(name)
    # The same contract (same fingerprint, so the same token), its schema's keys in another
    # order: the admission keeps the declaration it was first admitted with.
    again = echo_toolset(name, payload=dict(reversed(SAY.items())))
    assert again.model_dump_json() != first.model_dump_json()
    one = await ops.register(registration(first))
    two = await ops.register(registration(again, incarnation="i2"))
    assert one.registration_token == two.registration_token
    entry = await ops.resolve_entry(name)
    assert sorted(entry.provider_leases) == ["p1\x00i1", "p1\x00i2"]
    assert entry.declaration.text == first.model_dump_json()


async def test_renewed_forms_of_an_entry_are_bounded_in_bytes(store: Store) -> None:
    # Every renewal stores a new form of the entry and the cache kept each (by count only).
    ops = RegistryOperations(store, FAST)
    token = (await ops.register(registration())).registration_token
    for _ in range(3):
        await ops.renew("echo", token, "p1", "i1", 5_000)
    kept = operations._ENTRIES
    assert kept.max_weight is not None and kept.max_weight <= 512 * 2**20
    assert kept.total == sum(len(raw) for raw in kept.entries)
