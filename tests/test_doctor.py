"""`etcode doctor` end to end: the real command in a subprocess, against the fake LLM server
(its `GET /v1/models`), with real config files, a real bubblewrap (or a PATH without it)
and a real tmux server."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import TEST_KEY, etcode, write_config
from tests.fake_llm import FakeLLM
from tests.require import needs

REAL_KEY = "sk-proj-users-real-key-0123456789abcdef"


def doctor(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = etcode("doctor", *args, cwd=cwd, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def lines(proc: subprocess.CompletedProcess, name: str) -> list[str]:
    """The output's lines of check ``name`` (``✓ config     ...``)."""
    return [line for line in proc.stdout.splitlines() if re.match(rf"^\S {re.escape(name)}\s", line)]


def line(proc: subprocess.CompletedProcess, name: str) -> str:
    [found] = lines(proc, name)
    return found


def checks(proc: subprocess.CompletedProcess) -> dict[str, list[dict[str, Any]]]:
    data = json.loads(proc.stdout)
    out: dict[str, list[dict[str, Any]]] = {}
    for check in data["checks"]:
        out.setdefault(check["name"], []).append(check)
    return out


@pytest.fixture
def served(project: Path, llm: FakeLLM) -> Path:
    """A project whose model the fake server lists, and which checks the key."""
    write_config(project, llm)
    llm.listed_models = ["test-model", "other-model"]
    llm.expected_key = TEST_KEY
    return project


# ---- all well ------------------------------------------------------------------------------


def test_all_pass_against_a_running_server(served: Path, llm: FakeLLM) -> None:
    proc = doctor(served)
    assert proc.returncode == 0, proc.stdout
    config = served / "etcode.json"
    assert line(proc, "config") == f"✓ config     {config} (project, nothing in it needs trust)"
    model = line(proc, "model")
    assert model.startswith(f"✓ model      fake/test-model (openai wire) at {llm.openai_base_url};")
    assert model.endswith(f"; set in {config}")
    assert line(proc, "key") == f'✓ key        fake: set, from "apiKey" in {config} (not shown)'
    assert re.fullmatch(
        rf"✓ reachable  {re.escape(llm.openai_base_url)}/models answered in \d+ ms; test-model is served",
        line(proc, "reachable"),
    )
    assert not [x for x in proc.stdout.splitlines() if x.startswith("✗")]
    assert proc.stdout.splitlines()[-1].startswith("0 failed")
    # one request, the key sent as the chat sends it, and never printed
    assert llm.side_requests == ["GET /v1/models"] and llm.requests == []
    assert llm.side_headers[0]["authorization"] == f"Bearer {TEST_KEY}"
    assert TEST_KEY not in proc.stdout + proc.stderr


def test_the_anthropic_wire_is_asked_with_its_own_headers(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, "anthropic")
    llm.listed_models = ["test-model"]
    llm.expected_key = TEST_KEY
    proc = doctor(project)
    assert proc.returncode == 0, proc.stdout
    assert line(proc, "reachable").startswith(
        f"✓ reachable  {llm.anthropic_base_url}/v1/models?limit=1000 answered"
    )
    sent = llm.side_headers[0]
    assert sent["x-api-key"] == TEST_KEY and sent["anthropic-version"] and "authorization" not in sent


# ---- the server --------------------------------------------------------------------------


def test_a_stopped_server_is_a_failure_naming_its_url(served: Path, llm: FakeLLM) -> None:
    base = llm.openai_base_url
    llm.stop()  # the port is closed now
    proc = doctor(served)
    assert proc.returncode == 1
    reach = line(proc, "reachable")
    assert reach.startswith(f"✗ reachable  nothing answers at {base}: connection refused (GET {base}/models)")
    assert "start the server" in reach
    assert line(proc, "model").startswith("✓ model")  # the rest still ran


def test_a_refused_key_says_where_the_key_came_from(served: Path, llm: FakeLLM) -> None:
    llm.expected_key = "sk-another-key-the-server-wants-000"
    proc = doctor(served)
    assert proc.returncode == 1
    reach = line(proc, "reachable")
    assert reach.startswith(f"✗ reachable  {llm.openai_base_url}/models: HTTP 401: the key was refused")
    assert f'check "apiKey" in {served / "etcode.json"}' in reach
    assert TEST_KEY not in proc.stdout + proc.stderr


