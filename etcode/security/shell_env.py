"""The environment a ``Bash`` command runs with: the user's, without its secrets.

By default a command inherits etcode's environment minus every variable whose *name*
looks like a secret (``*KEY*``, ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``…), the variables
etcode's providers read their keys from, and any variable whose *value* is one of the
configured keys — so ``env`` or ``printenv`` cannot hand a key to the model (Codex does the
same). The ``"shell": {"env": …}`` config changes it:

- ``inherit``: ``"all"`` (default), ``"core"`` (``HOME``, ``PATH``, ``USER``, locale…) or ``"none"``;
- ``include``: name patterns taken from the environment even if they look secret
  (``["NPM_TOKEN"]``), also with ``"core"``/``"none"``;
- ``exclude``: more name patterns to drop;
- ``set``: variables to set.

Patterns are case-insensitive wildcards (``*`` any text).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from etcode.util.wildcard import wildcard_match

Inherit = Literal["all", "core", "none"]

#: What ``"inherit": "core"`` keeps: what programs need to find themselves and the user.
CORE_NAMES: tuple[str, ...] = (
    "HOME", "LOGNAME", "USER", "USERNAME", "PATH", "SHELL", "TERM", "COLORTERM", "TERMINFO",
    "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "TEMP", "TMP", "PWD", "XDG_RUNTIME_DIR",
)  # fmt: skip
#: Names whose values are secrets unless ``include`` says otherwise.
SECRET_NAMES: tuple[str, ...] = (
    "*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*",
)  # fmt: skip
#: Always set: no pager waits for a key, git never prompts for a password.
FIXED: dict[str, str] = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(wildcard_match(name, pattern, ignore_case=True) for pattern in patterns)


@dataclass(frozen=True)
class ShellEnvPolicy:
    """What a command inherits (see the module docstring). ``secret_values`` are the
    configured keys: a variable holding one is dropped whatever its name. ``key_names`` are
    the variables the providers read their keys from (``provider.spec.provider_key_names()``,
    passed in by whoever builds the policy: this room sits below the providers)."""

    inherit: Inherit = "all"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    set: Mapping[str, str] = field(default_factory=dict)
    secret_values: frozenset[str] = frozenset()
    key_names: frozenset[str] = frozenset()

    @classmethod
    def from_config(
        cls, config: object, secret_values: Iterable[str | None] = (), key_names: Iterable[str] = ()
    ) -> ShellEnvPolicy:
        """The policy of a loaded config's ``shell.env`` (defaults when absent)."""
        env = getattr(getattr(config, "shell", None), "env", None)
        values = frozenset(v for v in secret_values if v)
        names = frozenset(key_names)
        if env is None:
            return cls(secret_values=values, key_names=names)
        return cls(
            inherit=env.inherit,
            include=tuple(env.include),
            exclude=tuple(env.exclude),
            set=dict(env.set_),
            secret_values=values,
            key_names=names,
        )

    def hides(self, name: str, value: str) -> bool:
        """Whether the variable ``name=value`` is kept from commands."""
        if _matches(name, self.exclude):
            return True
        if _matches(name, self.include):
            return False
        return (
            _matches(name, SECRET_NAMES)
            or name in self.key_names
            or (bool(value) and value in self.secret_values)
        )

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for one command, from ``base`` (default ``os.environ``)."""
        base = os.environ if base is None else base
        env: dict[str, str] = {}
        for name, value in base.items():
            wanted = (
                self.inherit == "all"
                or (self.inherit == "core" and _matches(name, CORE_NAMES))
                or _matches(name, self.include)
            )
            if wanted and not self.hides(name, value):
                env[name] = value
        env.update(FIXED)
        env.update(self.set)
        return env
