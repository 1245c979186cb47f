"""What a shell command line will run, read with a real bash grammar (tree-sitter-bash),
for permission rules.

:func:`analyze` finds every simple command a line can start — in pipelines, lists,
subshells, groups, functions, ``$(…)``, backticks, ``<(…)``/``>(…)``, here-documents,
``bash -c '…'``, ``eval``, ``trap`` and ``alias`` strings and behind wrappers such as
``sudo``, ``env``, ``xargs``, ``timeout`` or ``find -exec`` — with quotes and escapes
removed (``'rm'``, ``\\rm`` and ``r\\<newline>m`` are all ``rm``), absolute program paths
also seen by their base name (``/bin/rm`` → ``rm``), ``$IFS`` read as a space and
variables assigned a literal earlier in the line substituted (``X=rm; $X f`` → ``rm f``).
It also lists the files written by redirections and read by ``<``.

What cannot be known without running the line — a command name that comes from a
variable or a substitution, ``eval`` of non-literal text, a shell reading commands from
a pipe — is marked *dynamic*: a rule can never simply allow it; it is asked. So are the
parts :mod:`etcode.security.shell_plain` finds unsafe (arithmetic over variables, assignments,
``declare``/``export``, ``[[ $x -eq 0 ]]``…): they can run code or steer a later program.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from etcode.security import shell_plain
from etcode.security.option_prefixes import spelled_out
from etcode.security.shell_plain import base_name as _base
from etcode.security.shell_plain import node_text as _text
from etcode.security.shell_plain import walk as _walk

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

#: Nested shell strings (``bash -c "bash -c '…'"``) deeper than this are not followed.
MAX_DEPTH = 8
#: Redirection targets that write nothing anyone keeps.
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
_WRITE_OPERATORS = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})
#: What a backslash escapes inside backticks (bash removes it before running the text).
_BACKTICK_ESCAPE = re.compile(r"\\([\\`$])")
_READ_OPERATORS = frozenset({"<", "<>", "<&"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "busybox"})
#: Commands whose second word picks the action (``git push``, ``npm run``).
_TWO_WORD = frozenset(
    {"git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "kubectl", "pip", "uv", "poetry",
     "make", "gh", "brew", "apt", "apt-get", "dotnet", "terraform", "helm", "systemctl"}
)  # fmt: skip


@dataclass(frozen=True)
class Word:
    """One word after quote removal; ``literal`` is False when it depends on run time
    (a substitution or an unknown variable), and then ``text`` is its source text.
    ``path``: for such a word, its value with ``$PWD``/``$HOME`` filled in when nothing
    else in it is unknown (``"$PWD/.env"``), for the ``read`` rules only."""

    text: str
    literal: bool = True
    path: str | None = None


@dataclass(frozen=True)
class ShellCommand:
    """One simple command: its words (the program first), the ``NAME=value`` assignments
    before it, and whether the program it runs is only known at run time."""

    words: tuple[Word, ...]
    assignments: tuple[str, ...] = ()
    dynamic: bool = False

    @property
    def name(self) -> str:
        return self.words[0].text if self.words else ""

    @property
    def text(self) -> str:
        """The command as permission rules see it: words joined by one space."""
        return " ".join(word.text for word in self.words)

    def patterns(self) -> list[str]:
        """The texts rules are matched against: the command; with a path as program, also
        by its base name (``/bin/rm x`` → ``rm x``); with assignments, also with them."""
        texts = [self.text]
        if "/" in self.name and self.words[0].literal:
            base = _base(self.name)
            if base:
                texts.append(" ".join([base, *(word.text for word in self.words[1:])]))
        if self.assignments:
            texts.append(" ".join([*self.assignments, self.text]))
        if self.words and self.words[0].literal:  # ``git diff --outp=x`` is ``--output=x``
            texts.extend(spelled_out(_base(self.name), [word.text for word in self.words]))
        return texts


@dataclass
class ShellAnalysis:
    """Everything :func:`analyze` found in one command line."""

    commands: list[ShellCommand] = field(default_factory=list)
    #: Files written by redirections (``> f``, ``>> f``, ``&> f``), as written.
    writes: list[str] = field(default_factory=list)
    #: Files read by ``< f``, as written.
    reads: list[str] = field(default_factory=list)
    #: Why part of the line could not be read statically (shown to the user).
    problems: list[str] = field(default_factory=list)
    #: The line itself: asked about whole when it does not parse.
    source: str = ""
    #: Parts that can run code or change how a later program runs (``$((x))``, ``x=…``,
    #: ``export A=1``, ``[[ $x -eq 0 ]]``…), as written: asked whatever the allow rules say.
    unsafe_parts: list[str] = field(default_factory=list)
    #: Parts known only at run time though not unsafe (substitutions, variables, unquoted
    #: globs, compound commands, written files): a line with none of these nor of the
    #: above is *plain*; read-only agents without their sandbox allow only plain lines.
    opaque_parts: list[str] = field(default_factory=list)

    @property
    def plain(self) -> bool:
        """Words, quotes and resolved expansions only: what the rules see is what runs."""
        return not (
            self.unsafe_parts
            or self.opaque_parts
            or self.problems
            or any(command.dynamic for command in self.commands)
        )

    def patterns(self) -> list[str]:
        """Every text the ``bash`` rules must allow: each command (see
        :meth:`ShellCommand.patterns`) and ``> file`` for each file written."""
        found: list[str] = []
        for command in self.commands:
            found.extend(command.patterns())
        found.extend(f"> {target}" for target in self.writes)
        if self.problems and not self.commands:
            found.append(self.source.strip())
        return list(dict.fromkeys(text for text in found if text))

    def dynamic_patterns(self) -> list[str]:
        """Patterns to ask about even when a rule allows them: what runs is unknown, or
        may run code or steer a later program (:attr:`unsafe_parts`)."""
        found = [command.text for command in self.commands if command.dynamic]
        found.extend(self.unsafe_parts)
        if any(problem.startswith("syntax") for problem in self.problems):
            found.append(self.source.strip())
        return list(dict.fromkeys(text for text in found if text))

    def always_patterns(self) -> list[str]:
        """The rules an "allow always" answer adds: ``git push *``, ``ls *``, ``> out.txt``
        (none for dynamic commands, which are asked every time)."""
        found = [always_pattern(c) for c in self.commands if not c.dynamic and c.words]
        found.extend(f"> {target}" for target in self.writes)
        return list(dict.fromkeys(found))

    def path_arguments(self) -> list[str]:
        """Literal words that may name files (arguments, ``--opt=value`` values, ``< file``
        targets; ``$PWD/…`` spellings filled in), for the ``read`` rules."""
        found: list[str] = list(self.reads)
        for command in self.commands:
            for word in command.words[1:]:
                text = path_text(word)
                if not text:
                    continue
                if not text.startswith("-"):
                    found.append(text)
                elif "=" in text:
                    found.append(text.split("=", 1)[1])
        return list(dict.fromkeys(text for text in found if text))


def path_text(word: Word) -> str | None:
    """What ``word`` names as a path: its text, or its ``$PWD``-filled value; None if unknown."""
    return word.text if word.literal else word.path


def always_pattern(command: ShellCommand) -> str:
    """The rule an "allow always" answer adds for ``command``: ``git push *``, ``ls *``."""
    words = [word.text for word in command.words]
    keep = 2 if words[0] in _TWO_WORD and len(words) > 1 and not words[1].startswith("-") else 1
    return " ".join(words[:keep]) + " *"


# ---- parsing --------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _join_continuations(source: str) -> str:
    """Remove backslash-newline pairs outside single quotes, as bash does before it
    splits words (``r\\<newline>m`` is ``rm``)."""
    if "\\\n" not in source:
        return source
    out: list[str] = []
    single = double = False
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\" and not single and i + 1 < len(source):
            if source[i + 1] == "\n":
                i += 2
                continue
            out.append(source[i : i + 2])
            i += 2
            continue
        if char == "'" and not double:
            single = not single
        elif char == '"' and not single:
            double = not double
        out.append(char)
        i += 1
    return "".join(out)


def analyze(command: str, places: dict[str, str] | None = None) -> ShellAnalysis:
    """Every command, write and read a shell line may perform (see the module docstring).
    ``places`` (``{"PWD": …, "HOME": …}``) fill in :attr:`Word.path` only."""
    analysis = ShellAnalysis(source=command)
    _Reader(analysis, places).read(command, depth=0)
    analysis.writes = list(dict.fromkeys(analysis.writes))
    analysis.reads = list(dict.fromkeys(analysis.reads))
    analysis.problems = list(dict.fromkeys(analysis.problems))
    analysis.unsafe_parts = list(dict.fromkeys(analysis.unsafe_parts))
    analysis.opaque_parts = list(dict.fromkeys(analysis.opaque_parts))
    return analysis


def _misread(root: Node) -> bool:
    """True when the grammar took a line break into an unquoted word (tree-sitter-bash
    reads ``true<newline>\\rm x`` as one command): bash never does, so the tree is wrong."""
    return any(node.type == "word" and "\n" in _text(node) for node in _walk(root))


class _Reader:
    """Fills one :class:`ShellAnalysis` from a line and the shell strings nested in it."""

    def __init__(self, analysis: ShellAnalysis, places: dict[str, str] | None = None) -> None:
        self.analysis = analysis
        self.variables: dict[str, list[str | None]] = {"IFS": [" "]}
        self.places = places or {}

    def read(self, source: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.analysis.problems.append("shell strings nested too deeply to follow")
            self.analysis.commands.append(ShellCommand((Word(source.strip(), False),), dynamic=True))
            return
        text = _join_continuations(source)
        root = _parser().parse(text.encode("utf-8", errors="surrogateescape")).root_node
        if root.has_error or _misread(root):
            self.analysis.problems.append("syntax: the command does not parse as bash")
            self._rough_commands(text)
        self._collect_assignments(root)
        unsafe_before = len(self.analysis.unsafe_parts)
        for node in _walk(root):
            kind = node.type
            if kind == "command":
                self._command(node, depth)
            elif kind == "file_redirect":
                self._redirect(node)
            elif kind == "command_substitution":
                self._escaped_backticks(node, depth)
            self._plainness(node)
        if len(self.analysis.unsafe_parts) > unsafe_before:
            self._hidden_substitutions(root, depth)

    def _escaped_backticks(self, node: Node, depth: int) -> None:
        """Inside backticks bash drops the backslash before a backtick, ``$`` or backslash
        and then runs the text, so an escaped backtick pair inside backticks is a nested
        substitution that runs (the grammar keeps the backslashes): read it as bash will."""
        text = _text(node)
        if not text.startswith("`") or "\\" not in text:
            return
        inner = text[1:-1] if len(text) > 1 and text.endswith("`") else text[1:]
        body = _BACKTICK_ESCAPE.sub(r"\1", inner)
        if body != inner:
            self.read(body, depth + 1)

    def _plainness(self, node: Node) -> None:
        """Record ``node`` if it is unsafe or opaque (:mod:`etcode.security.shell_plain`)."""
        risk = shell_plain.node_risk(node)
        if risk is not None:
            parent = node.parent  # not for every node: tree-sitter finds a parent from the root
            if parent is not None and parent.type in _REPORTED_WHOLE.get(node.type, ()):
                return  # ``export A=1``, ``a[x]=1``: the whole is reported
            whole = node.type == "variable_assignment" and parent is not None and parent.type == "command"
            self._unsafe(_text(parent if whole and parent is not None else node), risk)
            return
        reason = shell_plain.opaque(node)
        if reason is not None:
            self.analysis.opaque_parts.append(_text(node) or reason)

    def _unsafe(self, text: str, reason: str) -> None:
        self.analysis.unsafe_parts.append(text.strip())
        self.analysis.problems.append(f"{reason}: {text.strip()}")

    def _hidden_substitutions(self, root: Node, depth: int) -> None:
        """In a line that evaluates text as code, the ``$(…)`` in its literal strings may
        run (``x='a[$(rm v)]'; ls $((x))``): read them, so that deny rules see them."""
        for node in _walk(root):
            if node.type not in ("raw_string", "string", "ansi_c_string", "word", "heredoc_content", "regex"):
                continue
            value = self._literal(node) if node.type not in ("heredoc_content", "regex") else _text(node)
            for inner in shell_plain.substitutions(value or ""):
                self.read(inner, depth + 1)

    def _rough_commands(self, text: str) -> None:
        """For a line the grammar rejects (it is asked about whole): its words as
        ``shlex`` splits them, so that a ``deny`` rule still sees ``{rm,-rf,x}`` as ``rm``."""
        import shlex

        for line in re.split(r"[;&|\n()`]+", text):
            try:
                words = shlex.split(line)
            except ValueError:
                words = line.split()
            expanded = [Word(part) for word in words for part in expand_braces(word)]
            if expanded:
                self.analysis.commands.append(ShellCommand(tuple(expanded)))

    # -- variables
    def _collect_assignments(self, root: Node) -> None:
        """``NAME=value`` statements (also after ``export``/``declare``/``local``): the
        literal values each name may hold; None for a value known only at run time."""
        for node in _walk(root):
            if node.type != "variable_assignment":
                continue
            parent = node.parent
            if parent is not None and parent.type == "command":
                continue  # ``A=1 cmd``: for that command only
            name_node = node.child_by_field_name("name")
            value_node = node.child_by_field_name("value")
            if name_node is None:
                continue
            name = _text(name_node)
            value = "" if value_node is None else self._literal(value_node)
            values = self.variables.setdefault(name, [])
            if name == "IFS":
                values.clear()
            if value not in values:
                values.append(value)

    # -- words
    def _literal(self, node: Node) -> str | None:
        """The text of a word after quote removal and expansion of known variables, or
        None when it depends on run time."""
        kind = node.type
        if kind in ("word", "number", "variable_name", "special_variable_name"):
            return _unescape_word(_text(node))
        if kind == "raw_string":
            return _text(node)[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(_text(node)[2:-1])
        if kind in ("string", "translated_string"):
            parts: list[str] = []
            for child in node.named_children:
                value = self._literal(child) if child.type != "string_content" else None
                if child.type == "string_content":
                    value = _unescape_double(_text(child))
                if value is None:
                    return None
                parts.append(value)
            return "".join(parts)
        if kind == "concatenation":
            pieces = [self._literal(child) for child in node.named_children]
            if any(piece is None for piece in pieces):
                return None
            return "".join(piece or "" for piece in pieces)
        if kind in ("simple_expansion", "expansion"):
            return self._variable(node)
        return None

    def _variable(self, node: Node) -> str | None:
        """``$NAME`` / ``${NAME}`` with one known literal value; None otherwise."""
        names = [child for child in node.named_children if child.type == "variable_name"]
        if len(names) != 1 or len(node.named_children) != 1:  # ${X:-…}, ${#X}, ${X/a/b}
            return None
        values = self.variables.get(_text(names[0]))
        if values is None or len(values) != 1:
            return None
        return values[0]

    def _fields(self, node: Node) -> list[Word]:
        """The words one argument node becomes: split on spaces when an unquoted
        expansion contributed (``rm${IFS}x`` → ``rm``, ``x``)."""
        value = self._literal(node)
        if value is None:
            return [Word(_text(node), literal=False, path=self._place_literal(node))]
        if _has_unquoted_expansion(node):
            return [Word(part) for part in value.split()]
        if _has_unquoted_braces(node):
            return [Word(part) for part in expand_braces(value)]
        return [Word(value)]

    def _place_literal(self, node: Node) -> str | None:
        """``node``'s value with ``$PWD``/``$HOME`` known (when the line does not set them)."""
        if not self.places:
            return None
        known = self.variables
        self.variables = {**{k: [v] for k, v in self.places.items()}, **known}
        try:
            return self._literal(node)
        finally:
            self.variables = known

    # -- commands
    def _command(self, node: Node, depth: int) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        assignments = tuple(_text(child) for child in node.children if child.type == "variable_assignment")
        words: list[Word] = []
        name_words = self._fields(name_node.named_children[0] if name_node.named_children else name_node)
        words.extend(name_words)
        for argument in node.children_by_field_name("argument"):
            words.extend(self._fields(argument))
        words = [word for word in words if word.text or not word.literal]
        if not words:
            return
        dynamic = not words[0].literal
        command = ShellCommand(tuple(words), assignments, dynamic)
        self.analysis.commands.append(command)
        self._command_risk(command)
        if not dynamic:
            self._inner(command, node, depth)

    def _command_risk(self, command: ShellCommand) -> None:
        risk = shell_plain.command_risk(
            [w.text for w in command.words], [not w.literal for w in command.words]
        )
        if risk is not None:
            self._unsafe(command.text, risk)

    def _inner(self, command: ShellCommand, node: Node, depth: int) -> None:
        """Commands run by this one: behind wrappers, in ``-c`` strings, ``eval`` and
        ``trap``/``alias`` strings, or read by a shell from its standard input."""
        words = list(command.words)
        name = _base(words[0].text)
        if name in _SHELLS:
            self._shell(words, node, depth)
            return
        if name == "eval":
            self._shell_string(words[1:], depth, "eval")
            return
        if name == "trap" and len(words) > 2:
            self._shell_string(words[1:2], depth, "trap")
            return
        if name == "alias":
            for word in words[1:]:
                if "=" in word.text:
                    self._shell_string([Word(word.text.split("=", 1)[1], word.literal)], depth, "alias")
            return
        if name == "watch":
            rest = _after_options(words[1:], _WATCH_ARGS)
            if rest:
                self._shell_string(rest, depth, "watch")
            return
        if name == "find":
            for start, end in _find_exec_spans(words):
                self._nested(words[start:end], node, depth)
            return
        if name == "rg":
            for program in _rg_preprocessors(words):
                self._nested([program], node, depth)
            return
        if name == "git":
            for pager in _git_grep_pagers(words):
                self._shell_string([pager], depth, "git grep -O")
        inner = _unwrap(name, words)
        if inner:
            self._nested(inner, node, depth)

    def _nested(self, words: list[Word], node: Node, depth: int) -> None:
        """A command given as words to another (``sudo rm x``, ``xargs rm``)."""
        if not words:
            return
        assignments: list[str] = []
        while words and words[0].literal and _ASSIGNMENT.match(words[0].text):
            assignments.append(words[0].text)
            words = words[1:]
        if assignments:
            shown = " ".join([*assignments, *(word.text for word in words)])
            self._unsafe(shown, "an assignment changes how a command runs")
        if not words:
            return
        command = ShellCommand(tuple(words), tuple(assignments), dynamic=not words[0].literal)
        self.analysis.commands.append(command)
        self._command_risk(command)
        if not command.dynamic:
            self._inner(command, node, depth)

    def _shell(self, words: list[Word], node: Node, depth: int) -> None:
        """``bash -c '…'`` is read as shell; a shell with no script reads commands from
        standard input: a here-string or here-document is read, a pipe is unknown."""
        index = 1
        while index < len(words):
            word = words[index]
            if word.literal and word.text.startswith("-") and not word.text.startswith("--"):
                if "c" in word.text[1:]:
                    self._shell_string(words[index + 1 : index + 2], depth, f"{words[0].text} -c")
                    return
                index += 1
                continue
            if word.literal and word.text.startswith("--"):
                index += 1
                continue
            return  # a script file: its name is in the command's own pattern
        stdin = [
            child for child in node.children if child.type in ("herestring_redirect", "heredoc_redirect")
        ]
        parent = node.parent
        for child in parent.children if parent is not None and parent.type == "redirected_statement" else []:
            if child.type in ("herestring_redirect", "heredoc_redirect"):
                stdin.append(child)
        text = self._stdin_text(stdin)
        if text is None:
            self._unknown(" ".join(w.text for w in words), f"{words[0].text} reads commands from its input")
        else:
            self.read(text, depth + 1)

    def _stdin_text(self, redirects: list[Node]) -> str | None:
        if len(redirects) != 1:
            return None
        redirect = redirects[0]
        if redirect.type == "herestring_redirect":
            value = redirect.named_children[-1] if redirect.named_children else None
            return self._literal(value) if value is not None else None
        body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
        if body is None:
            return None
        if any(child.type != "heredoc_content" for child in body.named_children):
            return None
        return _text(body)

    def _shell_string(self, words: list[Word], depth: int, what: str) -> None:
        """Read the words (joined by spaces, as ``eval`` does) as a shell line."""
        if not words:
            return
        if not all(word.literal for word in words):
            self._unknown(
                f"{what} {' '.join(w.text for w in words)}", f"{what} of text known only at run time"
            )
            return
        self.read(" ".join(word.text for word in words), depth + 1)

    def _unknown(self, what: str, problem: str) -> None:
        self.analysis.problems.append(problem)
        self.analysis.commands.append(ShellCommand((Word(what, literal=False),), dynamic=True))

    # -- redirections
    def _redirect(self, node: Node) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        destination = node.child_by_field_name("destination")
        if destination is None:
            named = [c for c in node.named_children if c.type != "file_descriptor"]
            destination = named[-1] if named else None
        if destination is None:
            return
        if operator in (">&", "<&") and destination.type == "number":
            return  # 2>&1: a copy of a descriptor
        value = self._literal(destination)
        target = value if value is not None else _text(destination)
        if operator in (">&", "<&") and (target.isdigit() or target == "-"):
            return
        if operator in _WRITE_OPERATORS and target not in _HARMLESS_TARGETS:
            self.analysis.writes.append(target)
        if operator in _READ_OPERATORS and target not in _HARMLESS_TARGETS:
            self.analysis.reads.append(target)


