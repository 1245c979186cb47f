"""Project permission rules that loosen the user's own (issue 27.4).

A project allow (``etcode.json`` ``permission``, ``agent.<name>.permission``, or a project
markdown agent's front matter) is a loosening when, for some request it matches, the rules
with the project files say ``allow`` while the user's own rules (etcode's defaults, the
user's config files, the built-in and global agents) say ``ask`` or ``deny``. A project deny
or ask never loosens, and an allow that restates what the user's rules already allow is none.

Rules are wildcards (``*``, ``?``), so "some request" is searched among witnesses: the
pattern itself with its wildcards filled, and for each of the user's ask/deny patterns the
shortest text both match (:func:`overlap`): where the user's rules do not allow, one of
those decides. The tools of configured MCP servers count as asked by default.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from etcode.config.loader import merge
from etcode.config.raw import ConfigFile, Loc
from etcode.permission.rules import (
    DEFAULTS_LAYER,
    LayeredMatcher,
    Rule,
    Ruleset,
    parse_rules,
    rules_for,
    rules_from_config,
)
from etcode.util.json_types import JsonObject, JsonValue
from etcode.util.wildcard import wildcard_match

_WILD = frozenset("*?")
#: A character no rule names: stands for "any other character".
_OTHER = "\x01"
#: The permissions the tools ask for; a rule named otherwise names a tool (``"ReadFile"``),
#: which counts for every permission that tool asks (``permission/rules.py: rules_for``).
PERMISSIONS = (
    "bash", "read", "edit", "glob", "grep", "list", "webfetch",
    "external_directory", "private_network", "sandbox",
)  # fmt: skip
#: The built-in tools and the permissions they ask with their own name as ``tool``; any
#: other tool (MCP, the caller's) asks only under its name (``tools/scheduler.py``).
TOOL_PERMISSIONS: dict[str, tuple[str, ...]] = {
    "bash": ("bash", "sandbox"), "readfile": ("read",), "readmanyfiles": ("read",),
    "writefile": ("edit",), "edit": ("edit", "read"), "grep": ("grep", "read"), "glob": ("glob",),
    "listfiles": ("list",), "webfetch": ("webfetch",),
}  # fmt: skip


@dataclass(frozen=True)
class Loosening:
    """A project allow at ``loc`` and what the user's own rules say instead."""

    loc: Loc
    permission: str
    pattern: str
    #: "ask" or "deny".
    users: str
    #: A request it allows that the user's rules do not (for the message).
    example: str


# ---- wildcard overlap ----------------------------------------------------------------


def _variants(pattern: str) -> list[str]:
    """``"git *"`` also matches ``"git"`` (see ``util/wildcard.py``)."""
    return [pattern, pattern[:-2]] if pattern.endswith(" *") else [pattern]


def _closure(pattern: str, states: set[int]) -> frozenset[int]:
    out: set[int] = set()
    stack = list(states)
    while stack:
        index = stack.pop()
        if index in out:
            continue
        out.add(index)
        if index < len(pattern) and pattern[index] == "*":
            stack.append(index + 1)
    return frozenset(out)


def _step(pattern: str, states: frozenset[int], char: str) -> frozenset[int]:
    after: set[int] = set()
    for index in states:
        if index < len(pattern):
            token = pattern[index]
            if token == "*":
                after.add(index)
            elif token == "?" or token == char:
                after.add(index + 1)
    return _closure(pattern, after)


@lru_cache(maxsize=4096)
def overlap(first: str, second: str) -> str | None:
    """The shortest text both wildcard patterns match (``*`` any text, ``?`` one character),
    None when they share none."""
    if not _WILD & set(first):
        return first if _matches(first, second) else None
    if not _WILD & set(second):
        return second if _matches(second, first) else None
    alphabet = sorted((set(first) | set(second)) - {"*", "?"}) + [_OTHER]
    start = (_closure(first, {0}), _closure(second, {0}))
    seen = {start: ""}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        text = seen[state]
        if len(first) in state[0] and len(second) in state[1]:
            return text
        for char in alphabet:
            following = (_step(first, state[0], char), _step(second, state[1], char))
            if following[0] and following[1] and following not in seen:
                seen[following] = text + char
                queue.append(following)
    return None


