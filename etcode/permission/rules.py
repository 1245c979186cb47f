"""Permission rules: ``allow`` / ``ask`` / ``deny`` per permission and pattern.

A rule is ``(permission, pattern, action)``; both ``permission`` and ``pattern`` are
wildcards (``*`` any text, ``?`` one character). For a request, the **last** matching
rule wins. Defaults come first, then the config's ``"permission"`` object, then the
agent's, then the user's "allow always" answers, so later layers override earlier ones —
except that a **deny is final**: when the config (or any one config file, judged by its own
rules) or the agent denies a pattern, no later layer can allow it. Within one permission's
pattern object the rules are put in order from general to specific (fewest literal
characters first, so ``"*"`` comes first), which makes ``{"git *": "allow", "rm *":
"deny", "*": "ask"}`` mean what it says whatever order the keys are written in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from etcode.contract.tool_names import etcode_tool_name
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonValue
from etcode.util.wildcard import regex_source, wildcard_match

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[str, ...] = ("allow", "ask", "deny")


class PermissionConfigError(ConfigError):
    """A ``permission`` value in a config file or agent is malformed."""


@dataclass(frozen=True)
class Rule:
    """One rule. ``layer`` orders the sources (defaults 0, config 1, agent 2, answers 3):
    the last match wins, but a deny decided within one layer stays a deny. ``veto`` names
    a group that may only deny: one config file, judged by its own rules."""

    permission: str
    pattern: str
    action: Action
    layer: int = 0
    veto: str = ""

    def describe(self) -> str:
        """The rule as it would be written in etcode.json."""
        where = f" in {self.veto}" if self.veto else ""
        if self.pattern == "*":
            return f'"{self.permission}": "{self.action}"{where}'
        return f'"{self.permission}": {{"{self.pattern}": "{self.action}"}}{where}'


Ruleset = list[Rule]

#: Read-only tools, WriteFile/Edit inside the worktree and Bash are allowed; anything
#: outside the worktree asks; reading .env files asks; WebFetch of an address on this
#: machine or its local network asks, and so does running a command again outside the
#: sandbox after the sandbox refused it something (``--yes`` grants neither).
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("*", "*", "allow"),
    Rule("external_directory", "*", "ask"),
    Rule("private_network", "*", "ask"),
    Rule("sandbox", "*", "ask"),
    Rule("read", "*.env", "ask"),
    Rule("read", "*.env.*", "ask"),
    Rule("read", "*.envrc", "ask"),
    Rule("read", "*.envrc.*", "ask"),
    Rule("read", "*.env.example", "allow"),
    Rule("read", "*.env.sample", "allow"),
    Rule("read", "*.env.template", "allow"),
)


def _normalize_name(name: str) -> str:
    """A permission's name as rules compare it: case-blind, the agent-loop design's name of
    a tool taken for etcode's (``todo_write`` names ``TodoWrite``)."""
    return etcode_tool_name(name.strip()).lower()


def evaluate(ruleset: Iterable[Rule], permission: str, pattern: str, tool: str | None = None) -> Rule:
    """The deciding rule for ``permission`` (or the tool's name) and ``pattern``: the last
    match, unless a layer denies (see the module docstring). With no match: ``ask``.
    (Many patterns: build one :class:`LayeredMatcher`.)"""
    return LayeredMatcher(rules_for(ruleset, permission, tool), permission).decide(pattern)


#: Permissions that guard an edge — outside the project, this machine's network, outside
#: the sandbox. A rule named after the *tool* that asks (``"edit": "allow"`` for Edit) may
#: deny them but never allows them: only a rule named after the guard itself does.
GUARDS = frozenset({"external_directory", "private_network", "sandbox"})


def rules_for(ruleset: Iterable[Rule], permission: str, tool: str | None = None) -> list[Rule]:
    """The rules whose permission matches ``permission`` (or the tool's name), in order."""
    wanted = _normalize_name(permission)
    tool_name = _normalize_name(tool) if tool else None
    guarded = wanted in GUARDS
    found = []
    for rule in ruleset:
        name = _normalize_name(rule.permission)
        by_tool = bool(tool_name) and wildcard_match(tool_name or "", name, ignore_case=True)
        if wildcard_match(wanted, name, ignore_case=True) or (
            by_tool and (not guarded or rule.action == "deny")
        ):
            found.append(rule)
    return found


