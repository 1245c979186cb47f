"""Four ways to give the agent a tool: a typed function, a pydantic model parameter, a dict in
the agent-loop design's shape, and a Tool subclass.

    API_KEY=... BASE_URL=... ETCODE_EXAMPLE_MODEL=... python examples/custom_tools.py
"""

import asyncio
import os

from pydantic import BaseModel, Field

from etcode import Agent, Tool, ToolResult, tool


@tool
async def weather(city: str) -> str:
    """Today's weather in a city (async tools are awaited)."""
    await asyncio.sleep(0)
    return f"{city}: 21°C, sunny"


class Booking(BaseModel):
    city: str
    nights: int = Field(ge=1, le=30)


@tool
def book_hotel(booking: Booking) -> str:
    """Book a hotel; the parameter arrives as a Booking instance."""
    return f"booked {booking.nights} nights in {booking.city}"


def convert(amount: float, rate: float) -> str:
    return f"{amount * rate:.2f}"


currency = {
    "name": "convert_currency",
    "description": "Convert an amount of money with an exchange rate.",
    "parameters": {
        "type": "object",
        "properties": {"amount": {"type": "number"}, "rate": {"type": "number"}},
        "required": ["amount", "rate"],
    },
    "function": convert,
}


class Packing(Tool):
    """A Tool subclass: full control over parameters, results and the display summary."""

    name = "packing_list"
    description = "A packing list for a number of nights."

    class Params(BaseModel):
        nights: int

    async def run(self, params: "Packing.Params", ctx: object) -> ToolResult:
        items = ["passport", "charger"] + [f"shirt {n + 1}" for n in range(params.nights)]
        return ToolResult(", ".join(items), summary=f"{len(items)} items")


def main() -> None:
    agent = Agent(
        os.getenv("ETCODE_EXAMPLE_MODEL", "gpt-4o-mini"),
        os.getenv("API_KEY"),
        os.getenv("BASE_URL"),
        tools=[weather, book_hotel, currency, Packing()],
        builtin_tools=False,
    )
    result = agent.run_sync(
        "Plan 2 nights in Lisbon: weather, a hotel, 100 EUR in USD at 1.08, what to pack."
    )
    print(result.content)


if __name__ == "__main__":
    main()