def _matches(text: str, pattern: str) -> bool:
    state = _closure(pattern, {0})
    for char in text:
        state = _step(pattern, state, char)
        if not state:
            return False
    return len(pattern) in state


def witnesses(pattern: str, others: Iterable[str]) -> list[str]:
    """Texts ``pattern`` matches where ``others`` may decide differently."""
    others = list(dict.fromkeys(others))
    found: dict[str, None] = {}
    for mine in _variants(pattern):
        found[mine.replace("*", _OTHER).replace("?", _OTHER)] = None
        found[mine.replace("*", "").replace("?", _OTHER)] = None
        for other in others:
            for theirs in _variants(other):
                text = overlap(mine, theirs)
                if text is not None:
                    found[text] = None
    return list(found)


# ---- the rules with and without the project ------------------------------------------


def _permission(files: Sequence[ConfigFile]) -> JsonValue:
    merged: JsonObject = {}
    for file in files:
        if file.kind == "config" and file.raw.get("permission") is not None:
            merged = merge(merged, {"permission": file.raw["permission"]})
    return merged.get("permission")


def _file_permissions(files: Sequence[ConfigFile]) -> list[tuple[str, JsonValue]]:
    return [
        (str(file.path), file.raw["permission"])
        for file in files
        if file.kind == "config" and file.raw.get("permission") is not None
    ]


def _agent_permission(name: str, files: Sequence[ConfigFile], base: JsonValue) -> JsonValue:
    """An agent's rules: its built-in/global ones, then each file's ``agent.<name>.permission``
    (config files first, then markdown agents: the registry's order)."""
    from etcode.agent.registry import apply_settings

    agent = base
    ordered = [f for f in files if f.kind == "config"] + [f for f in files if f.kind == "agent"]
    for file in ordered:
        agents = file.raw.get("agent")
        entry = agents.get(name) if isinstance(agents, dict) else None
        if isinstance(entry, dict) and entry.get("permission") is not None:
            agent = apply_settings(agent, name, {"permission": entry["permission"]}, str(file.path))
    return agent.permission if agent is not None else None


class Layers:
    """The rules in effect with every file, and with the user's own files only."""

    def __init__(self, files: Sequence[ConfigFile]) -> None:
        from etcode.agent.registry import load_agents

        self.files = list(files)
        self.users = [f for f in files if not f.project]
        self._agents = load_agents()  # built-in and the user's global markdown agents
        self._cache: dict[tuple[str | None, bool], Ruleset] = {}
        self._deciders: dict[tuple[str | None, bool], _Decider] = {}

    def decider(self, agent: str | None, with_project: bool) -> _Decider:
        key = (agent, with_project)
        if key not in self._deciders:
            self._deciders[key] = _Decider(self.rules(agent, with_project))
        return self._deciders[key]

    def rules(self, agent: str | None, with_project: bool) -> Ruleset:
        key = (agent, with_project)
        if key not in self._cache:
            files = self.files if with_project else self.users
            agent_rules = None
            if agent is not None:
                agent_rules = _agent_permission(agent, files, self._agents.get(agent))
            rules = rules_from_config(_permission(files), agent_rules, _file_permissions(files))
            self._cache[key] = [*rules, *self._mcp_asks()]
        return self._cache[key]

    def _mcp_asks(self) -> Ruleset:
        """The MCP tools' default ``ask`` (``mcp/tool.py: ask_rules``, in the defaults layer):
        every tool of a configured server, read-only or not (which only the server knows)."""
        names: dict[str, None] = {}
        for file in self.files:
            servers = file.raw.get("mcp") if file.kind == "config" else None
            names.update(dict.fromkeys(str(n) for n in (servers if isinstance(servers, dict) else ())))
        from etcode.mcp.naming import sanitize

        # As the tools are named (``mcp/naming.py``); a name shortened past 64 characters
        # keeps its first 55, so that prefix still covers it.
        prefixes = [f"{sanitize(name)}_" for name in names]
        return [Rule(f"{prefix[:55]}*", "*", "ask", DEFAULTS_LAYER) for prefix in prefixes]