#: Unsafe nodes not reported on their own inside these (their parent is reported).
_REPORTED_WHOLE = {
    "variable_assignment": ("declaration_command", "c_style_for_statement"),
    "subscript": ("variable_assignment",),
}

# ---- wrappers -------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
#: Wrapper → its options that take a value (the next word).
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir", "-S", "--split-string"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
    "setsid": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset(
        {
            "-a",
            "-d",
            "-E",
            "-e",
            "-I",
            "-i",
            "-L",
            "-l",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--replace",
            "--max-chars",
            "--eof",
        }
    ),  # fmt: skip
    "unbuffer": frozenset(),
    "chroot": frozenset({"--userspec", "--groups"}),
    "flock": frozenset({"-w", "-E", "--timeout", "--conflict-exit-code"}),
    "strace": frozenset({"-e", "-o", "-p", "-s", "-u", "-E"}),
    "ltrace": frozenset({"-e", "-o", "-p", "-s", "-u"}),
    "taskset": frozenset(),
    "caffeinate": frozenset(),
    "sg": frozenset(),
    "coproc": frozenset(),
}
#: Wrappers whose first plain word is a value, not the command (``timeout 5 rm``).
_SKIP_FIRST = frozenset({"timeout", "chroot", "flock", "taskset", "sg"})
_WATCH_ARGS = frozenset({"-n", "--interval", "-d", "-g", "-q"})


