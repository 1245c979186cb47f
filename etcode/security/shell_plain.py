"""Which parts of a shell line are not *provably plain* (issue 27, items 1-2).

A line is plain when it is made of words, quotes and expansions that the parser resolves,
so that what the rules see is what runs. Two kinds of parts are not:

- *unsafe* parts can run code the rules never see, or change how a later program runs:
  arithmetic over variables (bash evaluates ``a[$(cmd)]`` in a variable's value as code:
  ``$((x))``, ``$[x]``, ``((x))``, ``for ((…))``, ``${PWD:x:0}``, ``${a[x]}``, ``let``,
  ``[[ $x -eq 0 ]]``, ``-v``), ``${!x}`` and ``${x@P}``, every assignment (``x=…``,
  ``A=1 cmd`` but ``IFS=… read``, ``declare``/``export``/``local``/``readonly``/``typeset``,
  ``unset``) and every
  other way to set a variable an environment variable could be named by (``read``,
  ``printf -v``, ``mapfile``, ``getopts``, ``for NAME in``), and builtins that change the
  shell itself (``alias``, ``shopt``, most of ``set``, ``hash``, ``enable``, ``source``/``.``,
  ``compgen``/``complete``, ``fc``, ``umask``). No allow rule covers them: they are asked.
- *opaque* parts are ordinary but depend on run time: substitutions, variables,
  unquoted globs (a file named ``-delete`` becomes an option), compound commands, writing
  redirections, background jobs. A read-only agent that lost its sandbox allows only lines
  with neither (see :func:`etcode.tools.command_permission.check_command`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?(0[xX][0-9a-fA-F]+|[0-9]+(#[0-9A-Za-z@_]+)?)")
#: Lower-case names programs read from the environment (upper-case ones all count).
_LOWER_ENV = frozenset({"http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy"})
_LOWER_ENV_PREFIXES = ("npm_config_", "yarn_", "pnpm_")
#: ``test``/``[[`` operators that read their operands as arithmetic (or a variable name).
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NAME_TESTS = frozenset({"-v", "-R"})
#: Options of ``declare``/``typeset`` that only list (``export -f`` exports functions).
_LISTING = frozenset({"-p", "-f", "-F"})


def _lists_only(builtin: str, args: Sequence[str]) -> bool:
    """``declare -p``, ``typeset -f``, ``export -p``, bare ``export``: listings."""
    if builtin in ("declare", "typeset"):
        return all(arg in _LISTING for arg in args)
    return builtin in ("export", "readonly") and all(arg == "-p" for arg in args)


#: Node types of an arithmetic expression that hold no value of their own.
_ARITHMETIC_SHAPES = frozenset(
    {"binary_expression", "unary_expression", "parenthesized_expression", "ternary_expression"}
)
#: ``set`` options that change nothing a later program sees.
_PLAIN_SET_LETTERS = frozenset("euxvECfn")
_PLAIN_SET_NAMES = frozenset({"pipefail", "errexit", "nounset", "xtrace", "verbose", "noclobber",
                              "noglob", "errtrace", "noexec"})  # fmt: skip
#: Builtins that change the shell itself or run code they are given.
_SHELL_CHANGING = {
    "let": "let evaluates arithmetic, which can run code",
    "alias": "an alias changes what a later command runs",
    "unalias": "unalias changes what a later command runs",
    "source": "source runs a file as shell code",
    ".": ". runs a file as shell code",
    "enable": "enable loads or turns off builtins",
    "compgen": "compgen can run a command or function",
    "complete": "complete can run a command or function",
    "fc": "fc runs commands again",
    "umask": "umask changes the files later commands create",
    "unset": "unset changes the environment of later commands",
    "declare": "declare sets variables",
    "typeset": "typeset sets variables",
    "local": "local sets variables",
    "readonly": "readonly sets variables",
    "export": "export changes the environment of later commands",
}
#: Node types a plain line is made of (anything else is opaque).
_PLAIN_NODES = frozenset(
    {"program", "list", "pipeline", "command", "command_name", "word", "string", "string_content",
     "raw_string", "ansi_c_string", "number", "concatenation", "comment", "redirected_statement",
     "file_redirect", "file_descriptor", "herestring_redirect", "heredoc_redirect", "heredoc_start",
     "heredoc_body", "heredoc_content", "heredoc_end"}
)  # fmt: skip
_GLOB = re.compile(r"(?<!\\)[*?\[]")


def sensitive_name(name: str) -> bool:
    """A variable name setting which may change how a later program runs: every
    upper-case name (``PATH``, ``GIT_*``, ``LD_*``, ``BASH_ENV``, ``PYTHON*``, ``IFS``…), the
    lower-case ones programs read (``http_proxy``…), an array element, anything not a name."""
    if not _NAME.fullmatch(name):
        return True
    if name in _LOWER_ENV or name.startswith(_LOWER_ENV_PREFIXES):
        return True
    return not any(char.islower() for char in name) and name != "_"


def node_text(node: Node) -> str:
    """A node's source text."""
    return (node.text or b"").decode("utf-8", errors="surrogateescape")


