"""What asking a local server for its window costs ``etcode run`` (one answer, fake server on
127.0.0.1): no probe (a hosted provider id), a fresh probe answered at once (llama.cpp's
``/props``), a cached answer, and a server whose ``/props`` takes 5 s. Target: the slow server
adds at most ~0.3 s (the probe's grace), the others next to nothing.

Run: ``python benchmarks/bench_discovery.py``
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_llm import FakeLLM, Reply  # noqa: E402

REPEATS = 5
PROPS = {"default_generation_settings": {"n_ctx": 32768}, "chat_template_caps": {"supports_tools": True}}


def one_run(project: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "etcode", "run", "hello"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"etcode run failed: {proc.stderr.strip()[-300:]}")
    return elapsed


def case(name: str, provider_id: str, delay: float | None, cached: bool) -> tuple[str, float]:
    times: list[float] = []
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if delay is not None:
            llm.page("GET /props", PROPS, delay=delay)
        project = root / "project"
        project.mkdir()
        entry = {"id": provider_id, "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}
        config = {"model": f"{provider_id}/test-model", "provider": [entry]}
        (project / "etcode.json").write_text(json.dumps(config))
        for attempt in range(REPEATS + (1 if cached else 0)):
            cache = root / ("cache" if cached else f"cache{attempt}")  # a fresh cache: asked again
            env = {**os.environ, "XDG_CACHE_HOME": str(cache), "HOME": str(root)}
            llm.script(Reply(text="hi"))
            elapsed = one_run(project, env)
            if not (cached and attempt == 0):  # the first run fills the cache
                times.append(elapsed)
    return name, statistics.median(times)


def main() -> None:
    rows = [
        case("no probe (hosted provider id)", "openai", None, cached=False),
        case("llama.cpp /props at once", "local", 0.0, cached=False),
        case("answer cached on disk", "local", 0.0, cached=True),
        case("/props takes 5 s", "local", 5.0, cached=False),
    ]
    base = rows[0][1]
    print(f"etcode run, one answer, median of {REPEATS}:")
    for name, seconds in rows:
        print(f"  {name:32} {seconds * 1000:7.0f} ms  ({(seconds - base) * 1000:+.0f} ms)")


if __name__ == "__main__":
    main()
