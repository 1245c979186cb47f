"""Permissions: allow / ask / deny rules (last match wins) and the asker protocol."""

from etcode.permission.rules import (
    DEFAULT_RULES,
    PermissionConfigError,
    Rule,
    Ruleset,
    evaluate,
    parse_rules,
    rules_from_config,
)
from etcode.permission.service import (
    NON_INTERACTIVE_REASON,
    AllowAsker,
    Asker,
    Decision,
    DenyAsker,
    PermissionRequest,
    PermissionService,
)
from etcode.util.wildcard import wildcard_match

__all__ = [
    "DEFAULT_RULES",
    "NON_INTERACTIVE_REASON",
    "AllowAsker",
    "Asker",
    "Decision",
    "DenyAsker",
    "PermissionConfigError",
    "PermissionRequest",
    "PermissionService",
    "Rule",
    "Ruleset",
    "evaluate",
    "parse_rules",
    "rules_from_config",
    "wildcard_match",
]
