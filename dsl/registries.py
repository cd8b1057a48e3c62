"""Registries: catalogs whose toolsets are published by providers and resolved at run time."""

from __future__ import annotations

from agentgen.dsl.call import Call, Invalid, begin, open_scope
from agentgen.dsl.durations import Duration, parse_duration
from agentgen.dsl.expr import (
    ExportExpr,
    RegistryExpr,
    RegistrySource,
    RetryExpr,
    ToolsetExpr,
    UseExpr,
    VersionExpr,
)
from agentgen.dsl.names import q, shown_int, variable_name

#: The most retries ``Retry`` takes for one registry request. Each retry is another request
#: the registry serves and another wait of up to ``backoff_max``: 100 retries at the default
#: 5 s ceiling already hold a request for over eight minutes, far past any registry
#: ``Timeout`` (30 s unless declared) that bounds the requests of a run. A larger count
#: (``Retry(10**9)``) only kept a provider or a command retrying an outage for ever, where
#: it should fail and say so.
MAX_RETRIES = 100

#: The longest ``backoff_max`` (and so ``backoff_base``) ``Retry`` takes, in seconds: a
#: minute, the longest wait the registry's API carries and Temporal's default
#: ``retry_maximum_interval`` between a planning activity's attempts, so ``MAX_RETRIES`` waits
#: hold a request under two hours. ``Retry(100, "1h", "24h")`` held a provider or a command
#: for days. The runtime's ``RetryPolicy`` holds hand-built policies to the same bound
#: (``agentgen.runtime.registry.client_options.MAX_BACKOFF_S``; the DSL does not import the
#: runtime, a test keeps the two equal).
MAX_BACKOFF_S = 60.0


def Registry(name: str, *args: object) -> RegistryExpr:
    """Declare a registry (``URL`` required; ``Description``, ``Timeout``, ``Retry``...)."""
    call = begin("Registry")
    values, body = call.split_body(args)
    if values:
        call.too_many(values, "a name and a body", 1)
    expr = RegistryExpr(call.loc, None, name=name if isinstance(name, str) else "")
    # A refused argument may be the body written wrongly (``Registry("r", URL(...))``, whose
    # URL then ran outside it): "URL is required" would only repeat that mistake.
    expr.body_rejected = bool(values) and body is None
    call.name("registry", name, arg=(0, "name"))
    if call.at_top_level("at the top level of the design (assign it: Company = Registry(...))"):
        call.ctx.root.registries.append(expr)
    return open_scope(call, expr, body)


def _registry_scope(call: Call) -> RegistryExpr | None:
    return call.expect((RegistryExpr,), "inside a Registry body")


def URL(url: str) -> None:
    """The registry's address (required)."""
    call = begin("URL")
    registry = _registry_scope(call)
    # A repeat is one whatever its value: a refused first URL left the second unquestioned.
    first = registry is not None and _first_setting(call, registry)
    value = call.text("url", url)
    if registry is not None and value is None:
        registry.refused.add("URL")
    if registry is None or value is None or not first:
        return
    registry.url, registry.url_loc = value, call.loc


def _first_setting(call: Call, registry: RegistryExpr) -> bool:
    """Whether this is the registry's first ``call.func``; a repeat is refused, naming the
    line of the first (the last one used to win silently)."""
    return not call.repeated(registry, registry.eval_name())


def APIVersion(version: str) -> None:
    """The registry API version (defaults to ``v1``)."""
    call = begin("APIVersion")
    registry = _registry_scope(call)
    first = registry is not None and _first_setting(call, registry)
    value = call.text("version", version)
    if registry is not None and value is not None and first:
        registry.api_version = value


def _duration_setting(func: str, attr: str, value: Duration, *, positive: bool = False) -> None:
    call = begin(func)
    registry = _registry_scope(call)
    # A repeat is one whatever its value: checked first, so it is reported beside it.
    first = registry is not None and _first_setting(call, registry)
    try:
        seconds = parse_duration(
            value,
            positive=positive,
            hint="give the time allowed, or leave the setting out for the registry's default",
        )
    except ValueError as exc:
        call.error(f"{func} {exc}")
        return
    if registry is not None and first:
        setattr(registry, attr, seconds)