def test_a_model_the_server_does_not_list_is_a_warning(served: Path, llm: FakeLLM) -> None:
    llm.listed_models = ["qwen2.5-coder:7b", "llama3.2:latest"]
    proc = doctor(served)
    assert proc.returncode == 0
    reach = line(proc, "reachable")
    assert reach.startswith("! reachable")
    assert "does not list test-model (it lists qwen2.5-coder:7b, llama3.2:latest)" in reach
    assert "--model fake/NAME" in reach


def test_an_alias_of_a_listed_model_is_served(project: Path, llm: FakeLLM) -> None:
    """Anthropic lists dated ids; ``claude-sonnet-4-0`` is an alias of one."""
    config = {
        "model": "anthropic/claude-sonnet-4-0",
        "provider": [{"id": "anthropic", "baseURL": llm.anthropic_base_url, "apiKey": TEST_KEY}],
    }
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    llm.listed_models = ["claude-opus-4-20250514", "claude-sonnet-4-20250514"]
    proc = doctor(project)
    assert proc.returncode == 0, proc.stdout
    assert line(proc, "reachable").endswith("; claude-sonnet-4-0 is served")
    llm.listed_models = ["claude-opus-4-20250514"]
    missing = doctor(project)
    assert "does not list claude-sonnet-4-0 (it lists claude-opus-4-20250514)" in line(missing, "reachable")
    assert "or check the model's name" in line(missing, "reachable")


def test_a_server_that_does_not_answer_is_given_up_on(served: Path, llm: FakeLLM) -> None:
    llm.page("GET /v1/models", {"object": "list", "data": []}, delay=60)
    proc = doctor(served)
    assert proc.returncode == 1
    assert line(proc, "reachable").startswith(
        f"✗ reachable  {llm.openai_base_url}/models: no answer within 5 s"
    )


def test_offline_asks_nobody(served: Path, llm: FakeLLM) -> None:
    proc = doctor(served, "--offline")
    assert proc.returncode == 0, proc.stdout
    assert line(proc, "reachable") == "- reachable  not asked (--offline)"
    assert llm.side_requests == [] and llm.requests == []


