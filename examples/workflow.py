"""The workflow agent: a Planner writes a JSON plan of todos, an Executor carries each out with
the tools, a Verifier checks the result (and may start another cycle).

    API_KEY=... BASE_URL=... ETCODE_EXAMPLE_MODEL=... python examples/workflow.py [directory]
"""

import os
import sys
import tempfile
from pathlib import Path

from etcode import Agent, EventType


def main() -> None:
    if len(sys.argv) > 1:
        work_in(Path(sys.argv[1]))
        return
    with tempfile.TemporaryDirectory(prefix="etcode-workflow-") as folder:  # removed at the end
        work_in(Path(folder))


def work_in(directory: Path) -> None:
    (directory / "notes.txt").write_text("the number is 7\n", encoding="utf-8")
    agent = Agent(
        os.getenv("ETCODE_EXAMPLE_MODEL", "gpt-4o-mini"),
        os.getenv("API_KEY"),
        os.getenv("BASE_URL"),
        agent="workflow",
        directory=directory,
    )
    for event in agent.run_stream("Put the number from notes.txt into answer.txt"):
        if event.type == EventType.TODO_UPDATE:
            print("plan: " + "; ".join(f"{t['content']} ({t['status']})" for t in event.data["todos"]))
        elif event.type == EventType.ACTION:
            print(f"● {event.data['tool']} ({event.data['summary']})")
    result = agent.last_result
    assert result is not None
    print(f"verifier: {result.content} [{result.stop_reason}]")
    print(f"answer.txt: {(directory / 'answer.txt').read_text(encoding='utf-8').strip()}")


if __name__ == "__main__":
    main()