def _after_options(words: list[Word], with_value: frozenset[str]) -> list[Word]:
    """The words after leading options (and the values of options that take one)."""
    index = 0
    while index < len(words):
        text = words[index].text
        if text == "--":
            return words[index + 1 :]
        if not text.startswith("-") or text == "-":
            return words[index:]
        index += 2 if text in with_value else 1
    return []


def _unwrap(name: str, words: list[Word]) -> list[Word]:
    """The command a wrapper runs (``sudo -u bob rm x`` → ``rm x``); [] when none."""
    if name not in _WRAPPERS:
        return []
    if name == "env":
        split = next((i for i, w in enumerate(words) if w.text in ("-S", "--split-string")), None)
        if split is not None and split + 1 < len(words):
            inner = words[split + 1]
            return [Word(part, inner.literal) for part in inner.text.split()] if inner.literal else [inner]
    if name == "command" and len(words) > 1 and words[1].text in ("-v", "-V"):
        return []
    rest = _after_options(words[1:], _WRAPPERS[name])
    if name in _SKIP_FIRST and rest:
        rest = rest[1:]
        if name == "flock" and rest and rest[0].text in ("-c", "--command"):
            return [Word("bash"), Word("-c"), *rest[1:2]]
    if name == "xargs" and not rest:
        return [Word("echo")]
    return rest