def test_json_lists_every_check(served: Path, llm: FakeLLM) -> None:
    proc = doctor(served, "--json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["ok"] is True
    names = [c["name"] for c in data["checks"]]
    for name in ("config", "model", "key", "reachable", "sandbox", "tokenizer", "git", "terminal"):
        assert name in names
    assert {c["status"] for c in data["checks"]} <= {"ok", "warn", "fail", "skip"}
    assert all(set(c) == {"name", "status", "detail", "fix"} for c in data["checks"])
    llm.stop()
    failed = doctor(served, "--json")
    assert failed.returncode == 1 and json.loads(failed.stdout)["ok"] is False
    assert checks(failed)["reachable"][0]["status"] == "fail"


# ---- config --------------------------------------------------------------------------------


def test_a_bad_config_file_is_its_one_line_error_and_the_rest_still_runs(project: Path) -> None:
    (project / "etcode.json").write_text('{"model": "fake/m", "max_steps": "many"}', encoding="utf-8")
    error = etcode("run", "hi", cwd=project).stderr.strip()
    assert error.startswith("error: ") and "\n" not in error
    proc = doctor(project)
    assert proc.returncode == 1
    assert line(proc, "config").startswith(f"✗ config     {error.removeprefix('error: ')} — ")
    assert line(proc, "model") == "- model      not resolved: the configuration did not load"
    for name in ("sandbox", "tokenizer", "git", "terminal"):
        assert lines(proc, name), name


def test_a_missing_etcode_config_file_is_a_failure(project: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    proc = doctor(project, env={"ETCODE_CONFIG": str(missing)})
    assert proc.returncode == 1
    assert line(proc, "config").startswith(f"✗ config     ETCODE_CONFIG: no such config file: {missing} — ")


def test_an_untrusted_project_file_names_the_setting(served: Path, llm: FakeLLM, tmp_path: Path) -> None:
    marker = tmp_path / "mcp-started"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    write_config(served, llm, mcp={"marker": {"command": command}})
    proc = doctor(served)
    assert proc.returncode == 0  # a warning: the chat asks, `etcode run --trust` approves
    config = line(proc, "config")
    assert config.startswith(
        f"! config     {served / 'etcode.json'} (project): not trusted: mcp.marker runs `"
    )
    assert "etcode run --trust" in config
    assert not marker.exists()  # doctor starts no server

    from etcode.config.loader import load_config
    from etcode.trust.project import trust_files, untrusted

    loaded = load_config(served, served)
    trust_files(loaded, untrusted(loaded))
    trusted = doctor(served)
    assert line(trusted, "config") == f"✓ config     {served / 'etcode.json'} (project, trusted)"


def test_hooks_in_force_and_a_broken_settings_file(served: Path, llm: FakeLLM) -> None:
    """Issue 28.3: a project's ``.claude/settings.json`` hooks are a config line of their own
    (not trusted yet: left out, so the ``hooks`` line counts only the user's), a settings file
    that is not JSON is a ``hooks`` warning naming it; no hooks at all: no ``hooks`` line."""
    assert lines(doctor(served, "--offline"), "hooks") == []
    group = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
    user = Path.home() / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"hooks": {"PreToolUse": [group]}}), encoding="utf-8")
    settings = served / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [group], "Stop": [group]}}), encoding="utf-8")
    broken = served / ".claude" / "settings.local.json"
    broken.write_text("{oops", encoding="utf-8")
    proc = doctor(served, "--offline")
    assert proc.returncode == 0, proc.stdout
    expected = (
        f"! config     {settings} (project): not trusted: hooks.PreToolUse[0].hooks[0].command runs `./guard.sh`; "
        "hooks.Stop[0].hooks[0].command runs `./guard.sh` — approve it with `etcode run --trust"
    )
    assert any(found.startswith(expected) for found in lines(proc, "config")), proc.stdout
    found = lines(proc, "hooks")
    assert (
        found[0].startswith(f"! hooks      {broken}:1:2: invalid JSON")
        and "its hooks are left out" in found[0]
    )
    assert found[1] == f"✓ hooks      1 in force (PreToolUse 1) from {user}"

    from etcode.config.loader import load_config
    from etcode.trust.project import trust_files, untrusted

    loaded = load_config(served, served)
    trust_files(loaded, untrusted(loaded))
    trusted = doctor(served, "--offline")
    assert (
        lines(trusted, "hooks")[1]
        == f"✓ hooks      3 in force (PreToolUse 2, Stop 1) from {user}, {settings}"
    )


def test_an_untrusted_base_url_never_gets_the_users_key(project: Path, llm: FakeLLM) -> None:
    """A cloned project points the well-known anthropic id at its own server: the checks
    use the config without it (the real endpoint), so the user's key goes nowhere else."""
    hijack = {
        "model": "anthropic/claude-sonnet-4-20250514",
        "provider": [{"id": "anthropic", "baseURL": llm.anthropic_base_url}],
    }
    (project / "etcode.json").write_text(json.dumps(hijack), encoding="utf-8")
    proc = doctor(project, "--offline", env={"ANTHROPIC_API_KEY": REAL_KEY})
    assert proc.returncode == 0, proc.stdout
    assert f"provider.anthropic.baseURL sends ANTHROPIC_API_KEY to {llm.anthropic_base_url}" in line(
        proc, "config"
    )
    assert "at https://api.anthropic.com;" in line(proc, "model")
    assert line(proc, "key") == "✓ key        anthropic: set, from ANTHROPIC_API_KEY (not shown)"
    assert llm.side_requests == [] and llm.requests == []
    assert REAL_KEY not in proc.stdout + proc.stderr


# ---- model and key ---------------------------------------------------------------------------


def test_a_hosted_model_without_its_key_says_which_variable_to_set(project: Path) -> None:
    proc = doctor(project, "--model", "openai/gpt-4.1")
    assert proc.returncode == 1
    assert line(proc, "model").startswith(
        "✓ model      openai/gpt-4.1 (openai wire) at https://api.openai.com/v1;"
    )
    key = line(proc, "key")
    assert key.startswith("✗ key        openai/gpt-4.1: no API key — set OPENAI_API_KEY")
    assert line(proc, "reachable") == "- reachable  not asked: no model with a key"


