"""Hooks end to end: the real ``etcode run`` against the fake model server, with hooks in the
user's own ``etcode.json`` (``$XDG_CONFIG_HOME/etcode``): what they receive, how their exit
codes and JSON answers steer the run, and what the user and the model are shown."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply

PY = sys.executable

#: A formatter as a PostToolUse hook: rewrites the edited file (tabs → 4 spaces, no trailing
#: blanks) and says so on stderr (a log only: exit 0).
FORMATTER = """\
import json, sys
event = json.load(sys.stdin)
path = event["tool_input"]["file_path"]
with open(path) as handle:
    lines = [line.replace("\\t", "    ").rstrip() for line in handle.read().splitlines()]
with open(path, "w") as handle:
    handle.write("\\n".join(lines) + "\\n")
"""

#: Blocks any Bash call that runs rm (exit 2: stderr is the reason the model sees).
NO_RM = """\
import json, sys
event = json.load(sys.stdin)
if "rm " in event["tool_input"].get("command", ""):
    print("rm is not allowed here: move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
"""

#: Writes what it received to $HOOK_LOG/<event>.json (one JSON object a line).
RECORDER = """\
import json, os, sys
event = json.load(sys.stdin)
event["env_project_dir"] = os.environ.get("CLAUDE_PROJECT_DIR")
event["hook_cwd"] = os.getcwd()
with open(os.path.join(os.environ["HOOK_LOG"], event["hook_event_name"] + ".jsonl"), "a") as out:
    out.write(json.dumps(event) + "\\n")
"""


def user_hooks(home: Path, hooks: dict[str, Any]) -> None:
    """The user's own hooks (no trust needed): ``$XDG_CONFIG_HOME/etcode/etcode.json``."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "etcode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "etcode.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")


def script(project: Path, name: str, text: str) -> str:
    """A hook script in the project; the command line that runs it."""
    path = project / ".hooks" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return f'{PY} "$CLAUDE_PROJECT_DIR/.hooks/{name}"'


def on(matcher: str, *commands: str, timeout: float | None = None) -> list[dict[str, Any]]:
    hooks: list[dict[str, Any]] = []
    for command in commands:
        hook: dict[str, Any] = {"type": "command", "command": command}
        if timeout is not None:
            hook["timeout"] = timeout
        hooks.append(hook)
    return [{"matcher": matcher, "hooks": hooks}]


def tool_results(llm: FakeLLM, index: int) -> list[str]:
    """The tool results the model got in request ``index`` (OpenAI wire)."""
    return [m["content"] for m in llm.requests[index].body["messages"] if m["role"] == "tool"]


def user_texts(llm: FakeLLM, index: int) -> str:
    return json.dumps([m for m in llm.requests[index].body["messages"] if m["role"] == "user"])


def json_events(proc: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_post_tool_use_formats_the_file_after_edit(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "app.py").write_text("def f():\n\treturn 1\n", encoding="utf-8")
    user_hooks(project, {"PostToolUse": on("Write|Edit", script(project, "fmt.py", FORMATTER))})
    llm.script(
        Reply(
            calls=[
                Call("Edit", {"file_path": "app.py", "old_string": "return 1", "new_string": "return 2   "})
            ]
        ),
        Reply(text="Edited."),
    )
    proc = etcode("run", "--yes", "change it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "app.py").read_text(encoding="utf-8") == "def f():\n    return 2\n"
    assert "● PostToolUse hook (fmt.py)" in proc.stdout + proc.stderr


def test_post_tool_use_hook_does_not_run_for_other_tools(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "app.py").write_text("x\t= 1\n", encoding="utf-8")
    user_hooks(project, {"PostToolUse": on("Edit", script(project, "fmt.py", FORMATTER))})
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "app.py"})]), Reply(text="Read."))
    proc = etcode("run", "read it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "app.py").read_text(encoding="utf-8") == "x\t= 1\n"
    assert "PostToolUse hook" not in proc.stdout + proc.stderr


def test_pre_tool_use_exit_2_blocks_rm_and_the_model_sees_why(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "keep.txt").write_text("precious\n", encoding="utf-8")
    user_hooks(project, {"PreToolUse": on("Bash", script(project, "no_rm.py", NO_RM))})
    llm.script(
        Reply(calls=[Call("Bash", {"command": "rm keep.txt"})]),
        Reply(calls=[Call("Bash", {"command": "echo fine"})]),
        Reply(text="Done."),
    )
    proc = etcode("run", "--yes", "--format", "json", "--sandbox", "off", "clean up", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "keep.txt").exists()
    [blocked] = tool_results(llm, 1)
    assert "rm is not allowed here: move files to trash/ instead" in blocked
    assert "fine" in tool_results(llm, 2)[-1]
    hooks = [e for e in json_events(proc) if e["type"] == "hook"]
    assert [(h["event"], h["label"], h["outcome"], h["tool"]) for h in hooks] == [
        ("PreToolUse", "no_rm.py", "blocked", "Bash"),
        ("PreToolUse", "no_rm.py", "ok", "Bash"),
    ]
    assert hooks[0]["exit_code"] == 2 and hooks[0]["call_id"]
    assert "move files to trash/" in hooks[0]["message"]


def test_hooks_get_claude_codes_fields(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    write_config(project, llm)
    log = tmp_path / "log"
    log.mkdir()
    recorder = script(project, "record.py", RECORDER)
    user_hooks(
        project,
        {
            "PreToolUse": on("Write", recorder),
            "PostToolUse": on("*", recorder),
            "UserPromptSubmit": on("", recorder),
            "SessionStart": on("", recorder),
            "Stop": on("", recorder),
            "SessionEnd": on("", recorder),
        },
    )
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "a.txt", "content": "hi\n"})]),
        Reply(text="Written."),
    )
    proc = etcode("run", "--yes", "write a.txt", cwd=project, env={"HOOK_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr

    def read(event: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (log / f"{event}.jsonl").read_text().splitlines()]

    [pre] = read("PreToolUse")
    assert pre["tool_name"] == "Write"
    assert pre["tool_input"] == {"file_path": str(project / "a.txt"), "content": "hi\n"}  # absolute
    assert pre["cwd"] == str(project) and pre["env_project_dir"] == str(project)
    assert pre["hook_cwd"] == str(project) and pre["session_id"].startswith("ses_")
    [post] = read("PostToolUse")
    assert post["tool_name"] == "Write" and "tool_response" in post
    assert read("UserPromptSubmit")[0]["prompt"] == "write a.txt"
    assert read("SessionStart")[0]["source"] == "startup"
    assert read("Stop")[0]["stop_hook_active"] is False
    assert read("SessionEnd")[0]["reason"] == "other"
    assert {e["session_id"] for e in read("PreToolUse") + read("SessionEnd")} == {pre["session_id"]}


@pytest.mark.parametrize(
    ("rule", "answer", "ran"),
    [
        ("ask", "allow", True),  # the hook answers the question etcode run could not ask
        ("ask", "deny", False),
        ("deny", "allow", False),  # an allow never lifts a deny rule
        ("allow", "ask", False),  # ask forces a question (refused: etcode run asks nobody)
    ],
)
def test_permission_decision(project: Path, llm: FakeLLM, rule: str, answer: str, ran: bool) -> None:
    write_config(project, llm, permission={"edit": rule})
    reply = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": answer,
                                    "permissionDecisionReason": "policy says " + answer}}  # fmt: skip
    decide = script(project, "decide.py", f"print({json.dumps(json.dumps(reply))})\n")
    user_hooks(project, {"PreToolUse": on("Write", decide)})
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "out.txt", "content": "x\n"})]),
        Reply(text="ok"),
    )
    proc = etcode("run", "write it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "out.txt").exists() is ran
    [result] = tool_results(llm, 1)
    if answer == "deny":
        assert "policy says deny" in result
    if rule == "deny":
        assert "denied by permission rule" in result


def test_user_prompt_submit_and_session_start_context_reach_the_model(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    context = json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                 "additionalContext": "ticket ABC-42 is open"}})  # fmt: skip
    user_hooks(
        project,
        {
            "SessionStart": on("startup", "echo 'branch: feature/hooks'"),
            "UserPromptSubmit": on("", f"echo '{context}'"),
        },
    )
    llm.script(Reply(text="ok"))
    proc = etcode("run", "what now?", cwd=project)
    assert proc.returncode == 0, proc.stderr
    sent = user_texts(llm, 0)
    assert "branch: feature/hooks" in sent and "ticket ABC-42 is open" in sent and "what now?" in sent
    assert "what now?\\n\\n<hook-output" in sent  # (JSON) the prompt's own text stays apart from the context


