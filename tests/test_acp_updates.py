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


def test_live_output_is_the_tail_of_all_printed_with_redraws_and_a_cut_marker(tmp_path: Path) -> None:
    from etcode.acp.live import LIVE_LINES, LiveCalls
    from etcode.contract import events as ev

    live = LiveCalls()

    def shown(text: str, skipped: int = 0) -> str:
        [update] = live.updates_of(ev.ToolProgress("c1", "Bash", text, 0.1, skipped), tmp_path)
        return str(update.content[0].content.text)

    assert shown("a\nb") == "```\na\nb\n```"
    assert shown("c\n50%\r") == "```\na\nbc\n50%\n```"  # a redraw shows once the next text comes
    assert shown("100%\n") == "```\na\nbc\n100%\n```"
    text = shown("".join(f"line {i}\n" for i in range(LIVE_LINES + 10)))
    lines = text.splitlines()
    assert (
        lines[1] == "… 13 earlier lines not shown"
        and lines[2] == "line 10"
        and lines[-2] == f"line {LIVE_LINES + 9}"
    )
    assert "… 14 earlier lines and 500 characters not shown" in shown("x\n", skipped=500)
    # The result ends the call: a next call of that id starts empty.
    live.updates_of(ev.ToolResultEvent("c1", "Bash", False, "done", "x\n"), tmp_path)
    assert shown("again\n") == "```\nagain\n```"


def test_a_long_result_is_cut_at_a_line_and_says_how_many_lines(tmp_path: Path) -> None:
    from etcode.acp.updates import MAX_SHOWN_OUTPUT, fenced

    text = "".join(f"{i:05d}\n" for i in range(MAX_SHOWN_OUTPUT // 6 + 100))
    out = fenced(text).splitlines()
    assert out[1] == "… 100 earlier lines not shown" and out[2] == "00100" and out[-1] == "```"
    assert fenced("one line\n\n") == "```\none line\n```"


def test_the_first_changed_line_of_a_diff() -> None:
    from etcode.tools.diff import first_changed_line

    before = "".join(f"line {i}\n" for i in range(1, 21))
    assert first_changed_line(unified_diff("a", before, before.replace("line 12\n", "twelve\n"))) == 12
    assert first_changed_line(unified_diff("a", before, before.replace("line 1\n", ""))) == 1
    assert first_changed_line(unified_diff("a", "", "new\n")) == 1
    assert first_changed_line(unified_diff("a", "gone\n", "")) == 1
    assert first_changed_line("no hunk") is None


def test_always_allow_names_its_scope() -> None:
    from etcode.acp.permission import always_name
    from etcode.permission.service import PermissionRequest

    assert (
        always_name(PermissionRequest("bash", ["rm -rf build"], {}, "Bash", ["rm *"])) == "Always allow rm *"
    )
    assert (
        always_name(PermissionRequest("edit", ["src/a.py"], {}, "Edit")) == "Always allow edits to src/a.py"
    )
    assert always_name(PermissionRequest("mcp_x_run", ["*"], {}, "mcp_x_run")) == "Always allow mcp_x_run"
    many = always_name(PermissionRequest("read", [f"f{i}" for i in range(8)], {}, None))
    assert many == "Always allow reading f0, f1, f2, f3, f4, f5 (+2 more)"
