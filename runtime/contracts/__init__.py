"""Tool contracts: everything that says what a tool is and how its values are checked.

IDs and titles, JSON Schemas, canonical JSON, fingerprints and registration tokens, the registry
wire declarations, compiled specs and their codecs. Shared by the generator (which emits the
facts as literals) and the runtime (which compiles registry declarations with the same code), so
both always agree. ``contracts.compile`` and ``contracts.fingerprint`` are the two entry points
for dynamic declarations; planning catalogs compile through a :class:`ContractCache` (the
process-wide ``default_cache()``), which anything else that compiles many declarations can use.
"""

from agentgen.runtime.contracts.cache import ContractCache, default_cache
from agentgen.runtime.contracts.compiler import compile
from agentgen.runtime.contracts.declarations import ContractError
from agentgen.runtime.contracts.wire import fingerprint

__all__ = ["ContractCache", "ContractError", "compile", "default_cache", "fingerprint"]
