"""The permission checks of a ``Bash`` command, from what :mod:`etcode.security.shell_commands`
reads in it:

- ``bash`` rules see every simple command the line can run (``git status``, ``rm x``
  from ``ls $(rm x)``, ``rm y`` from ``sudo rm y``…) and ``> file`` for each file a
  redirection writes; a command whose program is known only at run time is always asked;
- ``read`` rules see the files the command names (arguments and ``< file``), so ``cat .env``
  asks like ReadFile would and ``cat secret/k`` is refused by ``{"read": {"secret/*": "deny"}}``;
- ``edit`` rules see the files written by redirections (``echo x > secret/k``);
- what can run code or steer a later program (``$((x))``, ``export GIT_DIR=…``, see
  :mod:`etcode.security.shell_plain`) is asked whatever the allow rules say (deny rules first);
  a read-only agent without its sandbox is asked about every line that is not plain.

Rules hold against a model that follows them; a hostile one can still hide a file name
(``cat $(printf .e; printf nv)``): the sandbox (``"sandbox"``) is the boundary for that.
"""

from __future__ import annotations

import asyncio
import glob
import os
from collections.abc import Sequence

from etcode.security.recursive_reads import folder_reads, guarded_files
from etcode.security.shell_commands import ShellAnalysis, analyze, path_text
from etcode.tools.base import ToolContext
from etcode.tools.paths import rule_patterns
from etcode.util.fs import real_path
from etcode.util.json_types import JsonObject

#: Glob words in a command (``cat secret/*``) are expanded up to this many files.
MAX_GLOB_MATCHES = 200
_GLOB_CHARS = frozenset("*?[")


async def check_command(
    ctx: ToolContext, command: str, description: str | None = None, tool: str = "Bash"
) -> ShellAnalysis:
    """Raise ``PermissionDenied`` unless the rules (or the user) allow ``command``."""
    analysis = analyze(command, {"PWD": str(ctx.directory), "HOME": os.path.expanduser("~")})
    always_ask = analysis.dynamic_patterns() + _globs_matching_options(ctx, analysis)
    if ctx.sandbox is not None and ctx.sandbox.plain_commands_only and not analysis.plain:
        always_ask.append(command.strip())  # no sandbox to fall back on: only plain lines pass
        analysis.problems.append("without its sandbox this agent runs only plain command lines unasked")
    metadata: JsonObject = {
        "tool": tool,
        "command": command,
        "description": description,
        "always": analysis.always_patterns(),
        "ask": always_ask,
    }
    if analysis.problems:
        metadata["problems"] = analysis.problems
    # Not "tool": rules named after Bash are its command rules, not read/edit rules.
    details = {"via": tool, "command": command, "description": description}
    read = _named_files(ctx, analysis.path_arguments(), _changed_dirs(analysis))
    read += await _folder_files(ctx, analysis)
    checks = [
        ("bash", analysis.patterns() or [command.strip()], metadata, tool),
        ("read", read, details, None),
        ("edit", _written_files(ctx, analysis.writes), details, None),
    ]
    for permission, patterns, meta, rule_tool in checks:  # refusals first: never ask in vain
        denied = [p for p in patterns if ctx.decide_permission(permission, p, rule_tool) == "deny"]
        if denied:
            await ctx.check_permission(permission, denied, meta)
    await ctx.check_permission("bash", checks[0][1], metadata)
    for permission, patterns, meta, _ in checks[1:]:
        # Only what the rules do not simply allow: one question for all of it.
        pending = [p for p in patterns if ctx.decide_permission(permission, p, None) != "allow"]
        if pending:
            await ctx.check_permission(permission, pending, {**meta, "always": pending})
    return analysis


def _named_files(ctx: ToolContext, words: list[str], dirs: Sequence[str] = ()) -> list[str]:
    """The words that name existing files (globs expanded), as rule patterns; a relative
    word is also taken from each folder the line ``cd``s to (``cd cfg && cat .env``)."""
    patterns: list[str] = []
    for word in words:
        if "\0" in word or len(word) > 4096:
            continue
        if _GLOB_CHARS & set(word):
            matches = _glob(ctx, word)
            candidates = [ctx.resolve(match) for match in matches]
        else:
            candidates = [ctx.resolve(word)]
            candidates += [ctx.resolve(folder) / word for folder in dirs if not os.path.isabs(word)]
        for path in candidates:
            try:
                if not path.exists():
                    continue
            except (OSError, ValueError):
                continue
            patterns.extend(rule_patterns(ctx, path))
    return list(dict.fromkeys(patterns))


def _changed_dirs(analysis: ShellAnalysis) -> list[str]:
    """The folders a line changes to (``cd X``, ``pushd X``), as written."""
    found: list[str] = []
    for command in analysis.commands:
        if command.name in ("cd", "pushd") and len(command.words) > 1:
            target = path_text(command.words[-1])
            if target and not target.startswith("-") and "\0" not in target:
                found.append(target)
    return list(dict.fromkeys(found))[:8]


async def _folder_files(ctx: ToolContext, analysis: ShellAnalysis) -> list[str]:
    """Files the rules guard inside the folders a command reads whole (``grep -r x .``
    reads ``.env``): see :mod:`etcode.security.recursive_reads`."""
    reads = folder_reads(analysis.commands)
    if not reads:
        return []

    def guarded(pattern: str) -> bool:
        return ctx.decide_permission("read", pattern, None) != "allow"

    def walk() -> list[str]:
        worktree = real_path(ctx.worktree)
        return guarded_files(reads, worktree, ctx.resolve, lambda path: rule_patterns(ctx, path), guarded)

    return await asyncio.to_thread(walk)


def _glob(ctx: ToolContext, word: str) -> list[str]:
    found: list[str] = []
    try:
        for match in glob.iglob(os.path.expanduser(word), root_dir=ctx.directory, recursive=False):
            found.append(match)
            if len(found) >= MAX_GLOB_MATCHES:
                break
    except (OSError, ValueError):
        return []
    return found


def _globs_matching_options(ctx: ToolContext, analysis: ShellAnalysis) -> list[str]:
    """Commands with a glob that matches a file named like an option (``git diff *`` beside
    a file ``--output=x``): what they run is not what the rules read."""
    found: list[str] = []
    for command in analysis.commands:
        for word in command.words[1:]:
            if not word.literal or not _GLOB_CHARS & set(word.text) or "\0" in word.text:
                continue
            if any(os.path.basename(match).startswith("-") for match in _glob(ctx, word.text)):
                found.append(command.text)
                analysis.problems.append(f"{word.text} matches a file named like an option")
                break
    return found


def _written_files(ctx: ToolContext, targets: list[str]) -> list[str]:
    patterns: list[str] = []
    for target in targets:
        if "\0" in target or not target.strip():
            continue
        patterns.extend(rule_patterns(ctx, ctx.resolve(target)))
    return list(dict.fromkeys(patterns))
