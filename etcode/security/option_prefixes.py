"""Abbreviated long options, spelled out for the ``bash`` rules (issue 27, item 11).

git (parse-options) takes any unambiguous prefix of a long option: ``git diff --outp=x``
is ``git diff --output=x``, ``--ext`` is ``--ext-diff``, ``--textc`` is ``--textconv``. A
rule such as the plan agent's ``"git *--output*": "ask"`` looks for the full name, so
:func:`spelled_out` gives the rules the command once more with each abbreviation of a
guarded option written in full. Every spelling counts: a rule must allow them all.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Long options that write files or run programs, per program that accepts abbreviations.
GUARDED_OPTIONS: dict[str, tuple[str, ...]] = {
    "git": (
        "--output", "--output-directory", "--ext-diff", "--textconv", "--config-env",
        "--exec-path", "--exec", "--upload-pack", "--receive-pack", "--open-files-in-pager",
    ),
}  # fmt: skip
#: Real options that begin like a guarded one: the program takes them as they are
#: (``git diff --text`` is not ``--textconv``).
_WHOLE: dict[str, frozenset[str]] = {"git": frozenset({"--text", "--config", "--exec", "--output"})}
#: ``--x`` and longer: a prefix git could take for one option.
_SHORTEST = 3


def spelled_out(program: str, words: Sequence[str]) -> list[str]:
    """``words`` joined by spaces once per abbreviated guarded option in them, with that
    option written in full (``--outp=x`` → ``--output=x``); [] when there is none."""
    guarded = GUARDED_OPTIONS.get(program)
    if guarded is None:
        return []
    whole = _WHOLE.get(program, frozenset())
    found: list[str] = []
    for index, word in enumerate(words):
        if not word.startswith("--") or word.startswith("--no-"):
            continue
        name, equals, value = word.partition("=")
        if len(name) < _SHORTEST or name in whole or name in guarded:
            continue
        for full in guarded:
            if full.startswith(name):
                spelled = [*words[:index], f"{full}{equals}{value}", *words[index + 1 :]]
                found.append(" ".join(spelled))
    return found
