"""Background processes through the real ``etcode run`` against the scripted model server:
Bash with ``run_in_background``, BashOutput, KillBash, the exit note on the next request,
``shell.maxBackground``, the permission rules and the sandbox, and nothing left running
after the run ends, Ctrl-C or SIGHUP (checked by process group)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from etcode.security.sandbox import unavailable_reason
from tests import process_support
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Recorded, Reply
from tests.require import missing

PYTHON = shlex.quote(sys.executable)
#: Generous bounds for what must happen (only a failure waits that long).
GONE_SECONDS = 20.0


def tool_results(recorded: Recorded) -> list[str]:
    """The text of every tool result in a request (OpenAI: ``tool`` messages; Anthropic:
    ``tool_result`` blocks), in order."""
    found: list[str] = []
    for message in recorded.body["messages"]:
        if message.get("role") == "tool":
            found.append(json.dumps(message["content"]))
        content = message.get("content")
        if isinstance(content, list):
            found.extend(json.dumps(b.get("content")) for b in content if b.get("type") == "tool_result")
    return [json.loads(f) if f.startswith('"') else f for f in found]


def group_gone(pgid: int, seconds: float = GONE_SECONDS) -> bool:
    """Wait until process group ``pgid`` has no member (zombies count: nobody may reap
    them here, so only a group empty of live processes is waited for, then checked)."""
    from etcode.util.process_group import group_alive

    deadline = time.monotonic() + seconds
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not group_alive(pgid)


def killpg_gone(pgid: int, seconds: float = GONE_SECONDS) -> bool:
    """``os.killpg(pgid, 0)`` raises ProcessLookupError (waited for: zombies linger until reaped)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def wait_for(done: Callable[[], bool], seconds: float = 60.0) -> None:
    """Poll ``done`` until it holds (``seconds``: a safety net only a failure reaches)."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def started_pid(text: str) -> int:
    match = re.search(r"Started (bash_\d+) in the background \(pid (\d+)\)", text)
    assert match, text
    return int(match.group(2))


def test_http_server_started_polled_fetched_killed(project: Path, llm: FakeLLM) -> None:
    """The model starts ``python -m http.server``, polls it with BashOutput until it says
    where it serves (usually in the start's first output already), the test fetches a page
    from it, the model polls the server's log of that request and kills it: group gone."""
    write_config(project, llm)
    (project / "hello.txt").write_text("hello from the project\n", encoding="utf-8")
    seen: dict[str, Any] = {"polls": [], "outputs": ""}
    poll = Reply(calls=[Call("BashOutput", {"bash_id": "bash_1"})])

    def model(recorded: Recorded) -> Reply:
        latest = tool_results(recorded)[-1]
        if "pid" not in seen:
            seen["pid"] = started_pid(latest)
        elif latest.startswith("Killed"):
            seen["kill"] = latest
            seen["gone"] = killpg_gone(seen["pid"])
            return Reply(text="served and stopped")
        else:
            seen["polls"].append(latest)
        assert len(seen["polls"]) < 200, "the server never said where it serves, or never logged the request"
        seen["outputs"] += latest
        if "page" not in seen:
            port = re.search(r"Serving HTTP on 127.0.0.1 port (\d+)", seen["outputs"])
            if port is None:
                return poll
            url = f"http://127.0.0.1:{port.group(1)}/hello.txt"
            with urllib.request.urlopen(url, timeout=30) as page:
                seen["page"] = page.read().decode()
            seen["after_fetch"] = len(seen["polls"])
            return poll
        if '"GET /hello.txt HTTP/1.1" 200' not in "".join(seen["polls"][seen["after_fetch"] :]):
            return poll
        return Reply(calls=[Call("KillBash", {"shell_id": "bash_1"})])

    command = f"{PYTHON} -u -m http.server 0 --bind 127.0.0.1"
    llm.script(
        Reply(calls=[Call("Bash", {"command": command, "run_in_background": True, "description": "serve"})]),
        *[model] * 250,
    )
    proc = etcode("run", "serve the folder", cwd=project, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert seen["page"] == "hello from the project\n"
    assert all("bash_1 (" in p and ": running" in p for p in seen["polls"])
    assert seen["outputs"].count("Serving HTTP") == 1  # each read returns only what is new
    assert seen["kill"].startswith("Killed bash_1")
    assert seen["gone"], "the server's process group outlived KillBash"
    assert "● Bash" in proc.stderr and "started bash_1 in the background" in proc.stderr


def test_the_start_returns_the_first_output(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    mark = process_support.token()
    llm.script(
        Reply(calls=[Call("Bash", {"command": f"echo ready; sleep {mark}", "run_in_background": True})]),
        Reply(text="it is ready"),
    )
    proc = etcode("run", "start it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    started = tool_results(llm.requests[1])[-1]
    assert started.startswith("Started bash_1 in the background (pid ")
    assert started.endswith("\n\nready")
    assert not process_support.live_with(mark)  # ended with the run


def test_long_output_keeps_its_tail_its_skipped_count_and_the_id(project: Path, llm: FakeLLM) -> None:
    """5 MB of output: the start's answer still begins with the id (only the output is cut),
    a read that fell behind says how much it skipped, and the tail arrives."""
    write_config(project, llm)
    mark = process_support.token()
    script = "import sys\nfor i in range(5000): sys.stdout.write('x' * 999 + chr(10))\nprint('tail-marker')"
    (project / "loud.py").write_text(script, encoding="utf-8")
    command = f"{PYTHON} loud.py; touch done; sleep {mark}"
    reads: list[str] = []

    def after_start(recorded: Recorded) -> Reply:
        deadline = time.monotonic() + 60
        while not (project / "done").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return Reply(calls=[Call("BashOutput", {"bash_id": "bash_1"})])

    def after_read(recorded: Recorded) -> Reply:
        reads.append(tool_results(recorded)[-1])
        if "tail-marker" in reads[-1] or len(reads) > 100:
            return Reply(text="loud")
        return Reply(calls=[Call("BashOutput", {"bash_id": "bash_1"})])

    llm.script(
        Reply(calls=[Call("Bash", {"command": command, "run_in_background": True})]),
        after_start,
        *[after_read] * 102,
    )
    proc = etcode("run", "be loud", cwd=project, timeout=120)
    assert proc.returncode == 0, proc.stderr
    started = tool_results(llm.requests[1])[-1]
    assert started.startswith("Started bash_1 in the background (pid "), started[:300]
    status, skipped = reads[0].split("\n")[:2]
    assert status.startswith("bash_1 (") and status.endswith(": running")
    count = re.fullmatch(r"\[… ([\d\u202f]+) bytes skipped …\]", skipped)
    assert count and int(count.group(1).replace("\u202f", "")) > 0, skipped
    # (identical reads of the x's may get the loop reminder after them: not the output's)
    assert reads[-1].split("\n\n<system-reminder>")[0].rstrip().endswith("tail-marker")
    assert all(len(r.encode()) <= 60 * 1024 for r in [started, *reads])


#: Turns a test may take waiting for etcode to record an exit (a safety net: it takes one or two).
POLLS = 100


def until(
    seen: Callable[[Recorded], bool], meanwhile: Call, *then: Reply
) -> list[Callable[[Recorded], Reply]]:
    """Replies that make ``meanwhile`` call after call until a request is ``seen``, then the
    ``then`` replies: waiting for what etcode does on its own (record an exit) by turns, not
    by a guessed time."""
    state = {"seen": False, "next": 0}

    def reply(recorded: Recorded) -> Reply:
        state["seen"] = state["seen"] or seen(recorded)
        if not state["seen"]:
            return Reply(calls=[meanwhile])
        state["next"] += 1
        return then[state["next"] - 1]

    return [reply] * (POLLS + len(then))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_model_is_told_of_an_exit(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    background = "echo $$ > bg.pid; while [ ! -f go ]; do sleep 0.02; done; echo finishing; exit 3"
    # The foreground call lets it go and waits until it is gone; then turns until the note comes.
    wait = "touch go; while kill -0 $(cat bg.pid) 2>/dev/null; do sleep 0.02; done"
    note = "Background process bash_1 (echo $$ > bg.pid; while"
    llm.script(
        Reply(calls=[Call("Bash", {"command": background, "run_in_background": True})]),
        Reply(calls=[Call("Bash", {"command": wait})]),
        *until(lambda r: note in json.dumps(r.body), Call("Bash", {"command": "true"}), Reply(text="noted")),
    )
    proc = etcode("run", "start it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    bodies = [json.dumps(r.body) for r in llm.requests]
    told = [i for i, body in enumerate(bodies) if note in body]
    assert told and told[0] >= 2, told  # not before it exited
    assert "exited with code 3" in bodies[told[0]]
    assert told[0] == len(bodies) - 1  # the run ended at the note: nothing asked after it


def test_bash_output_reports_the_exit_instead_of_the_note(project: Path, llm: FakeLLM) -> None:
    """An exit BashOutput already reported is not told again."""
    write_config(project, llm)
    background = "echo $$ > bg.pid; while [ ! -f go ]; do sleep 0.02; done; echo finishing; exit 4"
    wait = "touch go; while kill -0 $(cat bg.pid) 2>/dev/null; do sleep 0.02; done"
    poll = Call("BashOutput", {"bash_id": "bash_1", "filter": "finish"})
    llm.script(
        Reply(calls=[Call("Bash", {"command": background, "run_in_background": True})]),
        Reply(calls=[Call("Bash", {"command": wait})]),
        # BashOutput until it reports the exit (etcode recorded it).
        *until(
            lambda r: "exited with code 4" in tool_results(r)[-1],
            poll,
            Reply(calls=[Call("BashOutput", {"bash_id": "bash_1", "filter": "("})]),
            Reply(text="done"),
        ),
    )
    proc = etcode("run", "start it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    polled = [tool_results(r)[-1] for r in llm.requests[3:-1]]  # [2]: the wait's
    assert "exited with code 4" in polled[-1] and "finishing" in "".join(polled)
    # The exit is told once: by a note when etcode recorded it between two reads (the
    # request after it), else by the read; never a note after the read reported it
    # (that a read drops the note: test_background.py, without the race).
    reported = len(llm.requests) - 2
    noted = [i for i, r in enumerate(llm.requests) if "Background process bash_1" in json.dumps(r.body)]
    assert not noted or noted[0] < reported, (noted, reported)
    bad = tool_results(llm.requests[-1])[-1]
    assert "filter '(' is not a regular expression" in bad
    assert bad.count("\n") == 0


def test_max_background_refuses_the_next_start(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, shell={"maxBackground": 1})
    mark = process_support.token()
    llm.script(
        Reply(calls=[Call("Bash", {"command": f"sleep {mark}", "run_in_background": True})]),
        Reply(calls=[Call("Bash", {"command": "echo never > second.txt", "run_in_background": True})]),
        Reply(text="one is enough"),
    )
    proc = etcode("run", "start two", cwd=project)
    assert proc.returncode == 0, proc.stderr
    refused = tool_results(llm.requests[2])[-1]
    assert "shell.maxBackground" in refused and "is 1" in refused
    assert not (project / "second.txt").exists()
    # The run ended: its process with it, and the user is told.
    assert not process_support.live_with(mark)
    assert f"warning: stopped 1 background process with the session: bash_1 (sleep {mark})" in proc.stderr


def test_permission_rules_apply(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": {"*": "allow", "touch *": "deny"}})
    llm.script(
        Reply(calls=[Call("Bash", {"command": "touch made.txt", "run_in_background": True})]),
        Reply(text="refused"),
    )
    proc = etcode("run", "--yes", "make it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    refused = tool_results(llm.requests[1])[-1]
    assert "denied" in refused.lower() and "bash_1" not in refused
    assert not (project / "made.txt").exists()


def test_sandbox_applies(project: Path, llm: FakeLLM) -> None:
    if unavailable_reason() is not None:
        missing("bwrap", f"no sandbox on this machine: {unavailable_reason()}")
    write_config(project, llm, sandbox="read-only")
    command = "echo x > written.txt; echo status $?"
    llm.script(
        Reply(calls=[Call("Bash", {"command": command, "run_in_background": True})]),
        Reply(text="read-only"),
    )
    proc = etcode("run", "write", cwd=project)
    assert proc.returncode == 0, proc.stderr
    result = tool_results(llm.requests[1])[-1]
    assert "Read-only file system" in result and "status 1" in result
    assert not (project / "written.txt").exists()


@pytest.mark.parametrize("signals", [[signal.SIGINT], [signal.SIGHUP], [signal.SIGINT, signal.SIGINT]])
def test_nothing_left_after_a_signal(project: Path, llm: FakeLLM, signals: list[signal.Signals]) -> None:
    """Ctrl-C and SIGHUP stop the run and end its processes; a second Ctrl-C quits at once
    (the foreground command ignores SIGTERM, so the clean stop would take its grace), and
    the groups are killed on the way out all the same: the background ones and the
    foreground command still in its grace."""
    write_config(project, llm)
    mark = process_support.token()
    background = f"echo $$ > bg.pid; sleep {mark} & sleep {mark}"
    held = process_support.token()
    # It notes the SIGTERM of the clean stop (a file) and lives on: the second Ctrl-C is
    # sent once etcode is in that stop, not after a guessed time.
    foreground = f"trap 'touch term' TERM; touch running; while :; do sleep {held} & wait; done"
    llm.script(
        Reply(calls=[Call("Bash", {"command": background, "run_in_background": True})]),
        Reply(calls=[Call("Bash", {"command": foreground})]),
        Reply(text="never asked"),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", "run", "start it"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (project / "running").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (project / "running").exists(), proc.communicate(timeout=10)
        pgid = int((project / "bg.pid").read_text())
        for sig in signals:
            proc.send_signal(sig)
            wait_for(lambda: (project / "term").exists() or proc.poll() is not None)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        left = asyncio.run(process_support.survivors(held, seconds=GONE_SECONDS))
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert group_gone(pgid), f"background group {pgid} outlived etcode"
    assert not process_support.live_with(mark)
    assert not left, f"the foreground command outlived etcode: {left}"


@pytest.mark.parametrize("signals", [[signal.SIGTERM], [signal.SIGHUP], [signal.SIGINT, signal.SIGINT]])
def test_nothing_left_after_a_signal_while_the_session_closes(
    project: Path, llm: FakeLLM, signals: list[signal.Signals]
) -> None:
    """The run has ended; the session's close is ending a background process that outlives
    SIGTERM (its grace): a signal then still leaves nothing running (etcode's handlers were
    removed before the close, and the signal ended etcode at once, the group left behind)."""
    write_config(project, llm)
    mark = process_support.token()
    # It notes the close's SIGTERM (a file), and lives on until the SIGKILL.
    background = f"echo $$ > bg.pid; trap 'touch term' TERM; while :; do sleep {mark} & wait; done"
    llm.script(
        Reply(calls=[Call("Bash", {"command": background, "run_in_background": True})]),
        Reply(text="started"),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", "run", "start it"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: (project / "term").exists() or proc.poll() is not None)
        assert (project / "term").exists(), proc.communicate(timeout=10)
        pgid = int((project / "bg.pid").read_text())
        for sig in signals:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        left = asyncio.run(process_support.survivors(mark, seconds=GONE_SECONDS))
    assert proc.returncode in (0, 130), err
    assert "Traceback" not in err
    assert group_gone(pgid), f"background group {pgid} outlived etcode"
    assert not left


def test_sandboxed_processes_die_with_a_killed_etcode(project: Path, llm: FakeLLM) -> None:
    """Even a SIGKILL of etcode (no clean-up runs) leaves no sandboxed background process:
    bubblewrap's --die-with-parent ends the sandbox with it."""
    if unavailable_reason() is not None:
        missing("bwrap", f"no sandbox on this machine: {unavailable_reason()}")
    write_config(project, llm, sandbox="workspace-write")
    mark = process_support.token()
    llm.script(
        Reply(calls=[Call("Bash", {"command": f"sleep {mark} & sleep {mark}", "run_in_background": True})]),
        Reply(calls=[Call("Bash", {"command": f"touch running; sleep {mark}"})]),
        Reply(text="never asked"),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", "run", "start it"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (project / "running").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (project / "running").exists(), proc.communicate(timeout=10)
        assert len(process_support.live_with(mark)) >= 3  # both background sleeps and the foreground one
        proc.kill()
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    left = asyncio.run(process_support.survivors(mark))
    assert not left, f"sandboxed processes outlived a killed etcode: {left}"


def test_max_background_below_one_is_a_config_error(project: Path, llm: FakeLLM) -> None:
    """0 would offer the tools and then refuse every start: the key says 1 to 64, in one line."""
    write_config(project, llm, shell={"maxBackground": 0})
    proc = etcode("run", "start one", cwd=project)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "etcode.json" in line and "shell.maxBackground" in line and "greater than or equal to 1" in line
    assert llm.requests == []


def test_the_same_call_with_a_new_answer_is_no_loop(project: Path, llm: FakeLLM) -> None:
    """Polling (BashOutput of a process that prints, ReadFile of a file that changes) asks the
    same thing and gets a new answer each time: no loop reminder (the detector said "got the
    same result" after any three identical calls). Three identical answers still get it."""
    write_config(project, llm)
    log = project / "server.log"
    log.write_text("starting 0\n", encoding="utf-8")
    answers: list[str] = []

    def poll(recorded: Recorded) -> Reply:
        answers.append(tool_results(recorded)[-1])
        if len(answers) < 4:  # the log grows between the first reads, then stays as it is
            log.write_text(f"starting {len(answers)}\n", encoding="utf-8")
        if len(answers) >= 6:
            return Reply(text="done")
        return Reply(calls=[Call("ReadFile", {"file_path": "server.log"})])

    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "server.log"})]), *[poll] * 6)
    proc = etcode("run", "watch the log", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert ["starting 0" in answers[0], "starting 1" in answers[1], "starting 2" in answers[2]] == [True] * 3
    assert all("<system-reminder>" not in answer for answer in answers[:4]), answers
    assert "<system-reminder>" in answers[5]  # "starting 3" three times in a row
