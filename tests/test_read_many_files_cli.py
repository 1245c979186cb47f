"""ReadManyFiles through the real CLI: one big file must not crowd out the other files, the
errors or the summary in what the model receives, and the ``└`` line shows the failures."""

from __future__ import annotations

import json
from pathlib import Path

from etcode.util.fs import format_size
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply

PATHS = ["big.txt", "file[1].txt", "small.txt", "nope.txt", "gone/*.rs"]


def make_files(project: Path) -> int:
    (project / "big.txt").write_text("".join(f"big line {i}\n" for i in range(1, 3001)), encoding="utf-8")
    (project / "file[1].txt").write_text("the bracket file\n", encoding="utf-8")
    (project / "file1.txt").write_text("a decoy the glob would match\n", encoding="utf-8")
    (project / "small.txt").write_text("small file\n", encoding="utf-8")
    return sum((project / name).stat().st_size for name in PATHS[:3])


def script(llm: FakeLLM) -> None:
    llm.script(Reply(calls=[Call("ReadManyFiles", {"paths": PATHS})]), Reply(text="Read them."))


def tool_result_sent(llm: FakeLLM) -> str:
    """The ReadManyFiles result as the model received it in the next request."""
    messages = llm.requests[1].body["messages"]
    (content,) = [m["content"] for m in messages if m["role"] == "tool"]
    return content


def test_every_file_errors_and_summary_reach_the_model(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    size = make_files(project)
    script(llm)
    proc = etcode("run", "read the files", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    sent = tool_result_sent(llm)
    assert "=== File: file[1].txt (17 B, 1 line) ===\nthe bracket file\n" in sent
    assert "=== File: small.txt (11 B, 1 line) ===\nsmall file\n" in sent
    assert "decoy" not in sent
    assert 'use ReadFile with file_path "big.txt" and offset=' in sent
    assert "=== Errors ===\n- nope.txt: File not found\n- gone/*.rs: No files matched\n" in sent
    summary = sent[sent.index("--- Summary ---") :]
    assert summary.startswith(f"--- Summary ---\nTotal: 3 files, {format_size(size)}\nErrors: 2\n")
    assert "1 file cut short" in summary
    saved = Path(summary.split("saved to ", 1)[1].split("; read it", 1)[0])
    assert "big line 2000\n" in saved.read_text(encoding="utf-8")
    # the └ line (plain renderer, stderr) shows the failures
    assert f"  └ Read 3 files ({format_size(size)}), 2 errors ⚠\n" in proc.stderr


def test_json_event_carries_the_error_count(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    size = make_files(project)
    script(llm)
    proc = etcode("run", "--format", "json", "read the files", cwd=project)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["summary"] == f"Read 3 files ({format_size(size)}), 2 errors ⚠"
    assert result["is_error"] is False
    assert result["data"]["errorCount"] == 2
    assert result["data"]["totalFiles"] == 3
    assert "--- Summary ---" in result["output"] and "=== Errors ===" in result["output"]
