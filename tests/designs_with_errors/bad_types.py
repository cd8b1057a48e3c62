from pydantic import BaseModel, field_validator

from agentgen.dsl import Args, Return, Tool, Toolset


class Weird(BaseModel):
    ids: set[int]
    raw: bytes
    pair: tuple[int, int]


class Checked(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def not_blank(cls, value: str) -> str:
        return value.strip()


with Toolset("odd") as Odd:
    Tool("weird", "Uses unsupported field types.", lambda: Args(Weird))
    Tool("checked", "Has a custom validator.", lambda: Return(Checked))


class Tree(BaseModel):
    children: dict[int, "Tree"]


Odd2 = Toolset("odd2", lambda: Tool("tree", "Recursive with int keys.", lambda: Args(Tree)))

# A DSL error too: type problems are reported together with it, in one run.
Odd3 = Toolset("odd3", lambda: Tool("nodesc", lambda: Args(Weird)))
