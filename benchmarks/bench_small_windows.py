"""Small windows against the real llama.cpp ``llama-server`` (issue 34's report): SmolLM2-135M
with the tool-capable template (``LLAMA_TOOLS=1``) at 1k, 2k, 4k and 8k windows.

Per window, one server (stopped at the end), a recording proxy in front of it
(``tests/llama_proxy.py``, answers capped at ``CAP`` tokens so a CPU finishes), and a fresh
``$XDG_CACHE_HOME`` (no discovery cache, no learned token ratio):

- **first request, real**: ``etcode run --format json "what is 2+2"`` in a fresh folder; the
  server's own count of that request (the result's ``usage``: input + cached input; the run
  makes one request, checked at the proxy).
- **estimate error**: etcode's own count of that first request against the real one, before
  calibration (fresh cache: ratio 1.0) and after (a second run in a new folder, same cache:
  the ratio the first run learned and kept with the server's facts in ``servers.json``).
  etcode's count is computed in this process with the code the run uses: the proxy's
  recorded body is read back into a system text, ``ToolSchema``s and ``Message``s and
  counted by ``etcode.engine.context.TokenEstimator("smollm2").request(raw=True)`` (the
  run's estimator for this model), then scaled by the kept ``token_ratio`` for "after"
  (``ceil(raw * ratio)``, as ``TokenEstimator`` scales). The system text is counted as sent
  (its parts joined), which can differ from the sum of the parts by a token or two.
- **extra requests per 10 turns**: a 10-turn chat (``etcode run --continue``), each turn a
  short note (~120 tokens) and a request for a one-line reply, so a small window fills:
  chat requests seen at the proxy minus 10 (minus tool steps: requests whose last message is
  a tool result), and the ``compactions`` summed from the result lines.

Run: ``TIKTOKEN_CACHE_DIR=/work/shared/tiktoken python benchmarks/bench_small_windows.py``
(``--windows 1024,2048`` for fewer; ~15-25 min on a busy 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"
if (SHARED / "tiktoken").is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken"))

from etcode.engine.context import TokenEstimator  # noqa: E402
from etcode.provider.types import Message, TextPart, ToolSchema  # noqa: E402
from tests.llama_proxy import llama_proxy  # noqa: E402
from tests.llama_servers import tool  # noqa: E402  (the tests' llama-server helper)

WINDOWS = (1024, 2048, 4096, 8192)
QUESTION = "what is 2+2"
CAP = 16
TURNS = 10
RUN_TIMEOUT = 600


def note(turn: int) -> str:
    return (
        f"Note {turn}: the lighthouse on island {turn} was inspected today; the lamp, the lens, "
        f"the stairs and the radio were checked by keeper {turn % 7}, who logged the wind at "
        f"{10 + turn} knots from the north-west, the tide at {turn % 5} metres, two passing "
        f"ships, one fishing boat and a flock of gulls on the rocks near the landing. "
        "Reply with one short line."
    )


class Runner:
    """``etcode run`` in folders of one home (shared discovery cache) against one proxy."""

    def __init__(self, home: Path, port: int) -> None:
        self.home = home
        self.port = port
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "ETCODE_DISCOVERY_WAIT": "60",
        }

    def folder(self, name: str) -> Path:
        folder = self.home / name
        folder.mkdir()
        config = {
            "model": "local/smollm2",
            "provider": [
                {
                    "id": "local",
                    "type": "openai",
                    "baseURL": f"http://127.0.0.1:{self.port}/v1",
                    "apiKey": "x",
                    "options": {"temperature": 0, "seed": 1, "max_tokens": CAP},
                }
            ],
        }
        (folder / "etcode.json").write_text(json.dumps(config))
        return folder

    def run(self, folder: Path, task: str, *, again: bool = False) -> dict[str, Any]:
        args = [sys.executable, "-m", "etcode", "run", "--format", "json"]
        proc = subprocess.run(
            [*args, *(["--continue"] if again else []), task],
            cwd=folder,
            input="",
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env=self.env,
        )
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        if not lines or lines[-1].get("type") != "result":
            raise SystemExit(f"etcode run failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
        return lines[-1]

    def kept_ratio(self) -> float | None:
        path = self.home / ".cache" / "etcode" / "servers.json"
        if not path.is_file():
            return None
        found: list[float] = []

        def walk(value: Any) -> None:
            if isinstance(value, dict):
                if isinstance(value.get("token_ratio"), (int, float)):
                    found.append(float(value["token_ratio"]))
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk(json.loads(path.read_text()))
        return found[-1] if found else None


def real_tokens(result: dict[str, Any]) -> int:
    usage = result["usage"]
    return int(usage["input_tokens"]) + int(usage.get("cache_read_tokens") or 0)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def estimate(body: dict[str, Any]) -> int:
    """etcode's raw count (no calibration) of a recorded Chat Completions body."""
    messages = body["messages"]
    system = [_text(m.get("content")) for m in messages if m.get("role") == "system"]
    rest = [
        Message(role=m["role"], parts=[TextPart(text=_text(m.get("content")))])
        for m in messages
        if m.get("role") in ("user", "assistant")
    ]
    tools = [
        ToolSchema(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
        )
        for t in body.get("tools") or []
    ]
    return TokenEstimator("smollm2").request(system, tools, rest, raw=True)