def _find_exec_spans(words: list[Word]) -> list[tuple[int, int]]:
    """``find … -exec CMD … ;`` (also ``-execdir``, ``-ok``, ``-okdir``, ending ``+``)."""
    spans: list[tuple[int, int]] = []
    index = 1
    while index < len(words):
        if words[index].text in ("-exec", "-execdir", "-ok", "-okdir"):
            start = index + 1
            end = start
            while end < len(words) and words[end].text not in (";", "+", "\\;"):
                end += 1
            spans.append((start, end))
            index = end
        index += 1
    return spans


def _rg_preprocessors(words: list[Word]) -> list[Word]:
    """``rg --pre CMD`` / ``--pre=CMD``: ripgrep runs CMD on every file it searches."""
    found: list[Word] = []
    for index, word in enumerate(words):
        if word.text == "--pre" and index + 1 < len(words):
            found.append(words[index + 1])
        elif word.text.startswith("--pre="):
            found.append(Word(word.text.split("=", 1)[1], word.literal))
    return found


#: git's own options before the subcommand that take a value.
_GIT_GLOBAL_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})


def git_subcommand(args: list[str]) -> tuple[str, list[str]]:
    """git's subcommand, after git's own options ("" when there is none), and its words."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in _GIT_GLOBAL_VALUE else 1
    return (args[index], args[index + 1 :]) if index < len(args) else ("", [])


def _git_grep_pagers(words: list[Word]) -> list[Word]:
    """``git grep -O<pager>`` / ``--open-files-in-pager=<pager>`` (any abbreviation): git runs
    the pager, a shell line, on the files found. (``-O`` alone runs the user's own pager.)"""
    subcommand, rest = git_subcommand([word.text for word in words[1:]])
    if subcommand != "grep":
        return []
    found: list[Word] = []
    for word in words[len(words) - len(rest) :]:
        if word.text == "--":
            break
        name, equals, value = word.text.partition("=")
        if equals and len(name) >= 3 and "--open-files-in-pager".startswith(name) and value:
            found.append(Word(value, word.literal))
        elif word.text.startswith("-") and not word.text.startswith("--") and "O" in word.text[1:]:
            pager = word.text[1:].split("O", 1)[1]
            if pager:
                found.append(Word(pager, word.literal))
    return found


# ---- quoting --------------------------------------------------------------------------

_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DOUBLE_ESCAPE = re.compile(r"\\([$`\"\\\n])")


def _unescape_word(text: str) -> str:
    """An unquoted word: ``\\x`` is ``x``."""
    return _ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text) if "\\" in text else text


