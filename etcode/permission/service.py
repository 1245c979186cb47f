"""The permission service a session hands to its tools as ``ctx.check_permission``.

``await service.check(permission, patterns, metadata)`` returns when every pattern is
allowed (by a rule, or by the user through the :class:`Asker`) and raises
:class:`~etcode.contract.tools.PermissionDenied` — whose message the model sees — otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from etcode.contract.tools import PermissionDenied
from etcode.permission.rules import ANSWERS_LAYER, LayeredMatcher, Rule, Ruleset, rules_for, rules_from_config
from etcode.util.json_types import JsonObject
from etcode.util.turns import Turn
from etcode.util.wildcard import wildcard_match as _wildcard_match

__all__ = [
    "LIBRARY_REASON",
    "NON_INTERACTIVE_REASON",
    "AllowAsker",
    "Asker",
    "Decision",
    "DenyAsker",
    "PermissionRequest",
    "PermissionService",
    "rules_from_config",
]

NON_INTERACTIVE_REASON = "denied: etcode run is non-interactive; re-run with --yes to allow"
#: The refusal of an ``ask`` by a Python ``Agent`` that was given no ``asker=``.
LIBRARY_REASON = (
    "not allowed: this Agent has no asker= to ask the user (pass one, or allow it with a permission rule)"
)
#: Permissions ``--yes`` does not grant: only a rule, or a person answering the dialog.
NOT_GRANTED_BY_YES: dict[str, str] = {
    "sandbox": "denied: --yes does not lift the sandbox; use --sandbox off (or a rule) to run it outside",
    "private_network": (
        "denied: --yes does not open this machine's network to WebFetch; allow the URL with a rule "
        'such as "permission": {"private_network": {"http://localhost:8000/*": "allow"}}'
    ),
}


@dataclass
class PermissionRequest:
    """What an asker shows the user: the permission, the patterns that need an answer,
    the tool and its details (``metadata``: e.g. ``diff`` for edits, ``command`` for Bash;
    ``ask``: patterns asked whatever the rules say, e.g. a command whose program is only
    known at run time; ``aliases``: other spellings of the patterns, see ``_undecided``),
    and ``always``: the patterns an "allow always" answer would allow from now on."""

    permission: str
    patterns: list[str]
    metadata: JsonObject = field(default_factory=dict)
    tool: str | None = None
    always: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Decision:
    kind: Literal["allow_once", "allow_always", "reject"]
    reason: str | None = None

    @classmethod
    def allow_once(cls) -> Decision:
        return cls("allow_once")

    @classmethod
    def allow_always(cls) -> Decision:
        return cls("allow_always")

    @classmethod
    def reject(cls, reason: str | None = None) -> Decision:
        return cls("reject", reason)


class Asker(Protocol):
    """Answers what the permission rules say to ask (``Agent(asker=...)``): ``ask`` receives
    the :class:`PermissionRequest` of one tool call and returns a :class:`Decision`
    (``Decision.allow_once()``, ``allow_always()``: the request's ``always`` patterns are
    allowed for the rest of the session, or ``reject(reason)``: the model sees the reason).
    Questions come one at a time. The TUI implements it with a dialog; ``etcode run`` uses
    :class:`DenyAsker` (or :class:`AllowAsker` with ``--yes``); a Python ``Agent`` without
    one refuses with :data:`LIBRARY_REASON`."""

    async def ask(self, request: PermissionRequest) -> Decision: ...


class DenyAsker:
    """Headless runs: every ``ask`` is refused, and the model is told why."""

    def __init__(self, reason: str = NON_INTERACTIVE_REASON) -> None:
        self.reason = reason

    async def ask(self, request: PermissionRequest) -> Decision:
        return Decision.reject(self.reason)


class AllowAsker:
    """``--yes``: every ``ask`` is allowed (``deny`` rules still refuse), but for the
    permissions in :data:`NOT_GRANTED_BY_YES`."""

    async def ask(self, request: PermissionRequest) -> Decision:
        refusal = NOT_GRANTED_BY_YES.get(request.permission)
        if refusal is not None:
            return Decision.reject(refusal)
        return Decision.allow_once()


class PermissionService:
    """Evaluates rules (last match wins) and asks the user when a rule says ``ask``.
    "Allow always" answers are remembered for the life of the service (the session)."""

    def __init__(
        self,
        rules: Ruleset,
        asker: Asker | None = None,
        worktree: Path | None = None,
        questions: Turn | None = None,
    ) -> None:
        self.rules: Ruleset = list(rules)
        self.asker: Asker = asker or DenyAsker()
        self.worktree = worktree.resolve() if worktree else None
        self.approved: Ruleset = []
        #: One question at a time to the asker: shared by the services that share it
        #: (an ``Agent``'s conversations), else this service's own.
        self._questions = questions or Turn()
        self._matchers: dict[tuple[str, str | None, int, int], LayeredMatcher] = {}

    def _pattern(self, permission: str, pattern: str) -> str:
        """Absolute paths inside the worktree are matched as worktree-relative paths."""
        if self.worktree is None or permission in ("bash", "webfetch", "external_directory"):
            return pattern
        if pattern.startswith("/"):
            try:
                return Path(pattern).relative_to(self.worktree).as_posix()
            except ValueError:
                return pattern
        return pattern

    def _matcher(self, permission: str, tool: str | None) -> LayeredMatcher:
        """The compiled rules of one permission (rebuilt when rules or approvals grow)."""
        key = (permission, tool, len(self.rules), len(self.approved))
        matcher = self._matchers.get(key)
        if matcher is None:
            if len(self._matchers) > 64:
                self._matchers.clear()
            rules = rules_for([*self.rules, *self.approved], permission, tool)
            matcher = self._matchers[key] = LayeredMatcher(rules, permission)
        return matcher

    def evaluate(self, permission: str, pattern: str, tool: str | None = None) -> Rule:
        """The deciding rule for one pattern (session approvals count last; a deny of the
        config or the agent stays a deny)."""
        return self._matcher(permission, tool).decide(self._pattern(permission, pattern))

    def decide(self, permission: str, pattern: str, tool: str | None = None) -> str:
        """The action (``allow``/``ask``/``deny``) the rules give one pattern; nobody is asked."""
        return self.evaluate(permission, pattern, tool).action

    async def check(self, permission: str, patterns: list[str], metadata: JsonObject | None = None) -> None:
        """Return if allowed; raise ``PermissionDenied`` with a reason the model sees if not.
        ``metadata["pre_answer"]`` (a hook's ``permissionDecision``, given per call by the
        loop): ``"allow"`` answers the ``ask`` questions without asking, except those ``--yes``
        does not grant either (:data:`NOT_GRANTED_BY_YES`); ``"ask"`` asks even what the rules
        allow. A deny rule refuses either way."""
        metadata = dict(metadata or {})
        tool = metadata.get("tool")
        patterns = list(patterns) or ["*"]
        pre_answer = metadata.get("pre_answer")
        always_ask = [str(p) for p in metadata.get("ask") or []]
        if pre_answer == "ask":
            always_ask.extend(p for p in patterns if p not in always_ask)
        aliases = [str(p) for p in metadata.get("aliases") or []]
        pending = self._undecided(permission, patterns, tool, always_ask, aliases)
        if not pending:
            return
        if pre_answer == "allow" and permission not in NOT_GRANTED_BY_YES:
            return
        async with self._questions.hold():  # one question at a time; an earlier answer may settle this one
            pending = self._undecided(permission, patterns, tool, always_ask, aliases)
            if not pending:
                return
            always = [str(p) for p in metadata.get("always") or pending]
            request = PermissionRequest(permission, pending, metadata, tool, always)
            decision = await self.asker.ask(request)
        if decision.kind == "reject":
            reason = decision.reason or "denied by the user"
            raise PermissionDenied(
                f"{reason} (permission {permission!r}: {', '.join(pending)})", patterns=pending, asked=True
            )
        if decision.kind == "allow_always":
            self.approved.extend(Rule(permission, pattern, "allow", ANSWERS_LAYER) for pattern in always)

    def _undecided(
        self,
        permission: str,
        patterns: list[str],
        tool: str | None,
        always_ask: Sequence[str] = (),
        aliases: Sequence[str] = (),
    ) -> list[str]:
        """Patterns whose rule says ``ask`` (and the ``always_ask`` ones no rule denies);
        raises at once on a ``deny``. ``aliases`` are other spellings of the patterns (the
        address a URL's name resolves to): a rule counts for one only when it does not match
        a pattern too, so ``"*": "deny"`` beside an allowed name does not refuse its address,
        while a rule that names the address does."""
        asks: list[str] = []
        matcher = self._matcher(permission, tool)
        for pattern in [*patterns, *(p for p in always_ask if p not in patterns)]:
            rule = matcher.decide(self._pattern(permission, pattern))
            if rule.action == "deny":
                raise PermissionDenied(
                    f"denied by permission rule {rule.describe()} ({permission}: {pattern}). "
                    "Do not retry this call; choose another approach or ask the user.",
                    patterns=[pattern],
                )
            if rule.action == "ask" or pattern in always_ask:
                asks.append(pattern)
        named = [self._pattern(permission, pattern) for pattern in patterns]
        for alias in aliases:
            rule = matcher.decide(self._pattern(permission, alias))
            if any(_wildcard_match(text, rule.pattern) for text in named):
                continue  # the rule speaks of a pattern too: its answer there stands
            if rule.action == "deny":
                raise PermissionDenied(
                    f"denied by permission rule {rule.describe()} ({permission}: {alias}). "
                    "Do not retry this call; choose another approach or ask the user.",
                    patterns=[alias],
                )
            if rule.action == "ask":
                asks.append(alias)
        return list(dict.fromkeys(asks))