def test_user_prompt_submit_exit_2_blocks_the_prompt(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    user_hooks(project, {"UserPromptSubmit": on("", "echo 'no secrets in prompts' >&2; exit 2")})
    llm.script(Reply(text="never asked"))
    proc = etcode("run", "my password is hunter2", cwd=project)
    assert proc.returncode == 1
    assert llm.requests == []
    assert "no secrets in prompts" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_stop_hook_makes_the_model_continue_three_times_at_most(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    user_hooks(project, {"Stop": on("", "echo 'run the tests first' >&2; exit 2")})
    llm.script(*(Reply(text=f"answer {n}") for n in range(5)))
    proc = etcode("run", "--format", "json", "finish", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 4  # the answer, then three more: the fourth Stop lets it end
    assert "run the tests first" in user_texts(llm, 1)
    stops = [e for e in json_events(proc) if e["type"] == "hook" and e["event"] == "Stop"]
    assert [s["outcome"] for s in stops] == ["blocked"] * 3


def test_stop_hook_sees_stop_hook_active(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    write_config(project, llm)
    once = script(
        project,
        "once.py",
        "import json, sys\n"
        "if not json.load(sys.stdin)['stop_hook_active']:\n"
        "    print('add a test', file=sys.stderr); sys.exit(2)\n",
    )
    user_hooks(project, {"Stop": on("", once)})
    llm.script(Reply(text="first"), Reply(text="second"), Reply(text="third"))
    proc = etcode("run", "finish", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 2
    assert proc.stdout.strip().endswith("second")


def test_a_hung_hook_is_killed_at_its_timeout_with_its_group(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(project, llm)
    pid_file = tmp_path / "child.pid"
    hang = f"sleep 300 & echo $! > {pid_file}; wait"
    user_hooks(project, {"PreToolUse": on("Bash", hang, timeout=2)})
    llm.script(Reply(calls=[Call("Bash", {"command": "echo still-ran"})]), Reply(text="ok"))
    proc = etcode("run", "--yes", "--format", "json", "--sandbox", "off", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    [hook] = [e for e in json_events(proc) if e["type"] == "hook"]
    assert hook["outcome"] == "timeout" and hook["exit_code"] is None
    assert "still-ran" in tool_results(llm, 1)[0]  # a hook that fails does not block
    child = int(pid_file.read_text())
    assert not _alive(child), "the hook's sleep outlived its timeout"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def test_a_failing_hook_is_a_warning_and_the_call_runs(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    user_hooks(project, {"PreToolUse": on("*", "echo oops >&2; exit 1")})
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "etcode.json"})]), Reply(text="ok"))
    proc = etcode("run", "read", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "fake" in tool_results(llm, 1)[0]
    assert "exit code 1: oops" in proc.stderr + proc.stdout


def test_no_hooks_imports_nothing_of_them(project: Path, llm: FakeLLM) -> None:
    from tests.cli_helpers import etcode_imports

    write_config(project, llm)
    llm.script(Reply(text="ok"))
    proc, imported = etcode_imports("run", "hi", cwd=project)
    assert proc.returncode == 0, proc.stderr
    hooks = {
        "etcode.extensions.hook_interceptor",
        "etcode.extensions.hook_runner",
        "etcode.extensions.hook_set",
        "etcode.config.claude_settings",
    }
    assert not hooks & imported
    assert "etcode.engine.interception" not in imported


def test_the_workflow_agent_runs_the_prompt_hooks_once(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    user_hooks(project, {"UserPromptSubmit": on("", "echo 'not today' >&2; exit 2")})
    llm.script(Reply(text="never asked"))
    proc = etcode("run", "--agent", "workflow", "--format", "json", "plan it", cwd=project)
    assert proc.returncode == 1
    assert llm.requests == []
    events = json_events(proc)
    [stopped] = [e for e in events if e["type"] == "stopped"]
    assert stopped["reason"] == "blocked" and "not today" in stopped["message"]
    assert [e["event"] for e in events if e["type"] == "hook"] == ["UserPromptSubmit"]
    assert events[-1]["stop_reason"] == "blocked"


def test_pre_tool_use_updated_input_replaces_the_arguments(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    answer = {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "echo replaced"}}
    }
    user_hooks(project, {"PreToolUse": on("Bash", f"echo '{json.dumps(answer)}'")})
    llm.script(Reply(calls=[Call("Bash", {"command": "echo original"})]), Reply(text="ok"))
    proc = etcode("run", "--yes", "--sandbox", "off", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    [result] = tool_results(llm, 1)
    assert "replaced" in result and "original" not in result


def test_continue_false_ends_the_run_with_the_stop_reason(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    answer = {"continue": False, "stopReason": "build is broken: fix CI first"}
    user_hooks(project, {"PostToolUse": on("*", f"echo '{json.dumps(answer)}'")})
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "etcode.json"})]), Reply(text="never"))
    proc = etcode("run", "--format", "json", "go", cwd=project)
    assert proc.returncode == 1
    assert len(llm.requests) == 1
    events = json_events(proc)
    assert any(e["type"] == "stopped" and e["message"] == "build is broken: fix CI first" for e in events)
    assert events[-1]["stop_reason"] == "blocked"


# ---- review fixes ---------------------------------------------------------------------------
def test_an_allow_goes_with_its_call_not_with_a_repeated_call_id(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"edit": "ask"})
    decide = script(
        project,
        "decide.py",
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "if event['tool_input']['file_path'].endswith('a.txt'):\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',\n"
        "                                             'permissionDecision': 'allow'}}))\n",
    )
    user_hooks(project, {"PreToolUse": on("Write", decide)})
    llm.script(
        Reply(
            calls=[  # the model repeats an id: b.txt's hook says nothing, so b.txt is asked (refused)
                Call("WriteFile", {"file_path": "a.txt", "content": "x\n"}, id="call_1"),
                Call("WriteFile", {"file_path": "b.txt", "content": "y\n"}, id="call_1"),
            ]
        ),
        Reply(text="ok"),
    )
    proc = etcode("run", "write", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "a.txt").exists()
    assert not (project / "b.txt").exists(), "a.txt's allow answered b.txt's question"


