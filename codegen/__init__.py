"""agentgen's generator: from a design file to typed agent packages.

The library entry point is :func:`generate` (``agentgen gen`` is a thin layer over it)::

    from agentgen.codegen import generate

    result = generate("design.py")                 # into gen/ next to design.py; check=True
                                                   # compares only
    for error in result.errors:                    # design errors are data, not exceptions
        print(error)

:func:`check_file` runs every check without generating (``agentgen validate``), and
:func:`model_of` gives the generation model of a valid design (``explain``, ``search``).
Names load on first use: a regeneration answered from the no-change cache imports nothing of
the design machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentgen.runtime.lazy_names import lazy_names

if TYPE_CHECKING:
    from agentgen.codegen.check import CheckedDesign as CheckedDesign
    from agentgen.codegen.loader import DesignFileError as DesignFileError
    from agentgen.codegen.loader import UserCodeError as UserCodeError
    from agentgen.codegen.pipeline import GenerationResult as GenerationResult
    from agentgen.codegen.pipeline import check_file as check_file
    from agentgen.codegen.pipeline import generate as generate
    from agentgen.codegen.pipeline import model_of as model_of

__all__ = [
    "CheckedDesign",
    "DesignFileError",
    "GenerationResult",
    "UserCodeError",
    "check_file",
    "generate",
    "model_of",
]

_HOMES = {
    "CheckedDesign": "agentgen.codegen.check",
    "DesignFileError": "agentgen.codegen.loader",
    "UserCodeError": "agentgen.codegen.loader",
    "GenerationResult": "agentgen.codegen.pipeline",
    "check_file": "agentgen.codegen.pipeline",
    "generate": "agentgen.codegen.pipeline",
    "model_of": "agentgen.codegen.pipeline",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
