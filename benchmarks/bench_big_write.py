"""End to end: the real ``etcode run`` process writing a large file the model sends.

The fake LLM server streams one WriteFile call whose content is ``--mb`` MB (in 1 MB
argument deltas), then a short answer. Printed: the wall time, the etcode process's peak
RSS, the size of the session database and of the large-message files beside it (the call
is kept there, not in a database row), and the undo copies.

Run: ``python benchmarks/bench_big_write.py [--mb 200]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cli_helpers import write_config  # noqa: E402
from tests.fake_llm import Call, FakeLLM, Reply  # noqa: E402


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="etcode-bench-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        data = root / "data"
        env = {**os.environ, "XDG_DATA_HOME": str(data), "XDG_CONFIG_HOME": str(root / "config"), "HOME": tmp}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(__file__).resolve().parent.parent), env.get("PYTHONPATH", "")]
        )
        content = ("x" * 99 + "\n") * (args.mb * 10_000)
        with FakeLLM() as llm:
            call = Call("WriteFile", {"file_path": "big.txt", "content": content})
            llm.script(Reply(calls=[call], chunk_size=1 << 20), Reply(text="Done."))
            del content, call
            write_config(project, llm)
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "etcode", "run", "--yes", "write it"],
                cwd=project,
                env=env,
                capture_output=True,
                timeout=1800,
            )
            elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"etcode run failed: {proc.stderr.decode(errors='replace')[-500:]}")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        store = data / "etcode"
        print(f"WriteFile of {args.mb} MB through `etcode run` (fake server, 1 MB deltas)")
        print(f"  wall time                 : {elapsed:.1f} s")
        print(f"  peak RSS of etcode        : {peak:.0f} MB")
        print(f"  session database          : {(store / 'etcode.db').stat().st_size / 1e6:.1f} MB")
        print(f"  large-message files       : {folder_size(store / 'messages') / 1e6:.1f} MB")
        print(f"  undo copies beside the db : {folder_size(store / 'snapshots') / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