def Timeout(value: Duration) -> None:
    """How long one registry request may take (a zero timeout would fail every request)."""
    _duration_setting("Timeout", "timeout", value, positive=True)


def SyncInterval(value: Duration) -> None:
    """How often consumers may refresh listings of this registry."""
    _duration_setting("SyncInterval", "sync_interval", value)


def CacheTTL(value: Duration) -> None:
    """How long a registry listing may be cached between planning activities."""
    _duration_setting("CacheTTL", "cache_ttl", value)


def Retry(max_retries: int, backoff_base: Duration = 0.1, backoff_max: Duration = 5.0) -> None:
    """Retry failed registry requests ``max_retries`` times with exponential backoff.

    Every problem of the call is reported in one run (a bad count, each bad duration, a base
    above the ceiling, a repeat), each at the argument at fault (a repeat: at the call)."""
    call = begin("Retry")
    registry = _registry_scope(call)
    # A repeat is one whatever its arguments: checked first, so it is reported beside them.
    first = registry is not None and _first_setting(call, registry)
    ok = True
    if isinstance(max_retries, bool) or not isinstance(max_retries, int):
        call.error(
            f"Retry max_retries must be an integer, got {type(max_retries).__name__}",
            arg=(0, "max_retries"),
        )
        ok = False
    elif max_retries < 0:
        call.error(
            f"Retry max_retries must be non-negative, got {shown_int(max_retries)}",
            arg=(0, "max_retries"),
        )
        ok = False
    elif max_retries > MAX_RETRIES:
        call.error(
            f"Retry max_retries must be at most {MAX_RETRIES}, got {shown_int(max_retries)}: "
            "each retry is another request and another wait of up to backoff_max, so an "
            "outage would hold the request instead of failing it; give "
            f"{MAX_RETRIES} or fewer (a longer backoff_max rides out a longer outage)",
            arg=(0, "max_retries"),
        )
        ok = False
    bounds: list[float] = []
    for position, label, value in (
        (1, "backoff_base", backoff_base),
        (2, "backoff_max", backoff_max),
    ):
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            call.error(f"Retry {label} {exc}", arg=(position, label))
            ok = False
            continue
        if seconds > MAX_BACKOFF_S:
            call.error(
                f"Retry {label} must be at most {MAX_BACKOFF_S:g}s, got {seconds:g}s: a longer "
                "wait between retries holds a provider or a command through an outage instead "
                f"of failing it; give {MAX_BACKOFF_S:g}s or less (more retries ride out a "
                "longer outage)",
                arg=(position, label),
            )
            ok = False
        bounds.append(seconds)
    if len(bounds) == 2 and bounds[0] > bounds[1]:
        # Either may be the one to change: the caret is under the base, the message names both.
        call.error(
            f"Retry backoff_base ({bounds[0]:g}s) must not exceed backoff_max ({bounds[1]:g}s); "
            "lower backoff_base or raise backoff_max",
            arg=(1, "backoff_base"),
            related=(call.arg_loc((2, "backoff_max")),),
        )
        ok = False
    if registry is not None and ok and first:
        registry.retry = RetryExpr(call.loc, max_retries, bounds[0], bounds[1])


def _name_for_registry(given: object, usage: str) -> str:
    """For a registry's name passed where its value was meant (``FromRegistry("company", ...)``):
    how to pass the value."""
    if not isinstance(given, str) or not given:
        return ""
    variable = variable_name(given)
    return (
        f"; pass the value Registry(...) returned, not its name: {variable} = "
        f"Registry({q(given)}, ...), then {usage.format(variable)}"
    )


def FromRegistry(registry: RegistryExpr | None, toolset: str) -> RegistrySource | Invalid:
    """The source of a registry-backed toolset: ``Toolset(FromRegistry(Company, "records"))``."""
    call = begin("FromRegistry")
    given: object = registry  # a design may pass anything; say what was wrong
    ok = True
    if given is None:
        call.error(
            "FromRegistry requires a Registry(...) expression, got None",
            arg=(0, "registry"),
        )
        ok = False
    elif not isinstance(given, RegistryExpr):
        call.error(
            f"FromRegistry requires a Registry(...) expression, got {type(given).__name__}"
            f"{_name_for_registry(given, 'FromRegistry({}, ...)')}",
            arg=(0, "registry"),
        )
        ok = False
    if not isinstance(toolset, str) or not toolset:
        call.error("FromRegistry requires a non-empty toolset name", arg=(1, "toolset"))
        ok = False
    if not ok:
        return Invalid()
    assert isinstance(registry, RegistryExpr)
    return RegistrySource(registry=registry, toolset=toolset, loc=call.loc)