def test_a_model_picked_by_its_key_says_so(project: Path) -> None:
    proc = doctor(project, "--offline", env={"ANTHROPIC_API_KEY": REAL_KEY})
    assert proc.returncode == 0, proc.stdout
    model = line(proc, "model")
    assert model.startswith(
        "✓ model      anthropic/claude-sonnet-4-20250514 (anthropic wire) at https://api.anthropic.com;"
    )
    assert model.endswith("; picked because ANTHROPIC_API_KEY is set")


def test_etcode_variables_are_a_layer_of_their_own(project: Path) -> None:
    proc = doctor(project, "--offline", env={"ETCODE_MODEL": "ollama/qwen2.5-coder:7b"})
    assert proc.returncode == 0, proc.stdout
    config = lines(proc, "config")
    assert config[0].startswith("✓ config     no etcode.json found")
    assert config[1:] == ["✓ config     ETCODE_MODEL=ollama/qwen2.5-coder:7b (environment)"]
    model = line(proc, "model")
    assert model.startswith(
        "✓ model      ollama/qwen2.5-coder:7b (openai wire) at http://127.0.0.1:11434/v1;"
    )
    assert model.endswith("; set in ETCODE_MODEL")
    assert line(proc, "key") == "✓ key        ollama: none needed (a local server)"


def test_no_model_at_all_says_how_to_configure_one(project: Path) -> None:
    proc = doctor(project)
    assert proc.returncode == 1
    model = line(proc, "model")
    assert model.startswith("✗ model      no model configured — set ANTHROPIC_API_KEY or OPENAI_API_KEY")
    assert "--model ollama/NAME" in model


@pytest.mark.parametrize("as_json", [False, True])
def test_the_key_is_never_printed(project: Path, as_json: bool) -> None:
    args = ["--model", "openai/gpt-4.1", "--offline", *(["--json"] if as_json else [])]
    proc = doctor(project, *args, env={"OPENAI_API_KEY": REAL_KEY})
    assert proc.returncode == 0, proc.stdout
    assert REAL_KEY not in proc.stdout + proc.stderr
    assert REAL_KEY[4:20] not in proc.stdout  # nor a piece of it
    if as_json:
        [model] = checks(proc)["model"]
        assert model["detail"].endswith("; set by --model")
        [key] = checks(proc)["key"]
        assert key == {
            "name": "key",
            "status": "ok",
            "detail": "openai: set, from OPENAI_API_KEY (not shown)",
            "fix": None,
        }
    else:
        assert line(proc, "key") == "✓ key        openai: set, from OPENAI_API_KEY (not shown)"


def test_a_key_read_from_the_environment_names_its_variable(
    project: Path, llm: FakeLLM, isolated_env: Path
) -> None:
    """The user's own config (the global file) reads the key from a variable."""
    folder = isolated_env / ".config" / "etcode"
    folder.mkdir(parents=True)
    write_config(folder, llm, api_key="{env:MY_SERVER_KEY}")
    llm.expected_key = REAL_KEY
    proc = doctor(project, env={"MY_SERVER_KEY": REAL_KEY})
    assert proc.returncode == 0, proc.stdout
    assert line(proc, "config") == f"✓ config     {folder / 'etcode.json'} (global)"
    assert line(proc, "key") == (
        f'✓ key        fake: set, from "apiKey" in {folder / "etcode.json"} (reads {{env:MY_SERVER_KEY}}) (not shown)'
    )
    assert line(proc, "reachable").startswith("✓ reachable")
    assert REAL_KEY not in proc.stdout + proc.stderr


def test_a_model_left_out_until_trusted_says_so(project: Path, llm: FakeLLM) -> None:
    """A project provider that reads the user's variable is left out until trusted: the
    model line says why it is unknown."""
    write_config(project, llm, api_key="{env:MY_SERVER_KEY}")
    proc = doctor(project, env={"MY_SERVER_KEY": REAL_KEY})
    assert proc.returncode == 1
    assert line(proc, "config").startswith(
        f"! config     {project / 'etcode.json'} (project): not trusted: provider.fake.apiKey sends $MY_SERVER_KEY"
    )
    model = line(proc, "model")
    assert model.startswith("✗ model") and 'unknown provider "fake"' in model
    assert "left out until you trust it: provider.fake.apiKey" in model
    assert llm.side_requests == [] and REAL_KEY not in proc.stdout + proc.stderr