def _unescape_double(text: str) -> str:
    """Inside double quotes only ``\\$``, ``\\```, ``\\"``, ``\\\\`` and newline are escapes."""
    if "\\" not in text:
        return text
    return _DOUBLE_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(body: str) -> str | None:
    """The value of ``$'…'`` (``$'\\x72m'`` → ``rm``)."""
    try:
        return codecs.decode(body.encode("latin-1", errors="backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return None


def _has_unquoted_braces(node: Node) -> bool:
    if node.type == "brace_expression":
        return True
    if node.type != "concatenation":
        return False
    return any(
        child.type == "brace_expression" or (child.type == "word" and "{" in _text(child))
        for child in node.named_children
    )


#: Results of one brace expansion beyond this are not generated (the word stays as is).
MAX_BRACE_WORDS = 256
_BRACE_RANGE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


def expand_braces(word: str) -> list[str]:
    """Bash brace expansion of one unquoted word: ``r{m,} x`` → ``rm``, ``r``;
    ``f{1..3}`` → ``f1 f2 f3``. A word without a valid ``{…}`` is returned as is."""
    results = _expand_braces(word)
    return results if 0 < len(results) <= MAX_BRACE_WORDS else [word]


def _expand_braces(word: str) -> list[str]:
    start = word.find("{")
    while start != -1:
        depth = 0
        commas: list[int] = []
        for index in range(start, len(word)):
            char = word[index]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    body = word[start + 1 : index]
                    options = _brace_options(body, [c - start - 1 for c in commas])
                    if options is None:
                        break
                    prefix, suffix = word[:start], word[index + 1 :]
                    tails = _expand_braces(suffix)
                    out: list[str] = []
                    for option in options:
                        for expanded in _expand_braces(option):
                            out.extend(prefix + expanded + tail for tail in tails)
                            if len(out) > MAX_BRACE_WORDS:
                                return out
                    return out
            elif char == "," and depth == 1:
                commas.append(index)
        start = word.find("{", start + 1)
    return [word]


def _brace_options(body: str, commas: list[int]) -> list[str] | None:
    if commas:
        bounds = [-1, *commas, len(body)]
        return [body[a + 1 : b] for a, b in zip(bounds, bounds[1:], strict=False)]
    found = _BRACE_RANGE.fullmatch(body)
    if found is None:
        return None
    first, last, step_text = found.groups()
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if first.lstrip("-").isdigit() and last.lstrip("-").isdigit():
        a, b = int(first), int(last)
        values = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [str(v) for v in list(values)[: MAX_BRACE_WORDS + 1]]
    if first.isalpha() and last.isalpha():
        a, b = ord(first), ord(last)
        codes = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [chr(c) for c in codes]
    return None


def _has_unquoted_expansion(node: Node) -> bool:
    if node.type in ("simple_expansion", "expansion"):
        return True
    if node.type == "concatenation":
        return any(child.type in ("simple_expansion", "expansion") for child in node.named_children)
    return False
