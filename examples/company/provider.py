"""A provider process: publish toolset ``hr.directory`` to the company registry and serve it.

    python -m examples.company.provider --url http://127.0.0.1:9090 --revision 2026.1

Implements the generated ``DirectoryExecutor`` and hands it to the generated provider wiring
(``gen/hr/toolsets/directory/provider.py``, from ``PublishTo(Company)`` in the design): it
registers the toolset with its fingerprint and revision, claims calls, runs them through the
typed executor, and drains on SIGTERM. Prints one line when registered and one when done.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence

from agentgen.runtime import ServeOptions, ToolContext
from examples.company.gen.hr.toolsets.directory import provider
from examples.company.gen.hr.toolsets.directory import types as directory

#: The directory each revision answers from: revision 2026.2 knows that Ada moved to Zurich.
PEOPLE: Mapping[str, Mapping[str, directory.Person]] = {
    "2026.1": {
        "ada": directory.Person(
            name="Ada Lovelace", team="Analytics", role="Staff engineer", office="London"
        ),
        "grace": directory.Person(
            name="Grace Hopper", team="Compilers", role="Principal engineer", office="New York"
        ),
    },
    "2026.2": {
        "ada": directory.Person(
            name="Ada Lovelace", team="Analytics", role="Staff engineer", office="Zurich"
        ),
        "grace": directory.Person(
            name="Grace Hopper", team="Compilers", role="Distinguished engineer",
            office="New York",
        ),
    },
}  # fmt: skip


class Directory:
    """Implements the generated ``DirectoryExecutor``."""

    def __init__(self, revision: str) -> None:
        self.people = PEOPLE[revision]

    async def find_person(
        self, args: directory.FindPersonArgs, context: ToolContext
    ) -> directory.Person:
        wanted = args.name.lower()
        for key, person in self.people.items():
            if key in wanted or wanted in person.name.lower():
                return person
        raise LookupError(f"nobody called {args.name!r} works here")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.company.provider")
    parser.add_argument("--url", required=True, help="the registry's URL")
    parser.add_argument("--revision", required=True, choices=sorted(PEOPLE))
    parser.add_argument("--lease", type=float, default=45.0, help="lease in seconds")
    args = parser.parse_args(argv)

    def registered(token: str) -> None:
        print(f"registered {token}", flush=True)

    report = asyncio.run(
        provider.serve(
            Directory(args.revision),
            revision=args.revision,
            version=args.revision,
            url=args.url,
            options=ServeOptions(provider_id="hr-directory", lease_seconds=args.lease),
            on_registered=registered,
        )
    )
    print(f"stopped {report.reason} {report.completed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
