"""What the editor is shown of a change: ``diff_texts`` turns etcode's unified diff into
the old and new text of an ACP diff."""

from __future__ import annotations

from pathlib import Path

from etcode.acp.updates import diff_texts
from etcode.tools.diff import unified_diff


def test_lines_keep_their_newlines() -> None:
    assert diff_texts(unified_diff("a.py", "x = 1\nprint(x)\n", "x = 2\nprint(x)\n")) == (
        "x = 1\nprint(x)\n",
        "x = 2\nprint(x)\n",
    )


def test_a_last_line_without_newline_stays_without() -> None:
    assert diff_texts(unified_diff("a.py", "x = 1\nend", "x = 1\nend\n")) == ("x = 1\nend", "x = 1\nend\n")


def test_hunks_apart_are_joined_by_a_gap_line() -> None:
    before = "".join(f"line {i}\n" for i in range(40))
    after = before.replace("line 2\n", "line two\n").replace("line 35\n", "line thirty-five\n")
    old, new = diff_texts(unified_diff("a.txt", before, after)) or ("", "")
    assert old.count("⋯\n") == 1 and new.count("⋯\n") == 1
    assert "line 2\n" in old and "line two\n" in new and "line thirty-five\n" in new


def test_a_created_file_and_a_diff_without_hunks() -> None:
    assert diff_texts(unified_diff("n.txt", "", "new\n")) == ("", "new\n")
    assert diff_texts("") is None


def test_a_subagents_hook_and_warning_reach_the_editor(tmp_path: Path) -> None:
    from etcode.acp.updates import updates_of
    from etcode.contract import events as ev

    hook = ev.HookRun("PreToolUse", "no_rm.py", "blocked", 2, "no rm", "Bash", "child_1")
    [call] = updates_of(ev.SubagentEvent("task_1", "general", "ses_x", hook.to_dict()), tmp_path)
    assert call.title == "PreToolUse hook (no_rm.py)" and call.status == "failed"
    assert call.raw_output == {
        "event": "PreToolUse",
        "outcome": "blocked",
        "exit_code": 2,
        "call_id": "task_1",
    }
    warning = ev.WarningEvent("disk full")
    [thought] = updates_of(ev.SubagentEvent("task_1", "general", "ses_x", warning.to_dict()), tmp_path)
    assert "general subagent: disk full" in thought.content.text
    started = ev.ToolCallStart("child_1", "Bash", {}, "")
    assert updates_of(ev.SubagentEvent("task_1", "general", "ses_x", started.to_dict()), tmp_path) == []


def test_a_soft_step_limit_is_a_thought_line_and_a_token_limit_ends_with_max_tokens(tmp_path: Path) -> None:
    from etcode.acp.server import STOP_REASONS
    from etcode.acp.updates import updates_of
    from etcode.contract import events as ev

    [thought] = updates_of(ev.SoftLimitEvent("step_limit", "wrap up", 4), tmp_path)
    assert "[etcode] soft step limit: 4 steps taken" in thought.content.text
    assert STOP_REASONS["token_limit"] == "max_tokens"