# ---- the machine --------------------------------------------------------------------------


def bin_with(tmp_path: Path, **scripts: str) -> str:
    """A PATH of one folder holding only ``scripts`` (name → shell script body)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_the_sandbox_line_matches_this_machine(project: Path) -> None:
    from etcode.security.sandbox import unavailable_reason

    proc = doctor(project, "--offline")
    sandbox = line(proc, "sandbox")
    if unavailable_reason() is None:
        assert (
            sandbox
            == f"✓ sandbox    bubblewrap at {shutil.which('bwrap')} builds a sandbox (ran `true` in one)"
        )
    else:
        assert sandbox.startswith("! sandbox")


@needs("bwrap", not sys.platform.startswith("linux"), "bubblewrap is Linux's")
def test_without_bubblewrap_the_sandbox_line_says_how_to_install_it(project: Path, tmp_path: Path) -> None:
    path = bin_with(tmp_path)
    proc = doctor(project, "--offline", env={"PATH": path})
    assert proc.returncode == 1  # no model: that is the only failure
    sandbox = line(proc, "sandbox")
    assert sandbox.startswith("! sandbox    bubblewrap (bwrap) is not installed: the plan and explore agents")
    assert "`sudo apt install bubblewrap`" in sandbox
    # asked for in the config, it is a failure naming the file
    (project / "etcode.json").write_text('{"sandbox": "workspace-write"}', encoding="utf-8")
    asked = doctor(project, "--offline", env={"PATH": path})
    sandbox = line(asked, "sandbox")
    assert sandbox.startswith("✗ sandbox    bubblewrap (bwrap) is not installed; ")
    assert f'"sandbox": "workspace-write" in {project / "etcode.json"} needs it' in sandbox


@needs("bwrap", not sys.platform.startswith("linux"), "bubblewrap is Linux's")
def test_a_bubblewrap_that_cannot_build_a_sandbox_is_named(project: Path, tmp_path: Path) -> None:
    refusing = "echo 'bwrap: No permissions to create new namespace' >&2; exit 1"
    proc = doctor(project, "--offline", env={"PATH": bin_with(tmp_path, bwrap=refusing)})
    sandbox = line(proc, "sandbox")
    assert sandbox.startswith(
        f"! sandbox    bubblewrap at {tmp_path / 'bin' / 'bwrap'} cannot build a sandbox here: "
        "bwrap: No permissions to create new namespace"
    )
    assert "kernel.unprivileged_userns_clone" in sandbox


def test_tokenizer_files_missing_is_a_warning(project: Path, tmp_path: Path) -> None:
    empty = tmp_path / "no-tiktoken"
    empty.mkdir()
    proc = doctor(project, "--offline", "--model", "ollama/qwen", env={"TIKTOKEN_CACHE_DIR": str(empty)})
    assert proc.returncode == 0, proc.stdout
    assert line(proc, "tokenizer").startswith(
        f"! tokenizer  cl100k_base is not cached in {empty}: token counts are estimated"
    )


def test_cached_tokenizer_files_pass(project: Path, tmp_path: Path) -> None:
    import hashlib

    cache = tmp_path / "tiktoken"
    cache.mkdir()
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    (cache / hashlib.sha1(url.encode()).hexdigest()).write_text("IQ== 0\n", encoding="utf-8")
    proc = doctor(project, "--offline", "--model", "ollama/qwen", env={"TIKTOKEN_CACHE_DIR": str(cache)})
    assert line(proc, "tokenizer") == f"✓ tokenizer  cl100k_base cached in {cache}"


def test_git_and_ripgrep_missing_are_warnings(project: Path, tmp_path: Path) -> None:
    proc = doctor(project, "--offline", "--model", "ollama/qwen", env={"PATH": bin_with(tmp_path)})
    assert line(proc, "git").startswith("! git        git not found")
    beside = Path(sys.executable).parent / "rg"  # a ripgrep wheel installs rg there
    if not beside.is_file():
        assert line(proc, "ripgrep").startswith("! ripgrep    rg not found")


def test_a_pipe_is_not_the_chats_terminal(project: Path) -> None:
    proc = doctor(project, "--offline", "--model", "ollama/qwen")
    assert line(proc, "terminal").startswith("! terminal   stdout is not a terminal")
    assert proc.returncode == 0


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_tmux_extended_keys_both_ways(project: Path, tmp_path: Path) -> None:
    socket = tmp_path / "tmux.sock"

    def tmux(*args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(socket), "-f", os.devnull, *args], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    tmux("new-session", "-d", "-s", "doctor", "sleep 300")
    try:
        pid = tmux("display-message", "-p", "#{pid}")
        env = {"TMUX": f"{socket},{pid},0"}
        tmux("set-option", "-s", "extended-keys", "off")
        off = doctor(project, "--offline", "--model", "ollama/qwen", env=env)
        assert line(off, "tmux").startswith(
            "! tmux       extended-keys off: Shift+Enter arrives as Enter — add `set -s extended-keys on`"
        )
        assert off.returncode == 0
        tmux("set-option", "-s", "extended-keys", "on")
        on = doctor(project, "--offline", "--model", "ollama/qwen", env=env)
        assert line(on, "tmux") == "✓ tmux       extended-keys on: Shift+Enter reaches the chat"
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=30)


def test_outside_tmux_there_is_no_tmux_line(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    proc = subprocess.run(
        [sys.executable, "-m", "etcode", "doctor", "--offline"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert lines(proc, "tmux") == [] and lines(proc, "terminal")


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_in_a_real_terminal_inside_tmux(project: Path) -> None:
    """A tmux pane is a terminal (its size is read) and the pane's TMUX leads to the tmux
    server's own extended-keys (off by default)."""
    from tests.test_tui_cli import Tmux, _quote, tmux_env

    tmux = Tmux("doctor")
    command = f"env {tmux_env()} TERM=xterm-256color {_quote(sys.executable)} -m etcode doctor --offline"
    try:
        tmux.start(f"{command} --model ollama/qwen; echo DOCTOR-EXIT-$?; sleep 60", project)
        screen = tmux.wait_for("DOCTOR-EXIT-")
        assert "DOCTOR-EXIT-0" in screen, screen
        assert "✓ terminal   TERM=xterm-256color, no colours (NO_COLOR is set), 120x40" in screen, screen
        assert "! tmux       extended-keys off: Shift+Enter arrives as Enter" in screen, screen
    finally:
        tmux.kill()


