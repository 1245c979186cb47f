"""Claude Code's subagents (``.claude/agents/*.md``) as etcode agents.

Front matter ``name`` (else the file's name), ``description``, ``tools`` (Claude's tool
names, comma-separated or a list: only those are on; ``mcp__<server>__<tool>`` is etcode's
``<server>_<tool>``; names etcode has no tool for are left out with a warning) and ``model`` (a ``provider/model`` is kept; Claude's ``sonnet``/``opus``/``haiku``/``inherit``
or a bare Claude model id: the session's model); the body is the prompt. They are subagents (``mode:
"subagent"``): ``Task`` offers them and ``--agent NAME`` runs one, but they stay out of
the chat's agent cycle. Anything else Claude Code reads (``permissionMode``, ``color``,
``hooks``…) is ignored: nothing here loosens a permission, so project trust has nothing
to judge. A file that cannot be read, or whose name is a built-in agent's, is left out
with a warning (:func:`claude_agent_warnings`), and so is a project's file linked out of
the project (``prompt/project_files.refusal``; trust does not send it: agents are read
before a session knows it).
"""

from __future__ import annotations

import re
from pathlib import Path

from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue

#: Claude Code's tool names → etcode's (a name that is etcode's own is kept as it is).
CLAUDE_TOOLS: dict[str, tuple[str, ...]] = {
    "Read": ("ReadFile", "ReadManyFiles"),
    "Write": ("WriteFile",),
    "Edit": ("Edit",),
    "MultiEdit": ("Edit",),
    "Bash": ("Bash",),
    "BashOutput": ("BashOutput",),
    "KillBash": ("KillBash",),
    "KillShell": ("KillBash",),
    "Glob": ("Glob",),
    "Grep": ("Grep",),
    "LS": ("ListFiles",),
    "WebFetch": ("WebFetch",),
    "Task": ("Task",),
    "TodoWrite": ("TodoWrite",),
    "Skill": ("Skill",),
}
ETCODE_TOOLS = ("ReadFile", "ReadManyFiles", "ListFiles", "Glob", "Grep", "WriteFile", "Edit", "Bash", "BashOutput", "KillBash", "WebFetch", "TodoWrite", "Task", "Skill")  # fmt: skip
#: What ``etcode/mcp/naming.py`` makes of a server's or tool's name (this floor may not import it).
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_-]+")
#: The tool names each file's ``tools`` listed that etcode has no tool for (warned about).
_UNMAPPED: dict[Path, list[str]] = {}
#: Claude Code's model aliases: no model of etcode's, the session's is used.
MODEL_ALIASES = ("sonnet", "opus", "haiku", "inherit", "default")
BUILTIN_NAMES = ("build", "plan", "general", "explore", "workflow")


def model_setting(value: str | None) -> str | None:
    """A Claude Code ``model`` as etcode's: a ``provider/model`` is kept; an alias
    (``sonnet``, ``inherit``…) or a bare Claude id (``claude-3-5-haiku-…``, which would need
    an Anthropic key) is None: the session's model."""
    if value is None or "/" not in value or value.strip().lower() in MODEL_ALIASES:
        return None
    return value.strip()


def claude_agent_files(folder: Path) -> list[Path]:
    """``folder/.claude/agents/*.md`` (``folder`` is a project level or the home folder)."""
    agents = folder / ".claude" / "agents"
    return sorted(agents.glob("*.md")) if agents.is_dir() else []


def tool_switches(tools: JsonValue, unmapped: list[str] | None = None) -> dict[str, bool] | None:
    """``tools: Read, Grep`` as ``{"*": False, "ReadFile": True, ...}``; None when absent.
    An MCP tool ``mcp__<server>__<tool>`` is etcode's ``<server>_<tool>`` (``mcp__<server>``:
    all its tools); the names etcode has no tool for (``NotebookEdit``, ``WebSearch``…) are
    added to ``unmapped``."""
    if tools is None:
        return None
    names = tools.split(",") if isinstance(tools, str) else tools if isinstance(tools, list) else None
    if names is None:
        raise ConfigError("tools: expected a comma-separated string of tool names")
    switches: dict[str, bool] = {"*": False}
    for raw in names:
        name = str(raw).strip()
        found = CLAUDE_TOOLS.get(name, (name,) if name in ETCODE_TOOLS else _mcp_tool(name))
        if not found and name and unmapped is not None:
            unmapped.append(name)
        for tool in found:
            switches[tool] = True
    return switches


