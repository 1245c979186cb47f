"""Property: the service's compiled matcher decides exactly like :func:`evaluate` and
like a slow reference (last matching rule wins; a deny of any layer, or of any one veto
group judged alone, is final) for any rules and patterns, and reports refused patterns."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etcode.permission import DenyAsker, PermissionService, Rule, evaluate, wildcard_match
from etcode.permission.rules import LayeredMatcher, RuleMatcher, rules_for
from etcode.tools.base import PermissionDenied

ALPHABET = "ab./ -*?()[]\\$^+"
wild = st.text(alphabet=ALPHABET, max_size=8)
texts = st.text(alphabet="ab./ -()[]\\$^+\n", max_size=10)
names = st.sampled_from(
    ["*", "read", "edit", "bash", "re*", "ReadManyFiles", "?ead", "external_directory", "ext*"]
)
actions = st.sampled_from(["allow", "ask", "deny"])
layers = st.integers(min_value=0, max_value=3)
vetoes = st.sampled_from(["", "", "", "global.json", "project.json"])
rules_st = st.lists(st.builds(Rule, names, wild, actions), max_size=12)
layered_rules_st = st.lists(st.builds(Rule, names, wild, actions, layers, vetoes), max_size=12)


GUARDS = ("external_directory", "private_network", "sandbox")


def reference_match(text: str, pattern: str, ignore_case: bool = False) -> bool:
    """The documented wildcard, written independently of the regex compiler: ``*`` any
    text (``/`` and newlines included), ``?`` one character, everything else literal; a
    trailing ``" *"`` also matches the text without it."""
    if ignore_case:
        text, pattern = text.lower(), pattern.lower()
    if pattern.endswith(" *") and reference_match(text, pattern[:-2]):
        return True

    def match(t: int, p: int) -> bool:
        if p == len(pattern):
            return t == len(text)
        if pattern[p] == "*":
            return any(match(k, p + 1) for k in range(t, len(text) + 1))
        if t < len(text) and (pattern[p] == "?" or pattern[p] == text[t]):
            return match(t + 1, p + 1)
        return False

    return match(0, 0)


@settings(max_examples=1500, deadline=None)
@given(text=texts, pattern=wild, ignore_case=st.booleans())
def test_wildcard_match_agrees_with_the_reference(text: str, pattern: str, ignore_case: bool) -> None:
    assert wildcard_match(text, pattern, ignore_case) == reference_match(text, pattern, ignore_case)


def test_wildcard_examples() -> None:
    assert wildcard_match("git", "git *") and wildcard_match("git status", "git *")
    assert wildcard_match("a/b/c.py", "*.py") and not wildcard_match("a.pyc", "*.py")
    assert wildcard_match("x", "?") and not wildcard_match("xy", "?")
    assert wildcard_match("(a)[b]$^+\\", "(a)[b]$^+\\") and not wildcard_match("ab", "a.")


def last_match(rules: list[Rule], permission: str, pattern: str, tool: str) -> Rule:
    """The rule order semantics, written the slow obvious way: the last matching rule wins;
    a rule named after the tool (not the permission) counts for a guard only if it denies."""
    found = Rule(permission, "*", "ask")
    for rule in rules:
        key = rule.permission.strip().lower()
        by_permission = reference_match(permission.lower(), key, ignore_case=True)
        by_tool = reference_match(tool.lower(), key, ignore_case=True)
        if by_tool and not by_permission and permission in GUARDS and rule.action != "deny":
            by_tool = False
        if (by_permission or by_tool) and reference_match(pattern, rule.pattern):
            found = rule
    return found


def layered(rules: list[Rule], permission: str, pattern: str, tool: str) -> Rule:
    """Layers, the slow obvious way: each group (layer, veto) judged alone by last match;
    the first group (in layer order) that denies decides; else the last match among the
    non-veto rules taken layer by layer."""
    for group in sorted({(rule.layer, rule.veto) for rule in rules}):
        members = [rule for rule in rules if (rule.layer, rule.veto) == group]
        decided = last_match(members, permission, pattern, tool)
        if decided in members and decided.action == "deny":
            return decided
    ordinary = sorted((rule for rule in rules if not rule.veto), key=lambda rule: rule.layer)
    return last_match(ordinary, permission, pattern, tool)


@settings(max_examples=400, deadline=None)
@given(
    rules=rules_st, permission=st.sampled_from(["read", "edit", "bash", "external_directory"]), pattern=texts
)
def test_matcher_agrees_with_evaluate(rules: list[Rule], permission: str, pattern: str) -> None:
    expected = last_match(rules, permission, pattern, "ReadManyFiles")
    matcher = RuleMatcher(rules_for(rules, permission, "ReadManyFiles"), permission)
    assert matcher.decide(pattern) == expected
    assert evaluate(rules, permission, pattern, "ReadManyFiles") == expected


@settings(max_examples=400, deadline=None)
@given(
    rules=layered_rules_st,
    permission=st.sampled_from(["read", "edit", "bash", "external_directory"]),
    pattern=texts,
)
def test_layered_matcher_agrees_with_reference(rules: list[Rule], permission: str, pattern: str) -> None:
    expected = layered(rules, permission, pattern, "ReadManyFiles")
    matcher = LayeredMatcher(rules_for(rules, permission, "ReadManyFiles"), permission)
    assert matcher.decide(pattern) == expected
    assert evaluate(rules, permission, pattern, "ReadManyFiles") == expected
    service = PermissionService(rules)
    assert service.evaluate(permission, pattern, "ReadManyFiles") == expected


def test_denied_error_names_the_refused_patterns() -> None:
    rules = [Rule("*", "*", "allow"), Rule("read", "secret/*", "deny"), Rule("read", "*.env", "ask")]
    service = PermissionService(rules, DenyAsker())
    with pytest.raises(PermissionDenied) as denied:
        asyncio.run(service.check("read", ["a.py", "secret/k", "b.py"], {}))
    assert denied.value.patterns == ["secret/k"] and not denied.value.asked
    with pytest.raises(PermissionDenied) as asked:
        asyncio.run(service.check("read", ["a.py", "x.env", "y.env"], {}))
    assert asked.value.patterns == ["x.env", "y.env"] and asked.value.asked


def test_approvals_rebuild_the_matcher() -> None:
    rules = [Rule("*", "*", "allow"), Rule("read", "*.env", "ask")]
    service = PermissionService(rules)
    assert service.evaluate("read", "x.env").action == "ask"
    service.approved.append(Rule("read", "x.env", "allow"))
    assert service.evaluate("read", "x.env").action == "allow"
    assert service.evaluate("read", "y.env").action == "ask"


def test_a_tool_named_rule_does_not_open_a_guard() -> None:
    from etcode.permission import rules_from_config

    rules = rules_from_config({"edit": "allow", "ReadFile": "allow"})
    assert evaluate(rules, "external_directory", "/home/u/.bashrc", "Edit").action == "ask"
    assert evaluate(rules, "external_directory", "/etc/hosts", "ReadFile").action == "ask"
    denied = rules_from_config({"ReadFile": "deny"})
    assert evaluate(denied, "external_directory", "/etc/hosts", "ReadFile").action == "deny"
    opened = rules_from_config({"external_directory": {"/home/u/*": "allow"}})
    assert evaluate(opened, "external_directory", "/home/u/.bashrc", "Edit").action == "allow"
