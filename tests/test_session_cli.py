"""Sessions end to end: the real `etcode` process, the fake LLM server, a real SQLite file.

Resume (-c, --session), fork, sessions list/show/export/delete, undo without git, and a
run killed with SIGKILL in the middle of a step.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli_helpers import etcode, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Reply, without_environment


def on_a_terminal(argv: list[str], cwd: Path, timeout: float = 60) -> tuple[int, str]:
    """Run ``etcode ARGV`` with a pseudo-terminal as stdin, stdout and stderr (the chat's
    path) until it exits: its exit code and what it wrote."""
    import pty
    import select

    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", *argv], cwd=cwd, stdin=child_fd, stdout=child_fd, stderr=child_fd
    )
    os.close(child_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([main_fd], [], [], 0.5)[0]:
                try:
                    data = os.read(main_fd, 65536)
                except OSError:  # EIO: the child's side is closed
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=max(1.0, deadline - time.monotonic())), b"".join(chunks).decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main_fd)


def user_texts(body: dict) -> list[str]:
    return [without_environment(m["content"]) for m in body["messages"] if m["role"] == "user"]


def test_continue_resumes_the_latest_session(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="The capital is Paris."), Reply(text="About 2.1 million."))
    first = etcode("run", "--format", "json", "capital of France?", cwd=project)
    assert first.returncode == 0, first.stderr
    sid = result_line(first)["session_id"]
    second = etcode("run", "-c", "--format", "json", "and its population?", cwd=project)
    assert second.returncode == 0, second.stderr
    assert result_line(second)["session_id"] == sid
    messages = llm.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "The capital is Paris."
    assert user_texts(llm.requests[1].body) == ["capital of France?", "and its population?"]


def test_session_flag_and_fork(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="one"), Reply(text="two"), Reply(text="forked"), Reply(text="original again"))
    a = result_line(etcode("run", "--format", "json", "first", cwd=project))["session_id"]
    b = result_line(etcode("run", "--format", "json", "unrelated", cwd=project))["session_id"]
    assert a != b
    forked = etcode("run", "--session", a, "--fork", "--format", "json", "in the fork", cwd=project)
    assert forked.returncode == 0, forked.stderr
    fork_id = result_line(forked)["session_id"]
    assert fork_id not in (a, b)
    assert user_texts(llm.requests[2].body) == ["first", "in the fork"]
    again = etcode("run", "--session", a[:-3], "--format", "json", "back to a", cwd=project)  # a prefix
    assert result_line(again)["session_id"] == a
    assert user_texts(llm.requests[3].body) == ["first", "back to a"]  # the fork left a alone
    listed = json.loads(etcode("sessions", "list", "--json", cwd=project).stdout)
    by_id = {s["id"]: s for s in listed}
    assert by_id[fork_id]["parent_id"] == a and by_id[fork_id]["message_count"] == 4


def test_continue_without_a_session_starts_one(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="fresh"))
    proc = etcode("run", "-c", "hello", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "no earlier session" in proc.stderr
    assert proc.stdout == "fresh\n"


def test_bad_session_flags(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    proc = etcode("run", "--fork", "hi", cwd=project)
    assert proc.returncode == 2 and "--fork" in proc.stderr
    proc = etcode("run", "--session", "ses_nope", "hi", cwd=project)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: no session ses_nope (see: etcode sessions list)"
    assert llm.requests == []


def test_a_prefix_of_several_sessions_names_them(project: Path, llm: FakeLLM) -> None:
    """The README's ``--session ses_01a2…``: a prefix that starts several ids says so, in
    every command that reads one, instead of 'no session'."""
    from etcode.instance import describe
    from etcode.session.store import SessionStore

    write_config(project, llm)
    ids = [f"ses_01a2{n}0000000000000000"[:24] for n in (3, 4, 5)]
    store = SessionStore.open()
    try:
        for sid in ids:
            store.create_session(sid, project_id=describe(project).project_id, directory=str(project))
    finally:
        store.close()
    expected = f"ses_01a2 matches 3 sessions: {', '.join(ids)} — give more of the id"
    for argv, flag, code in (
        (["run", "--session", "ses_01a2", "hi"], "--session", 1),
        (["undo", "--session", "ses_01a2"], "--session", 1),
        (["sessions", "show", "ses_01a2"], "session", 1),
        (["sessions", "export", "ses_01a2"], "session", 1),
        (["--session", "ses_01a2"], "--session", 1),  # the chat in a pipe is etcode run
    ):
        proc = etcode(*argv, cwd=project, stdin="hi")
        assert proc.returncode == code, (argv, proc.stderr)
        assert proc.stderr.strip() == f"error: {flag} {expected}"
    # the chat on a terminal: refused before its screen opens (a usage error there, as for an unknown id)
    code, output = on_a_terminal(["--session", "ses_01a2"], cwd=project)
    assert code == 2 and output.strip() == f"error: --session {expected}"
    for prefix in ("ses_01a2", ids[1][:-3]):  # delete takes the whole id only, and says so
        refused = etcode("sessions", "delete", prefix, cwd=project)
        assert refused.returncode == 1
        assert (
            refused.stderr.strip()
            == f"error: no session {prefix} (give the full id; see: etcode sessions list)"
        )
    one = etcode("sessions", "export", ids[1][:-3], cwd=project)  # a unique prefix still works
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["session"]["id"] == ids[1]
    assert llm.requests == []


def test_sessions_list_show_export_delete(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    llm.script(
        Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "notes.txt"})], usage=(100, 10)),
        Reply(text="It says: remember the milk.", usage=(200, 20)),
    )
    run = etcode("run", "--format", "json", "What is in notes.txt? Tell me please", cwd=project)
    sid = result_line(run)["session_id"]

    table = etcode("sessions", "list", cwd=project)
    assert table.returncode == 0, table.stderr
    assert sid in table.stdout and "What is in notes.txt?" in table.stdout
    assert "Messages" in table.stdout and "Cost" in table.stdout

    listed = json.loads(etcode("sessions", "list", "--json", cwd=project).stdout)
    assert [s["id"] for s in listed] == [sid]
    assert listed[0]["message_count"] == 4 and listed[0]["title"].startswith("What is in notes.txt?")

    show = etcode("sessions", "show", sid, cwd=project)
    assert show.returncode == 0, show.stderr
    assert "> What is in notes.txt? Tell me please" in show.stdout
    assert "● ReadFile (notes.txt)" in show.stdout
    assert "It says: remember the milk." in show.stdout

    export = json.loads(etcode("sessions", "export", sid, cwd=project).stdout)
    assert export["session"]["id"] == sid
    assert [m["role"] for m in export["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert "remember the milk" in export["messages"][2]["parts"][0]["output"]
    assert [u["input_tokens"] for u in export["usage"]] == [100, 200]

    other = etcode("sessions", "list", "--json", cwd=project.parent)  # another project
    assert json.loads(other.stdout) == []
    assert sid in etcode("sessions", "list", "--all", "--json", cwd=project.parent).stdout

    gone = etcode("sessions", "delete", sid, cwd=project)
    assert gone.returncode == 0 and sid in gone.stdout
    assert json.loads(etcode("sessions", "list", "--json", cwd=project).stdout) == []
    missing = etcode("sessions", "show", sid, cwd=project)
    assert missing.returncode == 1 and "no session" in missing.stderr and "Traceback" not in missing.stderr


def test_undo_restores_write_and_edit_without_git(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    assert not (project / ".git").exists()
    (project / "app.py").write_text("print('v1')\n", encoding="utf-8")
    llm.script(
        Reply(
            calls=[
                Call("WriteFile", {"file_path": "new_module.py", "content": "X = 1\n"}),
                Call("Edit", {"file_path": "app.py", "old_string": "v1", "new_string": "v2"}),
            ]
        ),
        Reply(calls=[Call("Edit", {"file_path": "app.py", "old_string": "v2", "new_string": "v3"})]),
        Reply(text="Done."),
        Reply(text="Understood."),
    )
    proc = etcode("run", "--format", "json", "change things", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "app.py").read_text(encoding="utf-8") == "print('v3')\n"
    assert (project / "new_module.py").exists()

    undo = etcode("undo", cwd=project)
    assert undo.returncode == 0, undo.stderr
    assert (project / "app.py").read_text(
        encoding="utf-8"
    ) == "print('v1')\n"  # the turn's first before-image
    assert not (project / "new_module.py").exists()  # it did not exist before the turn
    assert "new_module.py: deleted" in undo.stdout and "app.py: restored" in undo.stdout

    nothing = etcode("undo", cwd=project)
    assert nothing.returncode == 0 and "Nothing to undo" in nothing.stderr

    etcode("run", "-c", "what now?", cwd=project)
    told = json.dumps(llm.requests[-1].body["messages"])
    assert "undid your file changes" in told and "new_module.py" in told


def test_kill_9_mid_step_loses_only_that_step(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    pid_file = project / "sleep.pid"
    llm.script(
        Reply(text="First I read.", calls=[Call("ReadFile", {"file_path": "a.txt"})]),
        Reply(text="Now I wait.", calls=[Call("Bash", {"command": f"echo $$ > {pid_file}; exec sleep 30"})]),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", "run", "--format", "json", "read then wait"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert proc.stdout is not None
    sid = None
    for line in proc.stdout:
        event = json.loads(line)
        sid = sid or event.get("session_id")
        if event["type"] == "tool_call_start" and event["name"] == "Bash":
            break
    deadline = time.monotonic() + 10
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)  # the orphaned sleep
    assert proc.returncode == -signal.SIGKILL and sid

    export = json.loads(etcode("sessions", "export", sid, cwd=project).stdout)
    roles = [m["role"] for m in export["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]  # the finished step and the pending call
    assert export["messages"][3]["parts"][-1]["name"] == "Bash"

    llm.script(Reply(text="Resumed after the crash."))
    again = etcode("run", "-c", "--format", "json", "are you there?", cwd=project)
    assert again.returncode == 0, again.stderr
    assert result_line(again)["session_id"] == sid
    messages = llm.requests[-1].body["messages"]
    tool_results = [m for m in messages if m["role"] == "tool"]
    assert len(tool_results) == 2
    assert "alpha" in tool_results[0]["content"]
    assert "interrupted" in tool_results[1]["content"]
    assert messages[-1] == {"role": "user", "content": "are you there?"}
    export = json.loads(etcode("sessions", "export", sid, cwd=project).stdout)
    assert [m["role"] for m in export["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]


def test_export_and_show_redact_the_configured_api_key(project: Path, llm: FakeLLM) -> None:
    secret = "sk-export-test-0123456789abcdef"
    config = {
        "model": "fake/test-model",
        "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": secret}],
    }
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    (project / "leak.txt").write_text(f"token={secret}\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "leak.txt"})]), Reply(text="read it"))
    sid = result_line(etcode("run", "--format", "json", "read leak.txt", cwd=project))["session_id"]
    export = etcode("sessions", "export", sid, cwd=project)
    assert export.returncode == 0, export.stderr
    assert secret not in export.stdout and "[REDACTED]" in export.stdout
    show = etcode("sessions", "show", sid, cwd=project)
    assert secret not in show.stdout


def test_every_command_leaves_the_session_database_closed(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    """Commands that open the store without closing it (listing, showing sessions) still
    close it at exit: no write-ahead log is left beside the database."""
    data = tmp_path / "data"
    env = {"XDG_DATA_HOME": str(data)}
    write_config(project, llm)
    llm.script(Reply(text="saved"))
    proc = etcode("run", "--format", "json", "hello", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    session_id = result_line(proc)["session_id"]
    for command in (["sessions", "list"], ["sessions", "show", session_id]):
        proc = etcode(*command, cwd=project, env=env)
        assert proc.returncode == 0, proc.stderr
        files = sorted(p.name for p in (data / "etcode").iterdir() if p.is_file())
        assert files == ["etcode.db"], command
