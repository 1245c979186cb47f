"""The smallest agent: two tools, one task, the result.

    API_KEY=sk-... BASE_URL=https://api.deepseek.com/v1 ETCODE_EXAMPLE_MODEL=deepseek-chat python examples/basic.py
    OPENAI_API_KEY=sk-... python examples/basic.py          # gpt-4o-mini on OpenAI

ETCODE_EXAMPLE_MODEL is "provider/model" or a bare id (with BASE_URL: any OpenAI-compatible server).
"""

import os

from etcode import Agent, tool


@tool
def search(query: str) -> str:
    """Search the web.

    Args:
        query: what to look for
    """
    return f"results for {query!r}: Python was first released in February 1991"


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression such as 2026 - 1991."""
    left, _, right = expression.partition("-")
    return str(int(left) - int(right))


def main() -> None:
    agent = Agent(
        os.getenv("ETCODE_EXAMPLE_MODEL", "gpt-4o-mini"),
        os.getenv("API_KEY"),
        os.getenv("BASE_URL"),
        tools=[search, calculate],
        system_prompt="You look things up and do arithmetic with your tools.",
        name="Research Helper",
        builtin_tools=False,  # only these two tools (and TodoWrite)
    )
    result = agent.run_sync("When was Python released, and how many years ago was that from 2026?")
    print(f"answer: {result.content}")
    print(f"steps: {result.steps}, stop reason: {result.stop_reason}")
    for todo in result.todos:
        print(f"  [{todo['status']}] {todo['content']}")


if __name__ == "__main__":
    main()
