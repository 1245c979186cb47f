"""Peak memory and storage of WriteFile/Edit on a large file, with the session's undo copy.

Each case runs in a fresh subprocess (so ``ru_maxrss`` is its own peak), with a real
session store in a temporary data dir, the session's snapshot recorder and the real tools
(the model's arguments are built in memory: the content string a model would send is
counted in the baseline). Printed per case: the RSS before the tool call (the arguments
already in memory), the peak, the database size and the size of the undo copies kept
outside it.

Cases: WriteFile replacing an existing file with new content of the same size; Edit of
one line in the file — each with the default cap (``snapshot.maxFileBytes``, 50 MB: the
file gets no copy) and with a cap above the file (a streamed copy beside the database);
WriteFile creating a new file.

Run: ``python benchmarks/bench_snapshots.py [--mb 200]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import asyncio, json, os, resource, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from etcode.util.memory import keep_freed_memory
keep_freed_memory()  # as `etcode run` does
from etcode.session.store import SessionStore
from etcode.session.snapshots import FileSnapshots
from etcode.tools.base import ToolContext
from etcode.tools.edit import EditParams, EditTool
from etcode.tools.snapshot import STATE_KEY
from etcode.tools.write_file import WriteFileParams, WriteFileTool

case, work, size, cap = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
line = "the quick brown fox jumps over the lazy dog, again and again and again!!\n"
target = work / "project" / "big.txt"
if case != "create":
    with open(target, "w", encoding="utf-8") as handle:
        for i in range(size // len(line)):
            handle.write(line)
        handle.write("THE END\n")
store = SessionStore.open(work / "data" / "etcode.db")
store.create_session("ses_bench", project_id="proj", directory=str(work / "project"))
ctx = ToolContext("ses_bench", "call_1", work / "project", work / "project")
try:
    ctx.state[STATE_KEY] = FileSnapshots(store, "ses_bench", 1, max_file_bytes=cap)
except TypeError:  # before snapshot.maxFileBytes: every file is copied into the database
    ctx.state[STATE_KEY] = FileSnapshots(store, "ses_bench", 1)
if case == "edit":
    tool, params = EditTool(), EditParams(file_path="big.txt", old_string="THE END", new_string="THE NEW END")
else:
    content = line.upper() * (size // len(line))
    tool, params = WriteFileTool(), WriteFileParams(file_path="big.txt", content=content)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
asyncio.run(tool.run(params, ctx))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
store.close()
print(json.dumps({"before_kb": before, "peak_kb": peak}))
"""


def tree_size(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_case(case: str, size: int, cap: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="etcode-bench-") as tmp:
        work = Path(tmp)
        (work / "project").mkdir()
        (work / "data").mkdir()
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(ROOT), case, str(work), str(size), str(cap)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0:
            raise SystemExit(f"{case}: the child failed:\n{proc.stderr}")
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        db = sum(
            (work / "data" / name).stat().st_size
            for name in os.listdir(work / "data")
            if name.startswith("etcode.db")
        )
        outside = tree_size(work / "data" / "snapshots")
        return {
            "before_mb": figures["before_kb"] / 1024,
            "peak_mb": figures["peak_kb"] / 1024,
            "db_mb": db / 2**20,
            "copies_mb": outside / 2**20,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="file size in MB (default 200)")
    args = parser.parse_args()
    size = args.mb * 2**20
    print(f"file size {args.mb} MB; RSS figures are ru_maxrss of a fresh subprocess")
    print(f"{'case':<28}{'RSS before':>12}{'peak RSS':>12}{'growth':>10}{'DB':>10}{'copies':>10}")
    over = 50 * 2**20  # the default snapshot.maxFileBytes
    under = 2 * size  # a cap the file is under: it gets a copy
    for case, label, cap in (
        ("overwrite", "WriteFile over, no copy", over),
        ("overwrite", "WriteFile over, copied", under),
        ("edit", "Edit, no copy", over),
        ("edit", "Edit, copied", under),
        ("create", "WriteFile of a new file", over),
    ):
        r = run_case(case.split()[0], size, cap)
        print(
            f"{label:<28}{r['before_mb']:>9.0f} MB{r['peak_mb']:>9.0f} MB"
            f"{r['peak_mb'] - r['before_mb']:>7.0f} MB{r['db_mb']:>7.0f} MB{r['copies_mb']:>7.0f} MB"
        )
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this driver: {self_rss:.0f} MB)")


if __name__ == "__main__":
    main()
