"""Words the benchmarks' synthetic catalogs are made of (toolset domains, verbs, nouns)."""

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