def test_offline_loads_no_http_client_nor_the_chat(project: Path) -> None:
    from tests.cli_helpers import etcode_imports

    proc, imported = etcode_imports("doctor", "--offline", "--model", "ollama/qwen", cwd=project)
    assert proc.returncode == 0, proc.stdout
    assert "etcode.doctor" in imported  # the measurement itself works
    heavy = {"textual", "tiktoken", "mcp", "httpx", "etcode.ui", "etcode.acp"}
    assert sorted(m for m in imported if any(m == h or m.startswith(f"{h}.") for h in heavy)) == []


def test_skills_and_commands_found_and_broken(served: Path) -> None:
    """Issue 28: the skills and custom commands found are a line each (none: no line), and a
    broken one is a warning naming its file, before any run meets it."""
    assert lines(doctor(served, "--offline"), "skills") == []
    assert lines(doctor(served, "--offline"), "commands") == []
    good = served / ".claude" / "skills" / "release-notes" / "SKILL.md"
    good.parent.mkdir(parents=True)
    good.write_text("---\nname: release-notes\ndescription: Drafts release notes.\n---\nsteps\n")
    broken = served / ".claude" / "skills" / "broken" / "SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname: [broken\n---\nx\n")
    command = served / ".claude" / "commands" / "git" / "commit.md"
    command.parent.mkdir(parents=True)
    command.write_text("---\ndescription: Commit\n---\nCommit $ARGUMENTS\n")
    proc = doctor(served, "--offline")
    assert proc.returncode == 0, proc.stdout
    skills = lines(proc, "skills")
    assert (
        skills[0].startswith(f"! skills     skipped skill {broken}: line 2 invalid YAML") and len(skills) == 2
    ), proc.stdout
    assert skills[1] == "✓ skills     1 found (project): release-notes"
    assert line(proc, "commands") == "✓ commands   1 found: /git:commit"
