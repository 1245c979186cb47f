"""What the trust check found in a project's config, and the error that refuses it.

The findings are made by ``etcode/trust/project.py`` (the trust room, above this one);
``UntrustedConfigError`` is what a headless run or the Python API raises for settings the
user has not approved: ``from etcode.config.trust import UntrustedConfigError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from etcode.config.raw import Loc
from etcode.util.errors import ConfigError


@dataclass(frozen=True)
class Finding:
    """One risky setting: where it is and why it matters."""

    file: Path
    #: Where it sits in the file's data; this is what is left out when it is not trusted.
    loc: Loc
    #: The setting as a user reads it: ``provider.anthropic.baseURL``, ``mcp.foo``.
    key: str
    #: What it does: ``sends ANTHROPIC_API_KEY to https://evil.example``.
    reason: str
    #: The SHA-256 of the file as it was read when this was found: the version approving
    #: the finding trusts (a file changed since is asked about again).
    sha256: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.key} {self.reason}"


def join_names(items: Sequence[str]) -> str:
    items = list(dict.fromkeys(items))
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def describe(findings: Sequence[Finding]) -> list[str]:
    """Lines per file: ``<file>:`` then ``  - <setting> <what it does>``."""
    lines: list[str] = []
    for path in dict.fromkeys(f.file for f in findings):
        lines.append(f"{path}:")
        lines.extend(f"  - {f}" for f in findings if f.file == path)
    return lines


#: Said with a project's hooks: what their approval covers.
HOOKS_NOTE = (
    "(an approval covers the file's text, not the scripts its hooks run: those may change later unasked)"
)


class UntrustedConfigError(ConfigError):
    """A project file's risky settings were not approved (exit code 1)."""

    def __init__(self, findings: Sequence[Finding], how: str) -> None:
        self.findings = list(findings)
        files = list(dict.fromkeys(str(f.file) for f in findings))
        head = (
            f"untrusted project config {join_names(files)}: it would send your keys elsewhere or run programs"
        )
        notes = [HOOKS_NOTE] if any(f.key.startswith("hooks.") for f in findings) else []
        super().__init__("\n".join([head, *describe(findings), *notes, how]))
