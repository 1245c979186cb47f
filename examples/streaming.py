"""Watching a run as it happens: etcode's detailed events, then the step-level ones.

API_KEY=... BASE_URL=... ETCODE_EXAMPLE_MODEL=... python examples/streaming.py
"""

import asyncio
import os

from etcode import Agent, Renderer, tool
from etcode.session import events


@tool
def search(query: str) -> str:
    """Search the web for query."""
    return f"results for {query!r}: Python 3.13 is the newest release"


def make_agent() -> Agent:
    model = os.getenv("ETCODE_EXAMPLE_MODEL", "gpt-4o-mini")
    return Agent(model, os.getenv("API_KEY"), os.getenv("BASE_URL"), tools=[search], builtin_tools=False)


async def detailed() -> None:
    """Text as it streams, tool calls with their display summaries."""
    agent = make_agent()
    async for event in agent.stream("What is the newest Python version?"):
        if isinstance(event, events.TextDeltaEvent):
            print(event.text, end="", flush=True)
        elif isinstance(event, events.ToolCallStart):
            print(f"\n● {event.name} ({event.summary})")
        elif isinstance(event, events.ToolResultEvent):
            print(f"  └ {event.summary}")
        elif isinstance(event, events.DoneEvent):
            print(f"\n[done: {event.result['stop_reason']}]")
    await agent.aclose()


def steps() -> None:
    """One event per thought, action and observation, printed by the plain Renderer."""
    renderer = Renderer()
    for event in make_agent().run_stream("And the one before it?"):
        print(renderer.render(event))


if __name__ == "__main__":
    asyncio.run(detailed())
    steps()