def chat_bodies(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in bodies if "messages" in b]


def error(estimated: int, real: int) -> str:
    return f"{(estimated - real) / real:+.1%}"


def measure(window: int) -> dict[str, Any]:
    started = time.monotonic()
    proc = tool("start", LLAMA_CTX=str(window), LLAMA_TOOLS="1")
    if proc.returncode != 0:
        raise SystemExit(f"llama-server did not start: {proc.stderr.strip()[-300:]}")
    server = int(proc.stdout.strip().splitlines()[-1])
    try:
        with tempfile.TemporaryDirectory() as tmp, llama_proxy(server) as (port, bodies, controls):
            controls.max_tokens_cap = CAP
            runner = Runner(Path(tmp), port)
            first = runner.run(runner.folder("first"), QUESTION)
            first_bodies = chat_bodies(bodies)
            real_1 = real_tokens(first)
            raw_1 = estimate(first_bodies[0])
            ratio = runner.kept_ratio()
            mark = len(bodies)
            second = runner.run(runner.folder("second"), QUESTION)
            second_bodies = chat_bodies(bodies[mark:])
            real_2 = real_tokens(second)
            raw_2 = estimate(second_bodies[0])
            after = math.ceil(raw_2 * ratio) if ratio else raw_2
            mark = len(bodies)
            chat = runner.folder("chat")
            compactions = 0
            for turn in range(TURNS):
                result = runner.run(chat, note(turn), again=bool(turn))
                compactions += int(result.get("compactions") or 0)
            turns = chat_bodies(bodies[mark:])
            tool_steps = sum(1 for b in turns if b["messages"] and b["messages"][-1].get("role") == "tool")
            return {
                "window": window,
                "real": real_1,
                "requests_1": len(first_bodies),
                "tools": len(first_bodies[0].get("tools") or []),
                "before": error(raw_1, real_1),
                "after": error(after, real_2),
                "requests_2": len(second_bodies),
                "ratio": ratio,
                "extra": len(turns) - TURNS - tool_steps,
                "tool_steps": tool_steps,
                "compactions": compactions,
                "seconds": round(time.monotonic() - started),
            }
    finally:
        tool("stop", str(server))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default=",".join(map(str, WINDOWS)))
    args = parser.parse_args()
    if tool("path").returncode != 0:
        raise SystemExit("llama-server is not built: ../shared/tools/llama-server build")
    rows = []
    for window in (int(w) for w in args.windows.split(",")):
        row = measure(window)
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    head = (
        "window  first req (real)  tools  est. error before  after (ratio)   extra req/10 turns  compactions"
    )
    print(head)
    for r in rows:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "none"
        print(
            f"{r['window']:>6}  {r['real']:>16,}  {r['tools']:>5}  {r['before']:>17}  "
            f"{r['after']:>6} ({ratio})  {r['extra']:>18}  {r['compactions']:>11}"
        )


if __name__ == "__main__":
    main()