def test_pre_and_post_tool_use_run_around_each_call_that_writes(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(project, llm)
    log = tmp_path / "order.log"
    logger = script(
        project,
        "order.py",
        "import json, os, sys\n"
        "event = json.load(sys.stdin)\n"
        "name = os.path.basename(event['tool_input']['file_path'])\n"
        "there = os.path.exists(event['tool_input']['file_path'])\n"
        f"open({str(log)!r}, 'a').write(f\"{{event['hook_event_name']}} {{name}} {{there}}\\n\")\n",
    )
    user_hooks(project, {"PreToolUse": on("Write", logger), "PostToolUse": on("Write", logger)})
    llm.script(
        Reply(
            calls=[
                Call("WriteFile", {"file_path": "a.txt", "content": "x\n"}),
                Call("WriteFile", {"file_path": "b.txt", "content": "y\n"}),
            ]
        ),
        Reply(text="ok"),
    )
    proc = etcode("run", "--yes", "write", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().splitlines() == [
        "PreToolUse a.txt False",
        "PostToolUse a.txt True",
        "PreToolUse b.txt False",
        "PostToolUse b.txt True",
    ]


def test_a_blocked_prompt_never_reaches_the_title_model_nor_the_session(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, small_model="fake/test-model")
    user_hooks(project, {"UserPromptSubmit": on("", "echo 'no secrets' >&2; exit 2")})
    llm.script(Reply(text="A title"), Reply(text="never"))
    proc = etcode("run", "my password is hunter2", cwd=project)
    assert proc.returncode == 1
    assert not [r for r in llm.requests if "hunter2" in json.dumps(r.body)]
    listed = etcode("sessions", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "hunter2" not in listed.stdout + listed.stderr


def test_a_passed_prompt_still_titles_the_session(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, small_model="fake/test-model")
    user_hooks(project, {"UserPromptSubmit": on("", "exit 0")})
    llm.script(*(Reply(text="Fixing the parser") for _ in range(2)))
    proc = etcode("run", "fix the parser please", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert any("fix the parser please" in json.dumps(r.body) for r in llm.requests)
    listed = etcode("sessions", "list", cwd=project)
    assert "Fixing the parser" in listed.stdout, listed.stdout


def test_a_workflow_prompt_blocked_is_not_sent_on_continue(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    guard = script(
        project,
        "guard.py",
        "import json, sys\n"
        "if 'hunter2' in json.load(sys.stdin)['prompt']:\n"
        "    print('no secrets', file=sys.stderr); sys.exit(2)\n",
    )
    user_hooks(project, {"UserPromptSubmit": on("", guard)})
    llm.script(*(Reply(text="fine") for _ in range(8)))
    assert etcode("run", "--agent", "workflow", "my password is hunter2", cwd=project).returncode == 1
    etcode("run", "--agent", "workflow", "--continue", "hello", cwd=project)
    assert llm.requests, "the second prompt reached the model"
    assert not [r for r in llm.requests if "hunter2" in json.dumps(r.body)]


def test_a_hook_that_leaves_a_child_holding_its_output_still_blocks(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "keep.txt").write_text("x", encoding="utf-8")
    held = "sleep 300 & echo 'no rm here' >&2; exit 2"  # the sleep holds stdout/stderr open
    user_hooks(project, {"PreToolUse": on("Bash", held, timeout=30)})
    llm.script(Reply(calls=[Call("Bash", {"command": "rm keep.txt"})]), Reply(text="ok"))
    proc = etcode("run", "--yes", "--sandbox", "off", "--format", "json", "go", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "keep.txt").exists()
    [hook] = [e for e in json_events(proc) if e["type"] == "hook"]
    assert (hook["outcome"], hook["exit_code"]) == ("blocked", 2)
    assert "no rm here" in tool_results(llm, 1)[0]


@pytest.mark.parametrize("flags", [[], ["--yes"]])
def test_notification_does_not_fire_when_nobody_is_asked(
    project: Path, llm: FakeLLM, tmp_path: Path, flags: list[str]
) -> None:
    write_config(project, llm, permission={"edit": "ask"})
    marker = tmp_path / "notified"
    user_hooks(project, {"Notification": on("", f"touch {marker}")})
    llm.script(Reply(calls=[Call("WriteFile", {"file_path": "a.txt", "content": "x\n"})]), Reply(text="ok"))
    proc = etcode("run", *flags, "write", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "a.txt").exists() is bool(flags)  # asked: refused, or allowed by --yes
    assert not marker.exists(), "Notification said a question waits; etcode run answers at once"


def test_claude_code_fields_transcript_permission_mode_and_tool_responses(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    """``transcript_path`` (a JSON Lines file of the session so far), ``permission_mode``,
    ``tool_response`` in Claude Code's shape (Bash ``stdout``, Write ``filePath``), and a
    PreToolUse ``additionalContext`` that reaches the model with the call's result."""
    write_config(project, llm)
    log = tmp_path / "log"
    log.mkdir()
    recorder = script(project, "record.py", RECORDER)
    context = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "the CI uses bash 5"}}
    )
    user_hooks(
        project,
        {
            "PreToolUse": [*on("Bash", f"echo '{context}'"), *on("*", recorder)],
            "PostToolUse": on("*", recorder),
            "Stop": on("", recorder),
        },
    )
    llm.script(
        Reply(
            calls=[
                Call("WriteFile", {"file_path": "a.txt", "content": "hi\n"}),
                Call("Bash", {"command": "echo from-bash"}),
            ]
        ),
        Reply(text="Written."),
    )
    proc = etcode("run", "--yes", "--sandbox", "off", "write a.txt", cwd=project, env={"HOOK_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr

    def read(event: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (log / f"{event}.jsonl").read_text().splitlines()]

    write, bash = read("PostToolUse")
    assert write["tool_response"]["filePath"] == str(project / "a.txt") and write["tool_response"]["success"]
    assert "from-bash" in bash["tool_response"]["stdout"] and bash["tool_response"]["interrupted"] is False
    assert {e["permission_mode"] for e in read("PreToolUse") + read("Stop")} == {"bypassPermissions"}
    [stop] = read("Stop")
    lines = [json.loads(line) for line in Path(stop["transcript_path"]).read_text().splitlines()]
    assert [line["type"] for line in lines][:2] == ["user", "assistant"]
    assert "write a.txt" in json.dumps(lines[0]) and lines[-1]["message"]["content"] == "Written."
    assert all(e["transcript_path"] == stop["transcript_path"] for e in read("PreToolUse"))
    assert "the CI uses bash 5" in tool_results(llm, 1)[1]


def test_permission_mode_is_plan_for_the_plan_agent(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    write_config(project, llm)
    log = tmp_path / "log"
    log.mkdir()
    user_hooks(project, {"UserPromptSubmit": on("", script(project, "record.py", RECORDER))})
    llm.script(Reply(text="a plan"))
    proc = etcode("run", "--agent", "plan", "plan it", cwd=project, env={"HOOK_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    [event] = [json.loads(line) for line in (log / "UserPromptSubmit.jsonl").read_text().splitlines()]
    assert event["permission_mode"] == "plan"


def test_an_mcp_tool_answers_to_claude_codes_name(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    server = Path(__file__).parent / "mcp_servers" / "files_server.py"
    log = tmp_path / "log"
    log.mkdir()
    recorder = script(project, "record.py", RECORDER)
    write_config(project, llm, mcp={"files": {"command": [PY, str(server)], "timeout": 30000}})
    user_hooks(project, {"PreToolUse": on("mcp__files__.*", recorder)})
    llm.script(Reply(calls=[Call("files_read_thing", {})]), Reply(text="ok"))
    proc = etcode("run", "--yes", "--trust", "read the thing", cwd=project, env={"HOOK_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    [event] = [json.loads(line) for line in (log / "PreToolUse.jsonl").read_text().splitlines()]
    assert event["tool_name"] == "mcp__files__read_thing"


def test_a_read_guard_also_guards_read_many_files(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    """A team's PreToolUse ``Read`` guard sees each path of a ReadManyFiles call as a Read
    (``{"file_path": <absolute>}``): one guarded path blocks the whole call, naming it."""
    write_config(project, llm)
    (project / "notes.txt").write_text("NOTES-BODY\n", encoding="utf-8")
    (project / "ok.txt").write_text("OK-BODY\n", encoding="utf-8")
    guard = """\
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.environ["HOOK_LOG"], "read.jsonl"), "a") as out:
    out.write(json.dumps([event["tool_name"], event["tool_input"]]) + "\\n")
if "notes" in json.dumps(event["tool_input"]):
    print("notes are off-limits", file=sys.stderr)
    sys.exit(2)
"""
    log = tmp_path / "log"
    log.mkdir()
    user_hooks(project, {"PreToolUse": on("Read", script(project, "guard.py", guard))})
    llm.script(
        Reply(calls=[Call("ReadManyFiles", {"paths": ["ok.txt", "notes.txt"]})]),
        Reply(calls=[Call("ReadManyFiles", {"paths": ["ok.txt"]})]),
        Reply(text="done"),
    )
    proc = etcode("run", "--format", "json", "read notes", cwd=project, env={"HOOK_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    [blocked] = tool_results(llm, 1)
    assert "notes are off-limits" in blocked and str(project / "notes.txt") in blocked
    assert "NOTES-BODY" not in blocked and "OK-BODY" not in blocked
    assert "OK-BODY" in tool_results(llm, 2)[-1]
    seen = [json.loads(line) for line in (log / "read.jsonl").read_text().splitlines()]
    assert seen == [
        ["Read", {"file_path": str(project / "ok.txt")}],
        ["Read", {"file_path": str(project / "notes.txt")}],
        ["Read", {"file_path": str(project / "ok.txt")}],
    ]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_subagents_hooks_reach_etcode_run(project: Path, llm: FakeLLM, fmt: str) -> None:
    """A hook that blocks a ``Task`` subagent's call shows like the parent's own: the
    ``● PreToolUse hook`` line in text, a ``subagent`` event wrapping the ``hook`` in JSON."""
    write_config(project, llm)
    (project / "keep.txt").write_text("precious\n", encoding="utf-8")
    user_hooks(project, {"PreToolUse": on("Bash", script(project, "no_rm.py", NO_RM))})
    task = {"description": "clean", "prompt": "remove keep.txt", "subagent_type": "general"}
    llm.script(
        Reply(calls=[Call("Task", task)]),
        Reply(calls=[Call("Bash", {"command": "rm keep.txt"})]),
        Reply(text="could not"),
        Reply(text="refused"),
    )
    proc = etcode("run", "--yes", "--sandbox", "off", "--format", fmt, "clean", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "keep.txt").exists()
    if fmt == "text":
        assert "● PreToolUse hook (no_rm.py)" in proc.stderr
        assert "blocked: rm is not allowed here" in proc.stderr
        return
    wrapped = [e for e in json_events(proc) if e["type"] == "subagent" and e["event"]["type"] == "hook"]
    assert [
        (w["agent"], w["event"]["event"], w["event"]["outcome"], w["event"]["tool"]) for w in wrapped
    ] == [("general", "PreToolUse", "blocked", "Bash")]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_failed_session_end_hook_is_one_warning_line(project: Path, llm: FakeLLM, fmt: str) -> None:
    """SessionEnd runs after the run's stream closed: a failed one is still one ``warning:``
    line on stderr, and JSON's ``result`` line stays the last on stdout."""
    write_config(project, llm)
    user_hooks(project, {"SessionEnd": on("", "cat > /dev/null; echo bye >&2; exit 1")})
    llm.script(Reply(text="done"))
    proc = etcode("run", "--format", fmt, "hi", cwd=project)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: SessionEnd hook (cat): failed: exit code 1: bye"]
    if fmt == "json":
        assert json_events(proc)[-1]["type"] == "result"


def test_tool_input_uses_claude_codes_argument_names(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    """``Skill``'s ``name`` is ``skill``, ``Grep``'s ``include`` is ``glob`` in ``tool_input``,
    and an ``updatedInput`` in Claude Code's names reaches the tool in etcode's."""
    write_config(project, llm)
    (project / ".claude/skills/rn").mkdir(parents=True)
    (project / ".claude/skills/rn/SKILL.md").write_text(
        "---\nname: rn\ndescription: Release notes.\n---\nWrite notes.\n", encoding="utf-8"
    )
    (project / "a.py").write_text("NEEDLE\n", encoding="utf-8")
    (project / "b.md").write_text("NEEDLE\n", encoding="utf-8")
    log = tmp_path / "log"
    log.mkdir()
    to_md = """\
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.environ["HOOK_LOG"], "input.jsonl"), "a") as out:
    out.write(json.dumps([event["tool_name"], event["tool_input"]]) + "\\n")
if event["tool_name"] == "Grep":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"glob": "*.md"}}}))
"""
    user_hooks(project, {"PreToolUse": on("Skill|Grep", script(project, "input.py", to_md))})
    llm.script(
        Reply(calls=[Call("Skill", {"name": "rn", "args": "2.1"})]),
        Reply(calls=[Call("Grep", {"pattern": "NEEDLE", "include": "*.py"})]),
        Reply(text="done"),
    )
    proc = etcode("run", "--yes", "notes", cwd=project, env={"HOOK_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    seen = [json.loads(line) for line in (log / "input.jsonl").read_text().splitlines()]
    assert seen == [
        ["Skill", {"skill": "rn", "args": "2.1"}],
        ["Grep", {"pattern": "NEEDLE", "glob": "*.py"}],
    ]
    found = tool_results(llm, 2)[-1]
    assert "b.md" in found and "a.py" not in found


def test_a_read_hooks_allow_for_one_path_answers_nothing_for_the_others(project: Path, llm: FakeLLM) -> None:
    """ReadManyFiles asks one question for all its paths: a Read hook's ``allow`` of one path
    must not answer it for a path no hook allowed (here refused: ``etcode run`` cannot ask)."""
    write_config(project, llm, permission={"ReadManyFiles": "ask"})
    (project / "ok.txt").write_text("OK-BODY\n", encoding="utf-8")
    (project / "other.txt").write_text("OTHER-BODY\n", encoding="utf-8")
    allow = """\
import json, sys
event = json.load(sys.stdin)
if event["tool_input"]["file_path"].endswith("ok.txt"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
"""
    user_hooks(project, {"PreToolUse": on("Read", script(project, "allow.py", allow))})
    llm.script(
        Reply(calls=[Call("ReadManyFiles", {"paths": ["ok.txt", "other.txt"]})]),
        Reply(calls=[Call("ReadManyFiles", {"paths": ["ok.txt"]})]),
        Reply(text="done"),
    )
    proc = etcode("run", "read them", cwd=project)
    assert proc.returncode == 0, proc.stderr
    [both] = tool_results(llm, 1)
    assert "OTHER-BODY" not in both and "OK-BODY" not in both
    assert "OK-BODY" in tool_results(llm, 2)[-1]  # every path allowed: the hook's answer holds
