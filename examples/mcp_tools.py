"""Tools from an MCP server: the agent starts the servers of its directory's etcode.json and
offers their tools as <server>_<tool>. This one uses the `mcp-server-time` package
(pip install mcp-server-time).

    API_KEY=... BASE_URL=... ETCODE_EXAMPLE_MODEL=... python examples/mcp_tools.py
"""

import json
import os
import sys
import tempfile
from pathlib import Path

from etcode import Agent, EventType


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="etcode-mcp-") as folder:  # removed at the end
        ask(Path(folder))


def ask(project: Path) -> None:
    config = {
        "mcp": {
            "time": {
                "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"],
                "timeout": 30000,  # ms to start and list its tools (a Python server is slow on a busy machine)
            }
        },
        "permission": {"time_*": "allow"},  # the library never asks: allow these tools up front
    }
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    agent = Agent(
        os.getenv("ETCODE_EXAMPLE_MODEL", "gpt-4o-mini"),
        os.getenv("API_KEY"),
        os.getenv("BASE_URL"),
        directory=project,
        builtin_tools=False,
        trust=True,  # this script wrote that etcode.json: approve its MCP command (else refused)
    )
    for event in agent.run_stream("What time is it in Tokyo?"):
        if event.type == EventType.ACTION:
            print(f"● {event.data['tool']} {event.data['args']}")
        elif event.type == EventType.OBSERVATION:
            print(f"  └ {' '.join(event.data['result'].split())[:200]}")
        elif event.type == EventType.LOOP_END:
            print(event.data["content"])


if __name__ == "__main__":
    main()
