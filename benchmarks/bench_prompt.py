"""System prompt build time: a worktree 10 levels deep with 20 instruction files and 4 URLs
that each answer after 1 s. Target: ~1 s (URLs fetched concurrently, files read
concurrently), not 4 s.

Run: ``python benchmarks/bench_prompt.py``
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from etcode.agent import get_agent  # noqa: E402
from etcode.prompt.instruction import InstructionPrompt, rules_internal_check  # noqa: E402
from etcode.prompt.system import SystemPrompt  # noqa: E402

DELAY = 1.0
LEVELS = 10
URLS = 4
#: The slow servers listen on 127.0.0.1; as a user would, a rule lets instruction URLs reach
#: them (without one an address on this machine is refused, issue 27.9).
LOOPBACK_OK = rules_internal_check({"private_network": {"http://127.0.0.1:*": "allow"}})


class SlowHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        time.sleep(DELAY)
        body = f"# Remote rules {self.path}\n".encode() * 50
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def make_tree(root: Path) -> Path:
    """10 nested folders, each with AGENTS.md and ETCODE.md: 20 files. Returns the deepest."""
    (root / ".git").mkdir()
    folder = root
    for level in range(LEVELS):
        if level:
            folder = folder / f"level{level}"
            folder.mkdir()
        for name in ("AGENTS.md", "ETCODE.md"):
            (folder / name).write_text(f"# {name} at level {level}\n" + "- a rule to follow\n" * 40)
    return folder


async def build_once(directory: Path, root: Path, urls: list[str], global_dir: Path) -> tuple[float, int]:
    instructions = InstructionPrompt(
        directory, root, instructions=urls, global_dir=global_dir, internal_allowed=LOOPBACK_OK
    )
    started = time.perf_counter()
    parts = await SystemPrompt.build(get_agent("build"), "anthropic/claude-sonnet-4", instructions)
    return time.perf_counter() - started, len(parts)


def main(runs: int = 3) -> dict[str, float]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            root.mkdir()
            deepest = make_tree(root)
            urls = [f"{base}/rules{i}.md" for i in range(URLS)]
            figures = []
            for _ in range(runs):
                seconds, count = asyncio.run(build_once(deepest, root, urls, Path(tmp) / "global"))
                figures.append(seconds)
            assert count == 2 + 2 * LEVELS + URLS, count
            files_only = asyncio.run(build_once(deepest, root, [], Path(tmp) / "global"))[0]
    finally:
        server.shutdown()
        server.server_close()
    best, worst = min(figures), max(figures)
    print(f"build(): {LEVELS} levels, {2 * LEVELS} instruction files, {URLS} URLs x {DELAY:.0f} s each")
    print(
        f"  with URLs : best {best:.3f} s, worst {worst:.3f} s over {runs} runs (serial would be {URLS * DELAY:.0f} s)"
    )
    print(f"  files only: {files_only * 1000:.1f} ms")
    return {"best": best, "worst": worst, "files_only": files_only}


if __name__ == "__main__":
    main()
