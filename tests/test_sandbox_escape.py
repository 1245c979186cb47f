"""What a sandboxed command could reach on the host (issue 27, items 3 and 4), with the real
bubblewrap through ``etcode run``: unix sockets outside the sandbox (a seccomp filter), the
variables naming them, the host ``/tmp``, credential stores in the home folder, and config or
instruction files created in the project for the next session to load."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from etcode.security.sandbox import SandboxPolicy, unavailable_reason
from etcode.tools.base import ToolContext
from etcode.tools.bash import BashTool
from etcode.tools.client_io import TERMINAL_KEY, TerminalRun
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.permission_support import ruled_context
from tests.process_support import token
from tests.require import needs

pytestmark = needs(
    "bwrap", unavailable_reason() is not None, f"no sandbox on this machine: {unavailable_reason()}"
)

# --yes: the commands are not plain words (expansions), which a rule may ask about; it
# never lifts the sandbox.
MODES = [
    pytest.param(("--sandbox", "read-only", "--yes"), id="read-only"),
    pytest.param(("--sandbox", "workspace-write", "--yes"), id="workspace-write"),
    pytest.param(("--agent", "plan", "--yes"), id="plan"),
]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the project and outside /tmp (which the sandbox replaces)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="etc-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def project(tmp_path: Path, llm: FakeLLM) -> Path:
    root = tmp_path / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    write_config(root, llm, agent={"plan": {"permission": {"bash": {"*": "allow"}}}})
    return root.resolve()


class UnixServer:
    """A unix socket service on the host that counts the connections it accepts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.accepted = 0
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(8)
        self.server.settimeout(0.1)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.sendall(b"hello from the host\n")
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.server.close()


@pytest.fixture
def service(outside: Path) -> Iterator[UnixServer]:
    server = UnixServer(outside / "svc.sock")
    yield server
    server.close()


def connect_command(path: Path) -> str:
    code = (
        "import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect({str(path)!r}); print('REPLY:', s.recv(100).decode().strip())"
    )
    return f'{sys.executable} -c "{code}"'


def sent(llm: FakeLLM) -> str:
    return json.dumps([request.body["messages"] for request in llm.requests])


def run_command(llm: FakeLLM, cwd: Path, flags: tuple[str, ...], command: str, **kw: Any) -> str:
    """``etcode run FLAGS`` whose model runs ``command`` once; what the model was sent."""
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", *flags, "go", cwd=cwd, **kw)
    assert proc.returncode == 0, proc.stderr
    return sent(llm)


@pytest.mark.parametrize("flags", MODES)
def test_no_host_unix_socket_from_the_sandbox(
    project: Path, llm: FakeLLM, service: UnixServer, flags: tuple[str, ...]
) -> None:
    seen = run_command(llm, project, flags, connect_command(service.path))
    assert "hello from the host" not in seen and service.accepted == 0
    assert "Operation not permitted" in seen  # socket(AF_UNIX) refused by the filter


def test_allow_unix_sockets_reopens_them(project: Path, llm: FakeLLM, service: UnixServer) -> None:
    """The escape hatch: any listed socket turns the filter off (it cannot tell paths apart)."""
    sandbox = {"mode": "workspace-write", "allowUnixSockets": [str(service.path)]}
    write_config(project, llm, sandbox=sandbox)
    refused = etcode("run", "go", cwd=project)  # a project file listing one needs trust
    assert refused.returncode == 1 and "sandbox.allowUnixSockets[0]" in refused.stderr
    command = connect_command(service.path) + '; echo "agent=$SSH_AUTH_SOCK"'
    seen = run_command(llm, project, ("--yes",), command, env={"SSH_AUTH_SOCK": str(service.path)})
    assert "REPLY: hello from the host" in seen and service.accepted == 1
    assert f"agent={service.path}" in seen  # a listed socket's variable is kept