def walk(root: Node) -> Iterator[Node]:
    """Every node under ``root``, depth first, without recursion (deep nesting is fine)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def base_name(program: str) -> str:
    """A program's name without its folder (``/bin/rm`` → ``rm``)."""
    return program.rstrip("/").rsplit("/", 1)[-1]


def _plain_number(node: Node) -> bool:
    return node.type in ("number", "word", "variable_name") and bool(_NUMBER.fullmatch(node_text(node)))


def _arithmetic_is_literal(node: Node) -> bool:
    """True when an arithmetic expression holds only numbers (no variable, no
    substitution whose text bash would evaluate again)."""
    stack = list(node.named_children)  # no recursion: ``$(((((…1…)))))`` nests deep
    while stack:
        child = stack.pop()
        if child.type in _ARITHMETIC_SHAPES:
            stack.extend(child.named_children)
        elif not _plain_number(child):
            return False
    return True


def _ifs_for_read(node: Node) -> bool:
    """``IFS=… read -r line``: the idiom sets how ``read`` splits, for ``read`` alone."""
    parent, name = node.parent, node.child_by_field_name("name")
    if parent is None or parent.type != "command" or name is None or node_text(name) != "IFS":
        return False
    program = parent.child_by_field_name("name")
    return program is not None and node_text(program) in ("read", "mapfile", "readarray")


def _expansion_risk(node: Node) -> str | None:
    tokens = [child.type for child in node.children]
    for child in node.children:  # the grammar leaves ``${x#$(cmd)}``, ``${x:-`cmd`}`` unread
        if child.type in ("regex", "word") and ("$" in node_text(child) or "`" in node_text(child)):
            return "an expansion inside ${…} is not read by the grammar, and can run code"
    if len(tokens) > 1 and tokens[1] == "!":
        return "${!name} reads a variable named by another, which can run code"
    if "@" in tokens:
        return "${name@…} transforms a value and can run code"
    if "=" in tokens or ":=" in tokens:
        return "${name:=…} sets a variable"
    if ":" in tokens:
        offsets = node.children[tokens.index(":") + 1 : -1]
        if any(child.is_named and not _offset_is_literal(child) for child in offsets):
            return "a substring offset is arithmetic, which can run code"
    return None


def _offset_is_literal(node: Node) -> bool:
    if node.type in _ARITHMETIC_SHAPES:
        return _arithmetic_is_literal(node)
    return _plain_number(node)


def _test_risk(node: Node) -> str | None:
    bracket = node_text(node.children[0]) if node.children else ""
    for child in walk(node):
        if child.type != "test_operator":
            continue
        operator = node_text(child)
        if operator in _NAME_TESTS:
            return f"{operator} evaluates an array index, which can run code"
        if operator in _ARITHMETIC_TESTS and bracket == "[[":
            parent = child.parent
            operands = [c for c in parent.named_children if c.type != "test_operator"] if parent else []
            if not all(_plain_number(operand) for operand in operands):
                return f"[[ … {operator} … ]] evaluates its operands as arithmetic, which can run code"
    return None


_ARITHMETIC_RISK = "arithmetic over variables can run code"


def _assignment_risk(node: Node) -> str | None:
    return None if _ifs_for_read(node) else "an assignment changes how later commands run"


