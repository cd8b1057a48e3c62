"""Words the benchmarks' synthetic catalogs are made of (toolset domains, verbs, nouns)."""

from typing import Any

DOMAINS = [
    "billing", "crm", "calendar", "inventory", "shipping", "support", "analytics", "hr",
    "payments", "documents", "email", "weather", "maps", "search", "security", "devops",
]  # fmt: skip
VERBS = ["get", "list", "create", "update", "delete", "find", "export", "sync", "archive", "check"]
NOUNS = [
    "invoice", "customer", "event", "order", "shipment", "ticket", "report", "employee",
    "payment", "document", "message", "forecast", "route", "record", "alert", "deployment",
    "contract", "refund", "subscription", "note",
]  # fmt: skip


def description(verb: str, noun: str, system: str) -> str:
    """A tool's two-sentence description."""
    return (
        f"{verb.capitalize()} a {noun} in the {system} system. Use it when the user asks "
        f"about a {noun} by its identifier or owner; results are paginated."
    )


def properties(fields: list[tuple[str, dict[str, Any]]], noun: str) -> dict[str, Any]:
    """Payload properties from field templates, ``{noun}`` filled in."""
    return {
        name: {
            key: value.format(noun=noun) if isinstance(value, str) else value
            for key, value in spec.items()
        }
        for name, spec in fields
    }