def _mcp_tool(name: str) -> tuple[str, ...]:
    """``mcp__github__create_issue`` → ``("github_create_issue",)``; ``mcp__github`` →
    ``("github_*",)``; anything else → ``()``."""
    if not name.startswith("mcp__"):
        return ()
    server, _, tool = name[len("mcp__") :].partition("__")
    if not server:
        return ()

    def clean(text: str) -> str:
        return _NOT_IN_NAMES.sub("_", text.strip()).strip("_") or "x"

    return (f"{clean(server)}_{clean(tool)}" if tool else f"{clean(server)}_*",)


#: Files read before, by (path, modification time, size): a run reads the agents up to three
#: times (the registry, the Task tool's subagents, the warnings), and parsing YAML is what
#: costs. A file that could not be read is kept as its error.
_READ: dict[tuple[Path, int, int], tuple[str, JsonObject] | ConfigError] = {}


def read_claude_agent(path: Path) -> tuple[str, JsonObject]:
    """``(name, settings)`` of one Claude Code agent file; :class:`ConfigError` naming it."""
    import copy

    try:
        stat = path.stat()
    except OSError as err:
        raise ConfigError(f"{path}: agent not read: {err.strerror or err}") from None
    key = (path, stat.st_mtime_ns, stat.st_size)
    found = _READ.get(key)
    if found is None:
        try:
            found = _read_claude_agent(path)
        except ConfigError as err:
            found = err
        if len(_READ) > 1000:
            _READ.clear()
        _READ[key] = found
    if isinstance(found, ConfigError):
        raise ConfigError(str(found))
    return found[0], copy.deepcopy(found[1])


#: A ``.claude/agents`` file larger than this is not read (a cloned project supplies them).
MAX_AGENT_BYTES = 256 * 1024


def _read_claude_agent(path: Path) -> tuple[str, JsonObject]:
    from etcode.util.front_matter import split_front_matter
    from etcode.util.fs import read_regular_capped

    where = str(path)
    try:
        text = read_regular_capped(path, MAX_AGENT_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{where}: agent not read: {getattr(err, 'strerror', None) or err}") from None
    meta, body = split_front_matter(text, where)
    name = meta.get("name") or path.stem
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: name: expected a string")
    settings: JsonObject = {"mode": "subagent"}
    for key in ("description", "model"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where}: {key}: expected a string")
    if isinstance(meta.get("description"), str):
        settings["description"] = str(meta["description"]).strip()
    model = model_setting(meta.get("model") if isinstance(meta.get("model"), str) else None)
    if model:
        settings["model"] = model
    unmapped: list[str] = []
    try:
        switches = tool_switches(meta.get("tools"), unmapped)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    _UNMAPPED[path] = unmapped
    if switches is not None:
        settings["tools"] = dict(switches)
    if body:
        settings["prompt"] = body
    return name.strip(), settings


def _refused(path: Path, root: Path | None) -> str | None:
    """Why a project's agent file must not be read (a link out of the project ``root``...)."""
    if root is None:
        return None
    from etcode.prompt.project_files import refusal

    return refusal(path, root)


def claude_agents(folder: Path, root: Path | None = None) -> dict[str, tuple[JsonObject, str]]:
    """``{name: (settings, source)}`` of ``folder``'s Claude Code agents; a broken file, a
    built-in agent's name or a file linked out of the project ``root`` is left out (see
    :func:`claude_agent_warnings`)."""
    found: dict[str, tuple[JsonObject, str]] = {}
    for path in claude_agent_files(folder):
        if _refused(path, root) is not None:
            continue
        try:
            name, settings = read_claude_agent(path)
        except ConfigError:
            continue
        if name not in BUILTIN_NAMES:
            found[name] = (settings, str(path))
    return found


def claude_agent_warnings(folders: list[Path], root: Path | None = None) -> list[str]:
    """One line per Claude Code agent file of ``folders`` that is left out, and why."""
    from etcode.prompt.project_files import skip_warning

    warnings: list[str] = []
    for folder in folders:
        for path in claude_agent_files(folder):
            reason = _refused(path, root)
            if reason is not None:
                warnings.append(skip_warning("agent", path, reason))
                continue
            try:
                name, _ = read_claude_agent(path)
            except ConfigError as err:
                warnings.append(f"{err} (agent skipped)")
                continue
            if name in BUILTIN_NAMES:
                warnings.append(f"{path}: {name} is a built-in agent's name; this file is ignored")
                continue
            unmapped = _UNMAPPED.get(path)
            if unmapped:
                names = ", ".join(unmapped)
                warnings.append(f"{path}: tools: etcode has no tool for {names}; the agent runs without them")
    return warnings