class RuleMatcher:
    """:func:`evaluate` for many patterns: the rules of one permission compiled into one
    regex whose alternatives run from the last rule to the first, so the alternative that
    matches names the deciding rule. ``decide(pattern)`` costs one regex match."""

    def __init__(self, rules: list[Rule], permission: str) -> None:
        self.rules = rules
        self.fallback = Rule(permission, "*", "ask")
        alternatives = [f"(?P<r{index}>{regex_source(rule.pattern)})" for index, rule in enumerate(rules)]
        alternatives.reverse()
        self._regex = re.compile(r"(?:" + "|".join(alternatives) + r")\Z", re.DOTALL) if rules else None

    def decide(self, pattern: str) -> Rule:
        """The last rule matching ``pattern`` (``ask`` when none does)."""
        return self.match(pattern) or self.fallback

    def match(self, pattern: str) -> Rule | None:
        """The last rule matching ``pattern``, None when none does."""
        found = self._regex.match(pattern) if self._regex is not None else None
        if found is None or found.lastgroup is None:
            return None
        return self.rules[int(found.lastgroup[1:])]


class LayeredMatcher:
    """The rules of one permission, one :class:`RuleMatcher` per layer. ``decide``: a
    deny decided by any layer wins (the earliest one names the rule); otherwise the last
    layer with a match decides; ``ask`` when nothing matches."""

    def __init__(self, rules: list[Rule], permission: str) -> None:
        self.fallback = Rule(permission, "*", "ask")
        groups: dict[tuple[int, str], list[Rule]] = {}
        for rule in rules:
            groups.setdefault((rule.layer, rule.veto), []).append(rule)
        self.layers = [(veto, RuleMatcher(group, permission)) for (_, veto), group in sorted(groups.items())]

    def decide(self, pattern: str) -> Rule:
        last: Rule | None = None
        for veto, matcher in self.layers:
            rule = matcher.match(pattern)
            if rule is None:
                continue
            if rule.action == "deny":
                return rule
            if not veto:
                last = rule
        return last or self.fallback


def specificity(pattern: str) -> int:
    """How specific a pattern is: its number of literal (non-wildcard) characters."""
    return len(pattern.replace("*", "").replace("?", ""))


def _action(value: object, where: str) -> Action:
    if isinstance(value, str) and value.strip().lower() in ACTIONS:
        return cast(Action, value.strip().lower())
    raise PermissionConfigError(f'{where}: expected "allow", "ask" or "deny", got {value!r}')


def parse_rules(
    config: Mapping[str, JsonValue] | str | None, where: str = "permission", layer: int = 0, veto: str = ""
) -> Ruleset:
    """Rules from a ``"permission"`` value: ``"allow"`` (everything), or an object whose
    values are an action (all patterns) or an object ``{pattern: action}`` in order."""
    if config is None:
        return []
    if isinstance(config, str):
        return [Rule("*", "*", _action(config, where), layer, veto)]
    if not isinstance(config, Mapping):
        raise PermissionConfigError(f'{where}: expected an object of rules or "allow" / "ask" / "deny"')
    rules: Ruleset = []
    for permission, value in config.items():
        key = f"{where}.{permission}"
        if isinstance(value, Mapping):
            group = [
                Rule(str(permission), str(pattern), _action(action, f'{key}."{pattern}"'), layer, veto)
                for pattern, action in value.items()
            ]
            rules.extend(sorted(group, key=lambda rule: specificity(rule.pattern)))
        else:
            rules.append(Rule(str(permission), "*", _action(value, key), layer, veto))
    return rules


#: The layers of :func:`rules_from_config` and the session's "allow always" answers.
DEFAULTS_LAYER, CONFIG_LAYER, AGENT_LAYER, ANSWERS_LAYER = 0, 1, 2, 3


def rules_from_config(
    permission_config: Mapping[str, JsonValue] | str | None,
    agent_permission: Mapping[str, JsonValue] | str | None = None,
    file_permissions: Iterable[tuple[str, Mapping[str, JsonValue] | str]] = (),
) -> Ruleset:
    """Defaults, then the config's (merged) ``permission``, then the agent's: the last
    match wins, but a deny by the config or the agent is final. ``file_permissions``
    (``(source, value)`` per config file) make each file's own denies final too, so a
    project file cannot lift a deny of the user's global file."""
    vetoes: Ruleset = []
    for source, value in file_permissions:
        vetoes.extend(parse_rules(value, f"{source}: permission", CONFIG_LAYER, veto=source))
    return [
        *DEFAULT_RULES,
        *parse_rules(permission_config, "permission", CONFIG_LAYER),
        *vetoes,
        *parse_rules(agent_permission, "agent.permission", AGENT_LAYER),
    ]
