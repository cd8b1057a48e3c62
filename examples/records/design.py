"""The spec's Records toolset: lookup stays immediate, search and analyze load on demand."""

from pydantic import BaseModel, Field

from agentgen.dsl import Agent, Args, Deferred, Return, Service, Tool, Toolset, Use


class LookupArgs(BaseModel):
    id: str = Field(description="The record ID.")


class Record(BaseModel):
    id: str
    title: str
    body: str


class SearchArgs(BaseModel):
    query: str = Field(description="Words to look for.")
    limit: int = Field(default=10, ge=1, le=100)


class SearchResult(BaseModel):
    ids: list[str]


class AnalyzeArgs(BaseModel):
    ids: list[str] = Field(description="Records to analyze.")


class Analysis(BaseModel):
    summary: str


def records() -> None:
    Tool("lookup", "Look up a record by its ID.", lambda: (Args(LookupArgs), Return(Record)))
    Tool("search", "Search records.", lambda: (Args(SearchArgs), Return(SearchResult)))
    Tool("analyze", "Analyze records.", lambda: (Args(AnalyzeArgs), Return(Analysis)))


Records = Toolset("records", records)

with Service("assistant"):
    Agent(
        "assistant",
        "Find and analyze records.",
        lambda: Use(Records, lambda: Deferred("search", "analyze")),
    )
    Agent("clerk", "Answer record questions with every tool loaded up front.", lambda: Use(Records))