class _Decider:
    """One ruleset's decisions, a matcher per (permission, tool) built once."""

    def __init__(self, rules: Ruleset) -> None:
        self.rules = rules
        self._matchers: dict[tuple[str, str | None], LayeredMatcher] = {}

    def __call__(self, permission: str, tool: str | None, text: str) -> str:
        key = (permission, tool)
        if key not in self._matchers:
            self._matchers[key] = LayeredMatcher(rules_for(self.rules, permission, tool), permission)
        return self._matchers[key].decide(text).action


def _concrete(name: str) -> str:
    return name.lower().replace("*", "").replace("?", _OTHER) or _OTHER


def _allows(value: JsonValue, loc: Loc) -> Iterator[tuple[Loc, str, str]]:
    """``(loc, permission, pattern)`` of each allow in a ``permission`` value."""

    def allow(action: JsonValue) -> bool:
        return isinstance(action, str) and action.strip().lower() == "allow"

    if isinstance(value, str):
        if allow(value):
            yield loc, "*", "*"
        return
    for permission, rule in value.items() if isinstance(value, Mapping) else ():
        if allow(rule):
            yield (*loc, permission), str(permission), "*"
        for pattern, action in rule.items() if isinstance(rule, Mapping) else ():
            if allow(action):
                yield (*loc, permission, pattern), str(permission), str(pattern)


def loosenings(value: JsonValue, loc: Loc, agent: str | None, layers: Layers) -> list[Loosening]:
    """The allows of one project ``permission`` value (at ``loc``; ``agent``: the agent whose
    rules they are, None for the top level) that allow what the user's own rules do not."""
    users = layers.rules(agent, False)
    named = {rule.permission.lower() for rule in (*layers.rules(agent, True), *users)}
    found: list[Loosening] = []
    for place, permission, pattern in _allows(value, loc):
        mine = parse_rules({permission: {pattern: "allow"}})
        names = {_concrete(permission)}
        names.update(
            text for name in named for text in [overlap(permission.lower(), name)] if text is not None
        )
        pairs: list[tuple[str, str | None]] = [(name, None) for name in sorted(names)]
        if _concrete(permission) not in PERMISSIONS:  # a rule named after a tool
            tools = [t for t in TOOL_PERMISSIONS if wildcard_match(t, permission.lower())]
            for tool in dict.fromkeys([*tools, _concrete(permission)]):
                pairs.extend((name, tool) for name in (*TOOL_PERMISSIONS.get(tool, ()), tool))
        hit = _first_loosening(
            mine, pairs, pattern, users, layers.decider(agent, True), layers.decider(agent, False)
        )
        if hit is not None:
            found.append(Loosening(place, permission, pattern, *hit))
    return found


def _first_loosening(
    mine: Ruleset,
    pairs: Sequence[tuple[str, str | None]],
    pattern: str,
    users_rules: Sequence[Rule],
    full: _Decider,
    users: _Decider,
) -> tuple[str, str] | None:
    """``(what the user's rules say, an example)`` for the first request (permission, tool,
    text) the project's allow decides where the user's rules do not allow it."""
    for name, tool in pairs:
        if not rules_for(mine, name, tool):
            continue
        # where the user's rules do not allow, one of their ask/deny rules decides
        others = [rule.pattern for rule in rules_for(users_rules, name, tool) if rule.action != "allow"]
        for text in witnesses(pattern, others):
            if not wildcard_match(text, pattern) or full(name, tool, text) != "allow":
                continue
            theirs = users(name, tool, text)
            if theirs != "allow":
                return theirs, text
    return None
