"""Agents: the built-in ones and custom ones from config and markdown files.

Sources, later wins field by field: built-in < Claude Code's ``~/.claude/agents/*.md`` <
global markdown (``<config dir>/agent/<name>.md``) < config (``"agent": {...}``) < project
markdown from the worktree root down to the working directory, deeper wins, and at each
level ``.claude/agents/*.md`` (``claude_agents.py``) < ``.etcode/agent/<name>.md``. A
markdown file's YAML front matter holds the settings; its body is the prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from etcode.contract.tool_names import etcode_tool_name
from etcode.util.errors import ConfigError, UsageError
from etcode.util.json_types import JsonObject, JsonValue
from etcode.util.wildcard import wildcard_match

if TYPE_CHECKING:
    from etcode.config.raw import Loc

Mode = Literal["primary", "subagent", "all"]
MODES: tuple[str, ...] = ("primary", "subagent", "all")
SETTINGS = (
    "description", "prompt", "model", "tools", "permission", "steps", "mode", "temperature", "sandbox",
)  # fmt: skip
SANDBOX_MODES = ("off", "workspace-write", "read-only")
DEFAULT_AGENT = "build"
AGENT_DIRS = ("agent", "agents")

#: Bash commands the read-only agents may run without asking.
READ_ONLY_COMMANDS = (
    "ls", "pwd", "cat", "head", "tail", "wc", "grep", "rg", "find",
    "git status", "git diff", "git log", "git show",
)  # fmt: skip
#: Later patterns that send a read-only command back to "ask": side effects hidden in flags,
#: in any position (``find -delete`` as well as ``find . -delete``). Chaining, substitutions,
#: ``-exec``/``--pre`` programs and redirections need no pattern: the shell parser hands
#: each command they run, and ``> file`` for each file written, to the rules on its own.
_ASK_AGAIN = (
    "find *-delete*", "find *-fprint*", "find *-fls*",
    "git *--output*", "git -c *", "git *--config-env*", "git *--exec-path*", "git *--ext-diff*",
    "git *--textconv*", "rg *--pre*",
)  # fmt: skip


def read_only_bash() -> dict[str, str]:
    """Bash permission rules (last match wins): ask for everything but read-only commands."""
    rules = {"*": "ask"}
    for command in READ_ONLY_COMMANDS:
        rules[command] = "allow"
        rules[f"{command} *"] = "allow"
    rules.update(dict.fromkeys(_ASK_AGAIN, "ask"))
    return rules


@dataclass
class AgentInfo:
    """One agent. ``tools`` enables/disables tools by name or wildcard (``{"*": False,
    "ReadFile": True}``; last match wins, default enabled). ``permission`` holds rules as
    in the config (``{"Bash": {"*": "ask", "ls *": "allow"}, "Edit": "deny"}``).
    ``source`` is where the prompt came from; ``prompt_builtin`` marks etcode's own
    prompt text (not wrapped by the custom agent template)."""

    name: str
    description: str | None = None
    prompt: str | None = None
    model: str | None = None
    tools: dict[str, bool] = field(default_factory=dict)
    permission: JsonObject | str | None = None
    steps: int | None = None
    mode: Mode = "all"
    temperature: float | None = None
    #: How its Bash commands are confined ("off", "workspace-write", "read-only"); None:
    #: as the config says. ``sandbox_source`` is "builtin" for a built-in agent's default.
    sandbox: str | None = None
    sandbox_source: str | None = None
    builtin: bool = False
    source: str | None = None
    prompt_builtin: bool = False

    def tool_setting(self, tool_name: str) -> bool | None:
        """What the agent's ``tools`` settings say of ``tool_name`` (the last key that names
        it or matches it as a wildcard wins), None when none does. The agent-loop design's
        name of a tool names it too (``todo_write`` for ``TodoWrite``)."""
        found: bool | None = None
        for pattern, value in self.tools.items():
            if etcode_tool_name(pattern) == tool_name or wildcard_match(tool_name, pattern):
                found = bool(value)
        return found

    def tool_enabled(self, tool_name: str) -> bool:
        """Whether ``tool_name`` is on for this agent (on unless its settings say off)."""
        return self.tool_setting(tool_name) is not False

    def filter_tools(self, names: Iterable[str]) -> list[str]:
        """The subset of ``names`` this agent may use, in the given order."""
        return [name for name in names if self.tool_enabled(name)]


# ---- built-ins ----------------------------------------------------------------------


def _template(name: str) -> str:
    from etcode.prompt import templates

    return templates.load(name)


def builtin_agents() -> dict[str, AgentInfo]:
    """Fresh built-in agents: build, plan, general, explore, workflow."""
    read_only_tools = {"WriteFile": False, "Edit": False, "KillBash": False}
    read_only_permission = {"WriteFile": "deny", "Edit": "deny", "Bash": read_only_bash()}
    return {
        "build": AgentInfo(
            "build",
            "The default agent: reads, edits and runs commands with every tool enabled.",
            mode="primary",
            builtin=True,
        ),
        "plan": AgentInfo(
            "plan",
            "Read-only planning: investigates the code and proposes a plan without changing files.",
            prompt=_template("agent/plan.txt"),
            tools=dict(read_only_tools),
            permission=read_only_permission,
            sandbox="read-only",
            sandbox_source="builtin",
            mode="primary",
            builtin=True,
            source="agent/plan.txt",
            prompt_builtin=True,
        ),
        "general": AgentInfo(
            "general",
            "General-purpose sub-agent for research and multi-step tasks handed over by another agent.",
            prompt=_template("agent/general.txt"),
            tools={"Task": False},
            mode="subagent",
            builtin=True,
            source="agent/general.txt",
            prompt_builtin=True,
        ),
        "explore": AgentInfo(
            "explore",
            "Fast read-only sub-agent for finding files, symbols and answers in a codebase.",
            prompt=_template("agent/explore.txt"),
            tools={**read_only_tools, "TodoWrite": False, "Task": False},
            permission={**read_only_permission, "Bash": read_only_bash()},
            sandbox="read-only",
            sandbox_source="builtin",
            mode="subagent",
            builtin=True,
            source="agent/explore.txt",
            prompt_builtin=True,
        ),
        "workflow": AgentInfo(
            "workflow",
            "Planner → Executor → Verifier: plans todos, works through them with tools, checks the result.",
            tools={"TodoWrite": False},
            mode="primary",
            builtin=True,
        ),
    }


# ---- settings from config objects, dicts and markdown -------------------------------


def settings_of(value: object) -> JsonObject:
    """The set (non-None) agent settings of a dict or an object with those attributes."""
    if isinstance(value, Mapping):
        items = {key: value[key] for key in (*SETTINGS, "disable") if key in value}
    else:
        items = {key: getattr(value, key, None) for key in (*SETTINGS, "disable")}
    return {key: item for key, item in items.items() if item is not None}


def _is_positive_int(value: JsonValue) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def _is_number(value: JsonValue) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


#: The settings checked after ``tools``, in order: (key, accepts the value, what was expected).
#: A key that is absent is not checked; ``steps`` and ``temperature`` may also be null.
_SETTING_CHECKS: tuple[tuple[str, Callable[[JsonValue], bool], str], ...] = (
    ("permission", lambda v: isinstance(v, Mapping | str), 'an object of rules or "allow" / "ask" / "deny"'),
    ("steps", lambda v: v is None or _is_positive_int(v), "a positive integer"),
    ("mode", lambda v: v in MODES, '"primary", "subagent" or "all"'),
    ("sandbox", lambda v: v in SANDBOX_MODES, '"off", "workspace-write" or "read-only"'),
    ("temperature", lambda v: v is None or _is_number(v), "a number"),
)


def _tool_switches(tools: JsonValue, bad: Callable[[str, str], ConfigError]) -> dict[str, bool] | None:
    """``tools`` as ``{name: on}``; a Claude Code style allow-list ("ReadFile, Grep" or a
    list) allows those tools only. None when not given."""
    if isinstance(tools, str | list):
        names = tools.split(",") if isinstance(tools, str) else tools
        tools = {"*": False, **{str(t).strip(): True for t in names if str(t).strip()}}
    if tools is None:
        return None
    if not isinstance(tools, Mapping) or not all(isinstance(v, bool) for v in tools.values()):
        raise bad("tools", "an object of tool names to true/false")
    return {str(k): v for k, v in tools.items()}


def _check(name: str, settings: JsonObject, where: str) -> JsonObject:
    def bad(key: str, expected: str) -> ConfigError:
        return ConfigError(f"{where}: agent.{name}.{key}: expected {expected}")

    out = dict(settings)
    for key in ("description", "prompt", "model"):
        if key in out and not isinstance(out[key], str):
            raise bad(key, "a string")
    tools = _tool_switches(out.get("tools"), bad)
    if tools is not None:
        out["tools"] = tools
    for key, accepts, expected in _SETTING_CHECKS:
        if key in out and not accepts(out[key]):
            raise bad(key, expected)
    return out


def parse_markdown(text: str, where: str = "<markdown>") -> tuple[JsonObject, str]:
    """Split a markdown agent into (front matter settings, body)."""
    from etcode.util.front_matter import split_front_matter

    return split_front_matter(text, where)


def agent_files(folder: Path) -> list[Path]:
    """The markdown agents of one folder: ``folder/agent/*.md`` then ``folder/agents/*.md``."""
    return [
        path for sub in AGENT_DIRS if (folder / sub).is_dir() for path in sorted((folder / sub).glob("*.md"))
    ]


def project_agent_files(directory: Path, worktree: Path) -> list[Path]:
    """A project's markdown agents (``.etcode/agent/*.md``) from the worktree root down to
    ``directory``, in the order they apply (deeper wins)."""
    from etcode.util.paths import folders_between

    return [
        path for folder in folders_between(directory, worktree) for path in agent_files(folder / ".etcode")
    ]


#: The settings of a markdown agent that project trust judges (``trust/project.py``). (A
#: project agent file's looser ``sandbox`` is ignored with a warning: ``wiring/sandbox_choice.py``.)
TRUSTED_SETTINGS = ("permission",)


def markdown_agents(
    folder: Path, without: Mapping[Path, Sequence[Loc]] | None = None
) -> dict[str, tuple[JsonObject, str]]:
    """``{name: (settings, source path)}`` for ``folder/agent/*.md`` (and ``agents/``).
    ``without``: per file, places of its front matter left out (``("agent", name,
    "permission", ...)``, as ``load_config(without=...)``: settings the user did not trust)."""
    found: dict[str, tuple[JsonObject, str]] = {}
    left_out = {path.resolve(): locs for path, locs in (without or {}).items()}
    for path in agent_files(folder):
        where = str(path)
        meta, body = parse_markdown(path.read_text(encoding="utf-8"), where)
        dropped = left_out.get(path.resolve())
        if dropped:
            from etcode.config.raw import drop_keys

            meta = drop_keys({"agent": {path.stem: meta}}, dropped)["agent"][path.stem]
        settings = settings_of(meta)
        if body:
            settings["prompt"] = body
        found[path.stem] = (_check(path.stem, settings, where), where)
    return found


# ---- merging -------------------------------------------------------------------------


def _merge_rules(old: JsonValue, new: JsonValue) -> JsonValue:
    """Merge rule objects; keys set again move to the end (so last-match-wins holds)."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    merged = {key: value for key, value in old.items() if key not in new}
    for key, value in new.items():
        merged[key] = _merge_rules(old.get(key), value) if key in old else value
    return merged


def apply_settings(base: AgentInfo | None, name: str, settings: JsonObject, source: str) -> AgentInfo | None:
    """``base`` with ``settings`` applied (a new agent if ``base`` is None); None if disabled."""
    if settings.get("disable"):
        return None
    agent = base or AgentInfo(name)
    changes: JsonObject = {k: v for k, v in settings.items() if k in SETTINGS}
    if "tools" in changes:
        changes["tools"] = _merge_rules(agent.tools, changes["tools"])
    if "permission" in changes:
        changes["permission"] = _merge_rules(agent.permission, changes["permission"])
    if "prompt" in changes:
        changes.update(source=source, prompt_builtin=False)
    if "sandbox" in changes:
        changes["sandbox_source"] = source
    return replace(agent, **changes)


def load_agents(
    config_agents: Mapping[str, object] | None = None,
    directory: str | Path | None = None,
    worktree: str | Path | None = None,
    global_dir: str | Path | None = None,
    without: Mapping[Path, Sequence[Loc]] | None = None,
) -> dict[str, AgentInfo]:
    """Every agent by name: built-ins first (build, plan, general, explore, workflow), then the
    custom ones sorted. Raises :class:`ConfigError` for an invalid agent definition.
    ``without``: settings of project markdown agents left out (``Config.without``)."""
    from etcode.prompt.instruction import default_global_dir
    from etcode.util.paths import folders_between

    agents: dict[str, AgentInfo | None] = dict(builtin_agents())
    layers: list[dict[str, tuple[JsonObject, str]]] = [_claude_agents(Path.home())]
    layers.append(markdown_agents(Path(global_dir).expanduser() if global_dir else default_global_dir()))
    layers.append(
        {
            name: (_check(name, settings_of(value), "config"), f"config agent.{name}")
            for name, value in (config_agents or {}).items()
        }
    )
    if directory is not None:
        here = Path(directory).expanduser().resolve()
        top = Path(worktree).expanduser().resolve() if worktree else here
        for folder in folders_between(here, top):
            layers.append(_claude_agents(folder, top))
            layers.append(markdown_agents(folder / ".etcode", without))
    for layer in layers:
        for name, (settings, source) in layer.items():
            agents[name] = apply_settings(agents.get(name), name, settings, source)
    present = {name: agent for name, agent in agents.items() if agent is not None}
    builtin = [n for n in builtin_agents() if n in present]
    custom = sorted(n for n in present if n not in builtin)
    return {name: present[name] for name in (*builtin, *custom)}


def _claude_agents(folder: Path, root: Path | None = None) -> dict[str, tuple[JsonObject, str]]:
    """Claude Code's agents of ``folder`` (its module imported only when there are some);
    ``root``: the project, whose files linked out of it are left out."""
    if not has_claude_agents(folder):
        return {}
    from etcode.agent.claude_agents import claude_agents

    return claude_agents(folder, root)


def has_claude_agents(folder: Path) -> bool:
    """Does ``folder/.claude/agents`` hold an agent file? (Checked before their module, and
    YAML, are imported: most folders have none.)"""
    try:
        return any((folder / ".claude" / "agents").glob("*.md"))
    except OSError:
        return False


def get_agent(
    name: str,
    agents: Mapping[str, AgentInfo] | None = None,
    *,
    config_agents: Mapping[str, object] | None = None,
    directory: str | Path | None = None,
    worktree: str | Path | None = None,
    global_dir: str | Path | None = None,
    without: Mapping[Path, Sequence[Loc]] | None = None,
) -> AgentInfo:
    """The agent called ``name``; :class:`UsageError` listing the known names otherwise.

    Looks in ``agents`` when given, else in ``load_agents(config_agents, directory,
    worktree, global_dir)`` (just the built-ins and global markdown agents when those
    are all None).
    """
    known = (
        agents if agents is not None else load_agents(config_agents, directory, worktree, global_dir, without)
    )
    if name in known:
        return known[name]
    raise UsageError(f'unknown agent "{name}"; known agents: {", ".join(known)}')
