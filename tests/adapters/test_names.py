"""Provider-visible names (SPEC I4) and the shared tool selection rules (SPEC I3)."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgen.runtime.adapters import NameMap, ProviderNameError, provider_name
from agentgen.runtime.adapters.names import BEDROCK_RESERVED_NAMESPACES
from agentgen.runtime.adapters.selection import select_tools
from agentgen.runtime.model_client import ModelError, ToolChoice, ToolDefinition
from tests.adapters.tools import CATALOG, RECORDS, WEATHER, request

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@pytest.mark.parametrize(
    ("tool_id", "name"),
    [
        ("records.search", "records_search"),
        ("crm-v2.find_contact", "crm-v2_find_contact"),
        ("a.b.c", "a_b_c"),
        ("café.menu", "caf__menu"),
        ("x y/z:1", "x_y_z_1"),
    ],
)
def test_sanitising(tool_id: str, name: str) -> None:
    assert provider_name(tool_id) == name


def test_long_names_end_with_a_stable_hash_of_the_full_id() -> None:
    tool_id = "toolset." + "long_tool_name_" * 6
    name = provider_name(tool_id)
    digest = hashlib.sha256(tool_id.encode()).hexdigest()[:8]
    assert len(name) == 64 and name.endswith("_" + digest)
    assert name == provider_name(tool_id)
    # Two IDs sharing the first 64 characters still get different names.
    assert provider_name(tool_id + "a") != provider_name(tool_id + "b")
    assert len(provider_name("t." + "x" * 62)) == 64  # exactly 64: kept as is
    assert provider_name("t." + "x" * 62) == "t_" + "x" * 62


def test_empty_ids_are_refused() -> None:
    with pytest.raises(ProviderNameError, match="empty ID"):
        provider_name("")


def test_mapping_is_bijective_and_collisions_are_errors() -> None:
    names = NameMap("test", ["records.search", "weather.lookup"])
    assert names.name("records.search") == "records_search"
    assert names.tool_id("weather_lookup") == "weather.lookup"
    assert names.tool_id("unknown") is None
    assert names.add("records.search") == "records_search"  # adding again is harmless
    with pytest.raises(ProviderNameError, match=r"'records\.search' and 'records_search'"):
        names.add("records_search")


def test_reserved_names_are_refused_with_the_reason() -> None:
    with pytest.raises(ProviderNameError, match="tool 'python' would be sent as 'python'"):
        NameMap("test", ["python"], BEDROCK_RESERVED_NAMESPACES)
    names = NameMap("test", ["python", "kit.run"])
    names.reject("python", "is reserved", among=["kit.run"])  # not among: allowed
    with pytest.raises(ProviderNameError, match="is reserved"):
        names.reject("python", "is reserved", among=["python"])


@given(st.lists(st.text(min_size=1, max_size=120), max_size=20, unique=True))
def test_any_catalog_maps_one_to_one_or_fails_loudly(tool_ids: list[str]) -> None:
    try:
        names = NameMap("test", tool_ids)
    except ProviderNameError:
        sanitised = [provider_name(tool_id) for tool_id in tool_ids]
        assert len(set(sanitised)) < len(sanitised)
        return
    for tool_id in tool_ids:
        name = names.name(tool_id)
        assert VALID.match(name)
        assert names.tool_id(name) == tool_id


def test_selection_moves_a_forced_tool_to_eager_and_disables_discovery() -> None:
    selection = select_tools("test", request(choice=ToolChoice("tool", "weather.lookup")))
    assert [tool.id for tool in selection.eager] == ["records.search", "weather.lookup"]
    assert WEATHER not in selection.deferred and selection.discovery is False
    assert select_tools("test", request()).discovery is True
    assert select_tools("test", request(choice=ToolChoice("none"))).discovery is False
    assert select_tools("test", request(tools=(RECORDS,))).discovery is False


@pytest.mark.parametrize(
    ("tools", "choice", "message"),
    [
        ((RECORDS, RECORDS), ToolChoice(), "twice"),
        (CATALOG, ToolChoice("tool", "calendar.create"), "'calendar.create', which is not among"),
        ((), ToolChoice("any"), "at least one tool"),
    ],
)
def test_selection_errors(
    tools: tuple[ToolDefinition, ...], choice: ToolChoice, message: str
) -> None:
    with pytest.raises(ModelError, match=message):
        select_tools("test", request(tools=tools, choice=choice))