def Version(version: str) -> None:
    """Inside the ``Use`` of a registry toolset: require that current published version.

    The pin belongs to this consumer only and never selects an archived version.
    """
    call = begin("Version")
    scope = call.scope
    if isinstance(scope, ToolsetExpr) and scope.is_registry:
        call.error(
            "Version belongs inside the consuming Use(...) of this toolset: it pins that "
            "consumer only"
        )
        return
    use = call.expect((UseExpr, ToolsetExpr), "inside the consuming Use(...) of a registry toolset")
    if use is None:
        return
    target = use.target if isinstance(use, UseExpr) else use
    if isinstance(target, RegistryExpr):
        call.error(
            "Version pins one registry toolset; a whole registry cannot be pinned (use "
            "Toolset(FromRegistry(...)) for the toolset to pin)"
        )
        return
    if not isinstance(target, ToolsetExpr) or not target.is_registry:
        call.error(
            "Version is only valid for FromRegistry toolsets: a toolset of this design is "
            "generated with it, so there is no other version to pin; remove the Version"
        )
        return
    assert isinstance(use, UseExpr)
    # A repeat is one whatever its value: a refused first pin left the second unquestioned.
    first = not call.repeated(use, use.eval_name())
    given: object = version  # a design may pass anything; say what was wrong
    if isinstance(given, int | float) and not isinstance(given, bool):
        call.error(
            f"Version takes the version as a string, got {type(given).__name__} {given!r}; "
            f"write it as its provider publishes it: Version({q(str(given))})",
            arg=(0, "version"),
        )
        return
    if not isinstance(version, str) or not version.strip() or version != version.strip():
        call.error(
            f"Version must be a non-empty string without surrounding spaces, got {version!r}",
            arg=(0, "version"),
        )
        return
    if first:
        use.version = VersionExpr(call.loc, version)


def PublishTo(registry: RegistryExpr) -> None:
    """Publish the enclosing toolset's full contract to ``registry`` (provider side)."""
    call = begin("PublishTo")
    scope = call.scope
    if isinstance(scope, UseExpr):
        target = scope.target
        if isinstance(target, RegistryExpr) or (
            isinstance(target, ToolsetExpr) and target.is_registry
        ):
            call.error(
                "PublishTo on a registry reference: a consumer cannot publish provider contracts; "
                "remove it (the toolset's provider publishes it)"
            )
            return
        if not scope.defines:
            call.error("PublishTo in a Use: publish from the toolset's own definition")
            return
        toolset: ToolsetExpr | None = target if isinstance(target, ToolsetExpr) else None
    elif isinstance(scope, ExportExpr):
        toolset = scope.toolset
    else:
        toolset = call.expect((ToolsetExpr,), "inside a Toolset or Export body")
    if toolset is None:
        return
    if toolset.is_registry:
        call.error(f"registry toolset {q(toolset.name)} cannot be published: its provider owns it")
        return
    given: object = registry  # a design may pass anything; say what was wrong
    if not isinstance(given, RegistryExpr):
        call.error(
            f"PublishTo requires a Registry(...) expression, got {type(given).__name__}"
            f"{_name_for_registry(given, 'PublishTo({})')}"
        )
        return
    for existing, loc in toolset.publish_to:
        if existing is registry:
            call.error(
                f"{toolset.eval_name()} is already published to {registry.eval_name()} "
                f"(line {loc.line})"
            )
            return
    toolset.publish_to.append((registry, call.loc))


__all__ = [
    "MAX_BACKOFF_S",
    "MAX_RETRIES",
    "URL",
    "APIVersion",
    "CacheTTL",
    "FromRegistry",
    "PublishTo",
    "Registry",
    "Retry",
    "SyncInterval",
    "Timeout",
    "Version",
]