def _declaration_risk(node: Node) -> str | None:
    """``declare``/``export``/``local``… set variables, unless they only list them."""
    builtin = node_text(node.children[0]) if node.children else ""
    arguments = node.named_children
    if all(child.type == "word" for child in arguments) and _lists_only(
        builtin, [node_text(c) for c in arguments]
    ):
        return None
    return _SHELL_CHANGING.get(builtin, "it sets variables")


def _unset_risk(_node: Node) -> str | None:
    return _SHELL_CHANGING["unset"]


def _arithmetic_risk(node: Node) -> str | None:
    return None if _arithmetic_is_literal(node) else _ARITHMETIC_RISK


def _double_parentheses_risk(node: Node) -> str | None:
    """``((x))`` as a compound statement."""
    if node.children and node.children[0].type == "((":
        return _arithmetic_risk(node)
    return None


def _substitution_risk(node: Node) -> str | None:
    """``$((x))`` read as ``$( (x) )``."""
    return _ARITHMETIC_RISK if node_text(node).startswith("$((") else None


def _subshell_risk(node: Node) -> str | None:
    """``time ((x))`` read as ``( (x) )``."""
    return _ARITHMETIC_RISK if node_text(node).startswith("((") else None


def _subscript_risk(node: Node) -> str | None:
    index = node.child_by_field_name("index")
    if index is None:
        index = next((c for c in node.named_children[1:]), None)
    if index is not None and not _plain_number(index) and node_text(index) not in ("@", "*"):
        return "an array index is arithmetic, which can run code"
    return None


def _loop_variable_risk(node: Node) -> str | None:
    """``for NAME in …`` sets NAME."""
    variable = node.child_by_field_name("variable")
    if variable is not None and sensitive_name(node_text(variable)):
        return f"the loop sets {node_text(variable)}, which changes how later commands run"
    return None


#: Node types that may be unsafe → why a node of that type is (None: it is not).
_NODE_RISKS: dict[str, Callable[[Node], str | None]] = {
    "variable_assignment": _assignment_risk,
    "declaration_command": _declaration_risk,
    "unset_command": _unset_risk,
    "arithmetic_expansion": _arithmetic_risk,
    "c_style_for_statement": _arithmetic_risk,
    "compound_statement": _double_parentheses_risk,
    "command_substitution": _substitution_risk,
    "subshell": _subshell_risk,
    "expansion": _expansion_risk,
    "subscript": _subscript_risk,
    "test_command": _test_risk,
    "for_statement": _loop_variable_risk,
}


def node_risk(node: Node) -> str | None:
    """Why ``node`` is unsafe (see the module docstring), or None."""
    check = _NODE_RISKS.get(node.type)
    return check(node) if check is not None else None


def command_risk(words: Sequence[str], dynamic: Sequence[bool]) -> str | None:
    """Why a simple command (its words after quote removal; ``dynamic[i]`` when word i is
    known only at run time) is unsafe, or None."""
    if not words:
        return None
    name = base_name(words[0]) if not dynamic[0] else words[0]
    args = list(words[1:])
    if name in _SHELL_CHANGING:
        return None if _lists_only(name, args) else _SHELL_CHANGING[name]
    option_risk = _OPTION_RISKS.get(name)
    if option_risk is not None:
        return option_risk(args)
    return _setter_risk(name, args, list(dynamic[1:]))


def _test_options_risk(args: list[str]) -> str | None:
    if any(a in _NAME_TESTS for a in args):
        return "test -v evaluates an array index, which can run code"
    return None


def _double_bracket_risk(args: list[str]) -> str | None:
    """``time [[ … ]]``: the words of a ``[[`` the grammar did not read as a test."""
    if any(a in _NAME_TESTS or a in _ARITHMETIC_TESTS for a in args):
        return "[[ … ]] evaluates its operands as arithmetic, which can run code"
    return None


def _shopt_risk(args: list[str]) -> str | None:
    if any(a in ("-s", "-u") or not a.startswith("-") for a in args):
        return "shopt changes how later commands are read"
    return None


def _hash_risk(args: list[str]) -> str | None:
    if any(a != "-r" for a in args):
        return "hash changes which program a name runs"
    return None