@pytest.mark.parametrize("flags", MODES)
def test_no_socket_variables_in_the_sandbox(project: Path, llm: FakeLLM, flags: tuple[str, ...]) -> None:
    env = {
        "SSH_AUTH_SOCK": "/var/tmp/ssh-agent.sock",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus",
        "DOCKER_HOST": "unix:///var/run/docker.sock",
        "GPG_AGENT_INFO": "/run/gpg:0:1",
    }
    command = 'echo "vars: ${SSH_AUTH_SOCK:-none} ${DBUS_SESSION_BUS_ADDRESS:-none} ${DOCKER_HOST:-none} ${GPG_AGENT_INFO:-none}"'
    seen = run_command(llm, project, flags, command, env=env)
    assert "vars: none none none none" in seen


@pytest.fixture
def home(outside: Path) -> dict[str, str]:
    """A home folder outside /tmp holding fake credentials, as the environment of etcode."""
    folder = outside / "home"
    stores = {
        ".ssh/id_rsa": "FAKE-SSH-KEY-1234",
        ".aws/credentials": "FAKE-AWS-SECRET-5678",
        ".netrc": "machine x password FAKE-NETRC-9012",
        ".docker/config.json": '{"auths": "FAKE-DOCKER-3456"}',
        ".config/gh/hosts.yml": "oauth_token: FAKE-GH-7890",
        ".git-credentials": "https://u:FAKE-GITCRED-1111@example.com",
        ".local/share/etcode/notes": "FAKE-ETCODE-DATA-2222",
        ".config/etcode/etcode.json": '{"$schema": "FAKE-ETCODE-CONFIG-3333"}',
    }
    for name, text in stores.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / ".docker" / "daemon.json").write_text("visible-docker-setting", encoding="utf-8")
    outputs = folder / ".local/share/etcode/tool-output"  # saved outputs the model is pointed at
    outputs.mkdir(parents=True)
    (outputs / "tool_1").write_text("visible-saved-output", encoding="utf-8")
    env = {"HOME": str(folder)}
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share")):
        env[var] = str(folder / sub)
    for var in ("XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[var] = os.environ[var]
    return env


@pytest.mark.parametrize("flags", MODES)
def test_credential_stores_are_hidden(
    project: Path, llm: FakeLLM, home: dict[str, str], flags: tuple[str, ...]
) -> None:
    files = (".ssh/id_rsa", ".aws/credentials", ".netrc", ".docker/config.json", ".config/gh/hosts.yml",
             ".git-credentials", ".local/share/etcode/notes", ".config/etcode/etcode.json", ".docker/daemon.json",
             ".local/share/etcode/tool-output/tool_1")  # fmt: skip
    command = "; ".join(f'cat "$HOME/{name}"' for name in files) + "; ls -A \"$HOME/.ssh\"; printf 'EN%s' D"
    seen = run_command(llm, project, flags, command, env=home)
    assert "FAKE-" not in seen
    assert "visible-docker-setting" in seen and "END" in seen  # the rest of the home is readable
    assert "visible-saved-output" in seen


def test_workspace_write_has_a_private_tmp(project: Path, llm: FakeLLM) -> None:
    mark = f"/tmp/etcode-private-{token()}"
    seen = run_command(
        llm, project, ("--sandbox", "workspace-write", "--yes"), f"printf 'in%s' side > {mark} && cat {mark}"
    )
    assert "inside" in seen  # writable inside the command
    assert not Path(mark).exists()


def test_config_and_instruction_files_cannot_be_created(project: Path, llm: FakeLLM) -> None:
    """In workspace-write a command cannot plant config or instructions for the next
    session, in the worktree root or the working directory, and leaves no placeholder."""
    sub = project / "src"
    (project / ".git" / "config").write_text("[core]\n\thooksPath = .husky/_\n", encoding="utf-8")
    (project / ".husky" / "_").mkdir(parents=True)
    (project / ".husky" / "pre-commit").write_text("npm test\n", encoding="utf-8")
    before = {p.relative_to(project) for p in project.rglob("*")}
    attempts = [
        "echo '{}' > etcode.json", "echo '{}' > etcode.jsonc", "mkdir -p .etcode/agent",
        "echo x > .etcode/agent/build.md", "mkdir -p .claude/commands", "mkdir .agents",
        "echo x > AGENTS.md", "echo x > CLAUDE.md", "echo x > ETCODE.md",
        "echo x > ../AGENTS.md", "mkdir ../.etcode", "echo '{}' > ../etcode.jsonc",
        "echo x > ../.git/hooks/pre-commit", "echo x >> ../.git/config",
        "echo x >> ../.husky/pre-commit", "echo x > ../.husky/_/pre-commit",
    ]  # fmt: skip
    command = "; ".join(f"({attempt}) 2>/dev/null && printf 'MA%s\\n' DE {attempt!r}" for attempt in attempts)
    seen = run_command(
        llm, sub, ("--sandbox", "workspace-write", "--yes"), command + "; touch ok; printf 'EN%s' D"
    )
    assert "MADE" not in seen and "END" in seen
    after = {p.relative_to(project) for p in project.rglob("*")}
    assert after - before == {Path("src/ok")}  # the ordinary write, and no placeholder left
    assert (project / ".husky" / "pre-commit").read_text(encoding="utf-8") == "npm test\n"


def test_a_protected_link_is_put_back(project: Path, llm: FakeLLM) -> None:
    """A bind protects a link's target, not the link: one the command replaced is restored."""
    (project / "AGENTS.md").write_text("the project's rules\n", encoding="utf-8")
    (project / "CLAUDE.md").symlink_to("AGENTS.md")
    command = "rm CLAUDE.md && echo planted > CLAUDE.md && cat CLAUDE.md; echo planted >> AGENTS.md"
    seen = run_command(llm, project, ("--sandbox", "workspace-write", "--yes"), command)
    assert os.readlink(project / "CLAUDE.md") == "AGENTS.md"
    assert (project / "AGENTS.md").read_text(encoding="utf-8") == "the project's rules\n"
    assert "The sandbox put back CLAUDE.md" in seen


async def test_existing_config_files_stay_and_concurrent_commands_share_placeholders(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("the project's own\n", encoding="utf-8")
    ctx = ruled_context(root.resolve(), None, None, sandbox=SandboxPolicy("workspace-write"))
    tool = BashTool()

    async def bash(command: str) -> Any:
        return await tool.run(tool.parse({"command": command}), ctx)

    # The slow command holds the placeholder while the quick one starts and ends with it:
    # its end must not remove the mount point the slow one still relies on.
    from etcode.security.sandbox import settle

    slow = asyncio.create_task(
        bash("touch started; until [ -e go ]; do sleep 0.02; done; echo x > etcode.json || echo refused-slow")
    )
    try:
        quick = await bash(
            "until [ -e started ]; do sleep 0.02; done; echo x > etcode.json || echo refused-quick; cat AGENTS.md"
        )
        settle()  # the quick command's placeholders are released before the slow one writes
    finally:
        (root / "go").touch()  # the slow command ends whatever happened
        slow_result = await slow
    assert "refused-slow" in slow_result.output and "refused-quick" in quick.output
    assert "the project's own" in quick.output
    settle()  # placeholders are removed in a worker thread after the command
    assert sorted(p.name for p in root.iterdir()) == [".git", "AGENTS.md", "go", "started"]


OTHER_PROCESS = """
import subprocess, sys
from pathlib import Path
from etcode.security.sandbox import SandboxPolicy, prepare
root = Path(sys.argv[1])
command = "echo x > b-started; until [ -e b-go ]; do sleep 0.02; done; echo planted > etcode.json || echo refused-b"
launch = prepare(SandboxPolicy("workspace-write"), command, "/bin/bash", root, root)
proc = subprocess.run(launch.argv, pass_fds=launch.pass_fds, capture_output=True, text=True, timeout=120)
launch.close()
print(proc.stdout + proc.stderr)
"""


async def test_another_etcode_process_keeps_a_placeholder_it_uses(tmp_path: Path) -> None:
    """Two etcode processes in one worktree: the first one's command ends while the
    second one's sandbox still relies on the first one's placeholder for ``etcode.json``.
    Removing it then (as a count kept in one process did) detached the second sandbox's
    read-only mount and let it plant the file."""
    from etcode.security.sandbox import release_mount_points, settle
    from tests.process_support import wait_for_file

    root = (tmp_path / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    ctx = ruled_context(root, None, None, sandbox=SandboxPolicy("workspace-write"))
    tool = BashTool()
    first = asyncio.create_task(
        tool.run(tool.parse({"command": "echo x > a-started; until [ -e a-go ]; do sleep 0.02; done"}), ctx)
    )
    other = None
    try:
        await wait_for_file(root / "a-started")
        assert (root / "etcode.json").exists()  # the first command's placeholder
        other = await asyncio.create_subprocess_exec(
            sys.executable, "-c", OTHER_PROCESS, str(root), stdout=subprocess.PIPE
        )
        await wait_for_file(root / "b-started")
    finally:
        (root / "a-go").touch()
        await first
    settle()  # the first process tried to remove its placeholder
    (root / "b-go").touch()
    assert other is not None
    out, _ = await asyncio.wait_for(other.communicate(), 120)
    assert "refused-b" in out.decode()
    assert not (root / "etcode.json").exists() or (root / "etcode.json").read_text() == ""
    release_mount_points([])  # the next command's end: nothing uses it now
    settle()
    assert not (root / "etcode.json").exists()


class LocalTerminal:
    """An editor terminal that runs the command on this machine."""

    async def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout_s: float,
                  abort: asyncio.Event, call_id: str) -> TerminalRun:  # fmt: skip
        proc = await asyncio.to_thread(
            subprocess.run, argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout_s
        )
        return TerminalRun(output=proc.stdout + proc.stderr, exit_code=proc.returncode, terminal_id="t1")


async def test_the_editors_terminal_gets_the_filter_too(tmp_path: Path, service: UnixServer) -> None:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    ctx: ToolContext = ruled_context(root, None, None, sandbox=SandboxPolicy("read-only"))
    ctx.state[TERMINAL_KEY] = LocalTerminal()
    tool = BashTool()
    result = await tool.run(tool.parse({"command": connect_command(service.path)}), ctx)
    assert result.data["terminalId"] == "t1"
    assert "Operation not permitted" in result.output and service.accepted == 0


# ---- the filter itself ------------------------------------------------------------------------

PROBE = r"""
import ctypes, errno, json, socket, sys
program = open(sys.argv[1], "rb").read()
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[2] == "on":
    assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    assert libc.prctl(22, 2, ctypes.byref(Fprog(len(program) // 8, program)), 0, 0) == 0  # SECCOMP_MODE_FILTER
found = {}
for name, make in (("unix", lambda: socket.socket(socket.AF_UNIX)), ("inet", socket.socket),
                   ("pair", socket.socketpair)):
    try:
        make()
        found[name] = "ok"
    except OSError as err:
        found[name] = errno.errorcode[err.errno]
ctypes.set_errno(0)
libc.syscall(425, 1, None)  # io_uring_setup(1, NULL): EFAULT when allowed
found["io_uring"] = errno.errorcode.get(ctypes.get_errno(), "ok")
print(json.dumps(found))
"""


@pytest.mark.parametrize("state", ["on", "off"])
def test_the_filter_refuses_only_unix_sockets_and_io_uring(tmp_path: Path, state: str) -> None:
    from etcode.security.seccomp import unix_socket_filter

    program = unix_socket_filter()
    assert program is not None and len(program) % 8 == 0
    (tmp_path / "filter.bpf").write_bytes(program)
    probe = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "filter.bpf"), state],
                           capture_output=True, text=True, timeout=30)  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    refused = "EPERM" if state == "on" else "ok"
    assert found["unix"] == refused and found["io_uring"] == ("EPERM" if state == "on" else "EFAULT")
    assert (found["inet"], found["pair"]) == ("ok", "ok")


def test_no_filter_for_a_machine_it_is_not_written_for() -> None:
    from etcode.security.seccomp import unix_socket_filter

    assert unix_socket_filter("riscv64") is None
    assert unix_socket_filter("aarch64") != unix_socket_filter("x86_64")
