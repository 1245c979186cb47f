"""Permission rules: ``allow`` / ``ask`` / ``deny`` per permission and pattern.

A rule is ``(permission, pattern, action)``; both ``permission`` and ``pattern`` are
wildcards (``*`` any text, ``?`` one character). For a request, the **last** matching
rule wins. Defaults come first, then the config's ``"permission"`` object, then the
agent's, so later layers override earlier ones. Within one permission's pattern object
the rules are put in order from general to specific (fewest literal characters first,
so ``"*"`` comes first), which makes ``{"git *": "allow", "rm *": "deny", "*": "ask"}``
mean what it says whatever order the keys are written in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, cast

from etcode.util.errors import ConfigError

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[str, ...] = ("allow", "ask", "deny")


class PermissionConfigError(ConfigError):
    """A ``permission`` value in a config file or agent is malformed."""


@dataclass(frozen=True)
class Rule:
    permission: str
    pattern: str
    action: Action

    def describe(self) -> str:
        """The rule as it would be written in etcode.json."""
        if self.pattern == "*":
            return f'"{self.permission}": "{self.action}"'
        return f'"{self.permission}": {{"{self.pattern}": "{self.action}"}}'


Ruleset = list[Rule]

#: Read-only tools, WriteFile/Edit inside the worktree and Bash are allowed; anything
#: outside the worktree asks; reading .env files asks.
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("*", "*", "allow"),
    Rule("external_directory", "*", "ask"),
    Rule("read", "*.env", "ask"),
    Rule("read", "*.env.*", "ask"),
    Rule("read", "*.envrc", "ask"),
    Rule("read", "*.envrc.*", "ask"),
    Rule("read", "*.env.example", "allow"),
    Rule("read", "*.env.sample", "allow"),
    Rule("read", "*.env.template", "allow"),
)


def _source(pattern: str) -> str:
    """The regex (without anchors) of a wildcard pattern."""
    out = []
    for char in pattern:
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(re.escape(char))
    regex = "".join(out)
    # "git *" also matches plain "git" (a command without arguments).
    if pattern.endswith(" *"):
        regex = regex[: -len(re.escape(" ") + ".*")] + r"(?: .*)?"
    return regex


@lru_cache(maxsize=1024)
def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    return re.compile(_source(pattern) + r"\Z", re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def wildcard_match(text: str, pattern: str, ignore_case: bool = False) -> bool:
    """``*`` matches any text (``/`` included), ``?`` one character; a trailing ``" *"``
    also matches the text without it (``"git *"`` matches ``"git"``)."""
    return _compile(pattern, ignore_case).match(text) is not None


def _normalize_name(name: str) -> str:
    return name.strip().lower()


def evaluate(ruleset: Iterable[Rule], permission: str, pattern: str, tool: str | None = None) -> Rule:
    """The last rule matching ``permission`` (or the tool's name) and ``pattern``.
    With no match the answer is ``ask``. (Many patterns: build one :class:`RuleMatcher`.)"""
    return RuleMatcher(rules_for(ruleset, permission, tool), permission).decide(pattern)


def rules_for(ruleset: Iterable[Rule], permission: str, tool: str | None = None) -> list[Rule]:
    """The rules whose permission matches ``permission`` (or the tool's name), in order."""
    names = {_normalize_name(permission)}
    if tool:
        names.add(_normalize_name(tool))
    return [
        rule
        for rule in ruleset
        if any(wildcard_match(name, _normalize_name(rule.permission), ignore_case=True) for name in names)
    ]


class RuleMatcher:
    """:func:`evaluate` for many patterns: the rules of one permission compiled into one
    regex whose alternatives run from the last rule to the first, so the alternative that
    matches names the deciding rule. ``decide(pattern)`` costs one regex match."""

    def __init__(self, rules: list[Rule], permission: str) -> None:
        self.rules = rules
        self.fallback = Rule(permission, "*", "ask")
        alternatives = [f"(?P<r{index}>{_source(rule.pattern)})" for index, rule in enumerate(rules)]
        alternatives.reverse()
        self._regex = re.compile(r"(?:" + "|".join(alternatives) + r")\Z", re.DOTALL) if rules else None

    def decide(self, pattern: str) -> Rule:
        """The last rule matching ``pattern`` (``ask`` when none does)."""
        found = self._regex.match(pattern) if self._regex is not None else None
        if found is None or found.lastgroup is None:
            return self.fallback
        return self.rules[int(found.lastgroup[1:])]


def specificity(pattern: str) -> int:
    """How specific a pattern is: its number of literal (non-wildcard) characters."""
    return len(pattern.replace("*", "").replace("?", ""))


def _action(value: Any, where: str) -> Action:
    if isinstance(value, str) and value.strip().lower() in ACTIONS:
        return cast(Action, value.strip().lower())
    raise PermissionConfigError(f'{where}: expected "allow", "ask" or "deny", got {value!r}')


def parse_rules(config: Mapping[str, Any] | str | None, where: str = "permission") -> Ruleset:
    """Rules from a ``"permission"`` value: ``"allow"`` (everything), or an object whose
    values are an action (all patterns) or an object ``{pattern: action}`` in order."""
    if config is None:
        return []
    if isinstance(config, str):
        return [Rule("*", "*", _action(config, where))]
    if not isinstance(config, Mapping):
        raise PermissionConfigError(f'{where}: expected an object of rules or "allow" / "ask" / "deny"')
    rules: Ruleset = []
    for permission, value in config.items():
        key = f"{where}.{permission}"
        if isinstance(value, Mapping):
            group = [
                Rule(str(permission), str(pattern), _action(action, f'{key}."{pattern}"'))
                for pattern, action in value.items()
            ]
            rules.extend(sorted(group, key=lambda rule: specificity(rule.pattern)))
        else:
            rules.append(Rule(str(permission), "*", _action(value, key)))
    return rules


def rules_from_config(
    permission_config: Mapping[str, Any] | str | None, agent_permission: Mapping[str, Any] | str | None = None
) -> Ruleset:
    """Defaults, then the config's ``permission``, then the agent's (last match wins)."""
    return [
        *DEFAULT_RULES,
        *parse_rules(permission_config, "permission"),
        *parse_rules(agent_permission, "agent.permission"),
    ]
