"""The quickstart's design: a chat agent whose tools are mostly loaded on demand.

The agent ``quickstart.chat`` can read the calendar up front (``calendar.list_events`` stays
immediate) and reaches everything else -- the weather forecast, creating events, currency
conversion -- only by searching for it. The forecast is deferred on purpose: answering "what
is the weather in Tokyo?" makes the model search, load ``weather.forecast`` and call it, which
is what ``python -m examples.quickstart.tool_search`` shows step by step.

Descriptions matter here: tool search ranks deferred tools by their ID, title and description,
so each one says plainly what the tool does and words it the way a user would ask.
"""

from typing import Literal

from pydantic import BaseModel, Field

from agentgen.dsl import Agent, Args, Deferred, Description, Return, Service, Tool, Toolset, Use

# --- weather ------------------------------------------------------------------------------


class ForecastArgs(BaseModel):
    city: str = Field(description="City name, for example Tokyo or Paris.")


class Forecast(BaseModel):
    city: str
    conditions: str = Field(description="Sky conditions, such as sunny or light rain.")
    temperature_c: int = Field(description="Temperature in degrees Celsius.")
    wind: str = Field(description="Wind in words, such as light breeze.")
    summary: str = Field(description="One line for the user, e.g. 'Tokyo: sunny, 24°C'.")


def weather() -> None:
    Description("Weather conditions and forecasts.")
    Tool(
        "forecast",
        "Get today's weather forecast for a city: conditions, temperature and wind.",
        lambda: (Args(ForecastArgs), Return(Forecast)),
    )


Weather = Toolset("weather", weather)

# --- calendar -----------------------------------------------------------------------------


class ListEventsArgs(BaseModel):
    day: str = Field(description="The day to list, as YYYY-MM-DD.")


class Event(BaseModel):
    id: str
    title: str
    start: str = Field(description="Start time, ISO 8601.")
    end: str = Field(description="End time, ISO 8601.")


class Events(BaseModel):
    events: list[Event]


class CreateEventArgs(BaseModel):
    title: str = Field(description="What the event is about.")
    start: str = Field(description="Start time, ISO 8601.")
    end: str = Field(description="End time, ISO 8601.")
    attendees: list[str] = Field(default_factory=list, description="Email addresses to invite.")


def calendar() -> None:
    Description("The user's calendar.")
    Tool(
        "list_events",
        "List the user's calendar events on one day.",
        lambda: (Args(ListEventsArgs), Return(Events)),
    )
    Tool(
        "create_event",
        "Create a calendar event and invite attendees to the meeting.",
        lambda: (Args(CreateEventArgs), Return(Event)),
    )


Calendar = Toolset("calendar", calendar)

# --- currency -----------------------------------------------------------------------------


class ConvertArgs(BaseModel):
    amount: float = Field(description="The amount of money to convert.")
    source: str = Field(description="ISO 4217 code of the currency to convert from, e.g. USD.")
    target: str = Field(description="ISO 4217 code of the currency to convert to, e.g. JPY.")


class Conversion(BaseModel):
    amount: float
    currency: str
    rate: float = Field(description="Units of the target currency per unit of the source.")


class RatesArgs(BaseModel):
    base: str = Field(description="ISO 4217 code of the base currency.")
    period: Literal["day", "week", "month"] = "week"


class RateHistory(BaseModel):
    base: str
    rates: dict[str, list[float]] = Field(description="Daily rates per currency code.")


def currency() -> None:
    Description("Money and exchange rates.")
    Tool(
        "convert",
        "Convert an amount of money from one currency to another at today's exchange rate.",
        lambda: (Args(ConvertArgs), Return(Conversion)),
    )
    Tool(
        "rate_history",
        "Show how exchange rates against a base currency moved over the past day, week or month.",
        lambda: (Args(RatesArgs), Return(RateHistory)),
    )


Currency = Toolset("currency", currency)

# --- the agent ----------------------------------------------------------------------------

with Service("quickstart"):
    with Agent("chat", "A helpful assistant for everyday questions: weather, calendar, money."):
        Use(Weather, Deferred)  # the forecast is found by search
        Use(Calendar, lambda: Deferred("create_event"))  # list_events stays immediate
        Use(Currency, Deferred)
