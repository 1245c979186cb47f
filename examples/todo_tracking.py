"""Following the agent's todo list: TodoWrite is always there, even without the built-in tools;
each change arrives as a TODO_UPDATE event and the final list is result.todos.

    API_KEY=... BASE_URL=... ETCODE_EXAMPLE_MODEL=... python examples/todo_tracking.py
"""

import os

from etcode import Agent, EventType, TodoStore, tool

MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


@tool
def draft(section: str) -> str:
    """Write a draft of one section of the report."""
    return f"draft of {section}: done"


def main() -> None:
    agent = Agent(
        os.getenv("ETCODE_EXAMPLE_MODEL", "gpt-4o-mini"),
        os.getenv("API_KEY"),
        os.getenv("BASE_URL"),
        tools=[draft],
        builtin_tools=False,
        system_prompt="Plan with TodoWrite first, then draft each section.",
    )
    for event in agent.run_stream("Write a report with an introduction and a conclusion."):
        if event.type == EventType.TODO_UPDATE:
            print("todo list:")
            for item in event.data["todos"]:
                print(f"  {MARKS.get(item['status'], '[?]')} {item['content']}")
    result = agent.last_result
    assert result is not None
    print(f"final: {result.content}")
    store = TodoStore()  # the store the TodoWrite tool keeps, for your own bookkeeping
    store.replace(result.todos)
    print(store.format())
    counts = store.counts()
    print(f"{counts['completed']}/{len(result.todos)} completed")


if __name__ == "__main__":
    main()