def _setter_risk(name: str, args: list[str], unknown: list[bool]) -> str | None:
    """``read``, ``mapfile``, ``getopts``, ``printf -v`` setting a sensitive variable (or
    one named only at run time), and ``mapfile -C`` running a command."""
    for target, target_unknown in _set_variables(name, args, unknown):
        if target_unknown or sensitive_name(target):
            return f"{name} sets {target}, which changes how later commands run"
    if name in ("mapfile", "readarray") and any(a.startswith("-") and "C" in a for a in args):
        return f"{name} -C runs a command"
    return None


#: Builtins that set variables → their options that take a value.
_SETTERS = {"read": "adinNptu", "mapfile": "dnOsuCc", "readarray": "dnOsuCc"}


def _set_variables(name: str, args: list[str], unknown: list[bool]) -> list[tuple[str, bool]]:
    """The variables ``read``/``mapfile``/``getopts``/``printf -v`` set, each with whether
    its name is known only at run time."""
    pairs = list(zip(args, unknown, strict=False))
    if name == "printf":
        return [pairs[i + 1] for i, (arg, _) in enumerate(pairs[:-1]) if arg == "-v"]
    if name == "getopts":
        return pairs[1:2]
    if name not in _SETTERS:
        return []
    targets: list[tuple[str, bool]] = []
    index = 0
    while index < len(pairs):
        arg, dynamic = pairs[index]
        if arg == "--":
            targets.extend(pairs[index + 1 :])
            break
        if arg.startswith("-") and len(arg) > 1 and not dynamic:
            if arg[-1] in _SETTERS[name] and index + 1 < len(pairs):
                if name == "read" and arg[-1] == "a":
                    targets.append(pairs[index + 1])
                index += 2
                continue
            index += 1
            continue
        targets.append(pairs[index])
        index += 1
    return targets


def _set_risk(args: list[str]) -> str | None:
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-o", "+o"):
            if index + 1 >= len(args) or args[index + 1] not in _PLAIN_SET_NAMES:
                return "set -o changes how later commands run"
            index += 2
            continue
        letters = arg[1:]
        if arg[:1] in ("-", "+") and letters and set(letters.replace("o", "", 1)) <= _PLAIN_SET_LETTERS:
            if "o" not in letters:
                index += 1
                continue
            if not letters.endswith("o") or index + 1 >= len(args) or args[index + 1] not in _PLAIN_SET_NAMES:
                return "set -o changes how later commands run"
            index += 2
            continue
        return f"set {arg} changes how later commands run"
    return None


#: Builtins whose options make them unsafe → why they do with these arguments (None: not).
_OPTION_RISKS: dict[str, Callable[[list[str]], str | None]] = {
    "test": _test_options_risk,
    "[": _test_options_risk,
    "[[": _double_bracket_risk,
    "shopt": _shopt_risk,
    "set": _set_risk,
    "hash": _hash_risk,
}


def opaque(node: Node) -> str | None:
    """Why ``node`` is not plain though it is not unsafe (see the module docstring), or None."""
    kind = node.type
    if not node.is_named:
        return "a background job" if kind == "&" else None
    if kind not in _PLAIN_NODES:
        return f"{kind.replace('_', ' ')} is known only at run time"
    if kind == "word" and _GLOB.search(node_text(node)) and not _quoted(node):
        return "an unquoted glob: file names may become options"
    if kind == "file_redirect":
        operator = next((c.type for c in node.children if not c.is_named), "")
        target = node.named_children[-1] if node.named_children else None
        if operator.startswith("<") or target is None:
            return None
        if target.type == "number" or node_text(target) in ("/dev/null", "-"):
            return None
        return "a redirection writes a file"
    return None


def _quoted(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type in ("string", "heredoc_body")


def substitutions(text: str) -> list[str]:
    """The command texts in ``$(…)`` and backticks inside a literal string, which bash runs
    when it evaluates that string as arithmetic (``a[$(rm x)]`` → ``rm x``)."""
    found: list[str] = []
    index = 0
    while index < len(text):
        if text.startswith("$(", index) and not text.startswith("$((", index):
            depth, end = 1, index + 2
            while end < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            found.append(text[index + 2 : end - 1 if depth == 0 else end])
            index = end  # what is nested inside is found when the text found is read
            continue
        if text[index] == "`":
            end = text.find("`", index + 1)
            found.append(text[index + 1 : end if end != -1 else len(text)])
            index = end + 1 if end != -1 else len(text)
            continue
        index += 1
    return [item for item in found if item.strip()]
