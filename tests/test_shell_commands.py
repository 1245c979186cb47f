"""The shell parser under the ``bash`` rules (issue 12, points 3-6): every command a line
can run reaches the rules, checked against real bash as the oracle."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etcode.permission import Decision
from etcode.security.shell_commands import analyze, expand_braces
from etcode.tools.base import PermissionDenied
from etcode.tools.bash import BashTool
from tests.permission_support import Answer, command_decision, ruled_context

decision = command_decision


# ---- the parser ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", ["ls -la"]),
        ("git status && rm -rf x", ["git status", "rm -rf x"]),
        ("a || b; c | d & e", ["a", "b", "c", "d", "e"]),
        ('echo "x && y; z"', ["echo x && y; z"]),
        ("echo 'a|b'", ["echo a|b"]),
        ("echo $(rm -rf /)", ["echo $(rm -rf /)", "rm -rf /"]),
        ("echo `whoami`", ["echo `whoami`", "whoami"]),
        ("(cd src && make)", ["cd src", "make"]),
        ("line1\nline2", ["line1", "line2"]),
        ("ls <(rm x)", ["ls <(rm x)", "rm x"]),
        ('ls "`rm x`"', ['ls "`rm x`"', "rm x"]),
        ("ls > file", ["ls", "> file"]),
        ("ls 2>&1 >/dev/null", ["ls"]),
        ("rm\tx", ["rm x"]),
        ("rm  -rf x", ["rm -rf x"]),
        ("FOO=1 rm x", ["rm x", "FOO=1 rm x"]),
        ("'rm' x", ["rm x"]),
        ("\\rm x", ["rm x"]),
        ("r\\\nm x", ["rm x"]),
        ("rm${IFS}x", ["rm x"]),
        ("X=rm; $X f", ["rm f"]),
        ("/bin/rm x", ["/bin/rm x", "rm x"]),
        ("$'\\x72m' x", ["rm x"]),
        ("r{m,} x", ["rm r x"]),
        ("bash -c 'rm z'", ["bash -c rm z", "rm z"]),
        ("eval 'rm q'", ["eval rm q", "rm q"]),
        ("sudo -u bob rm x", ["sudo -u bob rm x", "rm x"]),
        ("env -i FOO=1 rm y", ["env -i FOO=1 rm y", "rm y", "FOO=1 rm y"]),
        ("timeout 5 rm a", ["timeout 5 rm a", "rm a"]),
        ("find . -exec rm {} +", ["find . -exec rm {} +", "rm {}"]),
        ("rg --pre rm needle e", ["rg --pre rm needle e", "rm"]),
        ("git grep -O'rm x' -e y", ["git grep -Orm x -e y", "rm x"]),
        ("git grep --open-files-in-pager=rm -e y", ["git grep --open-files-in-pager=rm -e y", "rm"]),
        ("trap 'rm t' EXIT", ["trap rm t EXIT", "rm t"]),
        ("f() { rm c; }; f", ["rm c", "f"]),
        ("bash <<< 'rm h'", ["bash", "rm h"]),
        ("bash <<'EOF'\nrm h\nEOF", ["bash", "rm h"]),
        ("watch -n1 'rm w'", ["watch -n1 rm w", "rm w"]),
    ],
)
def test_commands_found(command: str, expected: list[str]) -> None:
    assert analyze(command).patterns() == expected


@pytest.mark.parametrize(
    ("command", "dynamic"),
    [
        ("$(echo rm) x", "$(echo rm) x"),
        ('eval "$C"', 'eval "$C"'),
        ("echo rm x | sh", "sh"),
        ("X=ls; X=rm; $X f", "$X f"),
        ('"$HOME/bin/tool" x', '"$HOME/bin/tool" x'),
        ('cat "unterminated', 'cat "unterminated'),
    ],
)
def test_what_cannot_be_read_statically_is_asked(command: str, dynamic: str) -> None:
    analysis = analyze(command)
    assert dynamic in analysis.dynamic_patterns()
    assert analysis.problems or analysis.commands[0].dynamic


def test_writes_reads_and_always_patterns() -> None:
    analysis = analyze("sort < in.txt > out.txt 2>>err.log; git push origin main &> /dev/null")
    assert analysis.writes == ["out.txt", "err.log"] and analysis.reads == ["in.txt"]
    assert analysis.always_patterns() == ["sort *", "git push *", "> out.txt", "> err.log"]
    assert analyze("$X y").always_patterns() == []  # dynamic: asked every time


def test_brace_expansion() -> None:
    assert expand_braces("{rm,-rf,x}") == ["rm", "-rf", "x"]
    assert expand_braces("a{1..3}") == ["a1", "a2", "a3"]
    assert expand_braces("f{a..c}{x,y}") == ["fax", "fay", "fbx", "fby", "fcx", "fcy"]
    assert expand_braces("{a}") == ["{a}"] and expand_braces("{}") == ["{}"]
    assert expand_braces("x{1..100000}") == ["x{1..100000}"]  # too many: left as written


def test_deep_nesting_does_not_crash() -> None:
    deep = "echo " + "$(" * 3000 + "rm x" + ")" * 3000
    assert "rm x" in analyze(deep).patterns()
    nested = "eval " * 20 + "rm x"  # each eval reads its words as a new line
    assert analyze(nested).dynamic_patterns()  # too deep to follow: asked
    numbers = "ls $((" + "(" * 1500 + "1" + ")" * 1500 + "))"
    assert analyze(numbers).dynamic_patterns() == []  # numbers only: no crash, not asked
    variable = "ls $((" + "(" * 1500 + "x" + ")" * 1500 + "))"
    assert analyze(variable).dynamic_patterns()


# ---- the cases through the real checks -------------------------------------

RM_DENIED = {"bash": {"rm *": "deny", "*": "allow"}}
ONLY_LS = {"bash": {"*": "deny", "ls *": "allow"}}


@pytest.mark.parametrize(
    "command",
    [
        "(rm x)",
        "rm\tx",
        "FOO=1 rm x",
        "'rm' x",
        "\\rm x",
        "r\\\nm x",
        "rm${IFS}x",
        "rm  -rf x",
        "/bin/rm x",
        "X=rm; $X f",
        "true && rm x",
        "false || rm x",
        "true; rm x",
        "echo | rm x",
        "echo $(rm x)",
        "echo `rm x`",
        "cat <(rm x)",
        "{ rm x; }",
        "bash -c 'rm x'",
        'sh -c "rm x"',
        "eval 'rm x'",
        "env rm x",
        "command rm x",
        "exec rm x",
        "sudo rm x",
        "xargs rm",
        "find . -exec rm {} +",
        "timeout 5 rm x",
        "{rm,x}",
        "$'\\x72m' x",
        "r{m,} x",
    ],
)
def test_rm_deny_holds(tmp_path: Path, command: str) -> None:
    assert decision(tmp_path, RM_DENIED, command) == "deny"


@pytest.mark.parametrize("command", ["ls <(rm x)", 'ls "`rm x`"', "ls > file", "ls; rm x", "ls | sh"])
def test_only_ls_allowed(tmp_path: Path, command: str) -> None:
    assert decision(tmp_path, ONLY_LS, command) in ("deny", "ask")
    assert decision(tmp_path, ONLY_LS, "ls -la src") == "allow"


@pytest.mark.parametrize("command", ["$(echo rm) x", 'eval "$CMD"', "echo rm x | bash", "X=$(cat f); $X"])
def test_dynamic_commands_are_asked_even_when_allowed(tmp_path: Path, command: str) -> None:
    assert decision(tmp_path, {"bash": "allow"}, command) == "ask"


def test_files_named_by_a_command_follow_read_and_edit_rules(tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "s.txt").write_text("hush")
    (tmp_path / ".env").write_text("KEY=1")
    (tmp_path / "link").symlink_to(tmp_path / "secret" / "s.txt")
    rules = {"read": {"secret/*": "deny"}, "edit": {"secret/*": "deny"}}
    assert decision(tmp_path, rules, "cat secret/s.txt") == "deny"
    assert decision(tmp_path, rules, "cat link") == "deny"  # the link's target is what is read
    assert decision(tmp_path, rules, "cat secret/*") == "deny"
    assert decision(tmp_path, rules, "cat sec*/s.txt") == "deny"  # globs are expanded
    assert decision(tmp_path, rules, "wc < secret/s.txt") == "deny"
    assert decision(tmp_path, rules, "echo x > secret/new.txt") == "deny"
    assert decision(tmp_path, rules, "cat .env") == "ask"  # like ReadFile: .env asks
    assert decision(tmp_path, rules, "source .env") == "ask"
    # A recursive reader reads the folder's files (issue 27, item 6): --exclude skips files
    # named "secret", not the folder; --exclude-dir does.
    assert decision(tmp_path, rules, "grep -r x --exclude=secret .") == "deny"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("x")
    assert decision(tmp_path, rules, "grep -r x docs") == "allow"
    assert decision(tmp_path, rules, "echo secret/none.txt") == "allow"  # no such file: nothing read


def test_agent_catch_all_does_not_weaken_a_config_deny(tmp_path: Path) -> None:
    config = {"bash": {"rm *": "deny", "*": "allow"}, "edit": {"secret/*": "deny"}}
    agent = {"bash": {"*": "ask"}, "edit": "ask"}
    assert decision(tmp_path, config, "rm -rf build", agent) == "deny"
    assert decision(tmp_path, config, "echo x > secret/w.txt", agent) == "deny"
    assert decision(tmp_path, config, "make", agent) == "ask"


async def test_bash_tool_refuses_before_running(tmp_path: Path) -> None:
    (tmp_path / "keep").write_text("x")
    ctx = ruled_context(tmp_path, RM_DENIED, Answer(Decision.allow_once()))
    tool = BashTool()
    for command in ("ls <(rm keep)", "X=rm; $X keep", "rm${IFS}keep", "bash -c 'rm keep'"):
        with pytest.raises(PermissionDenied):
            await tool.run(tool.parse({"command": command}), ctx)
    assert (tmp_path / "keep").exists()
    result = await tool.run(tool.parse({"command": "echo fine"}), ctx)
    assert result.output == "fine"


# ---- property: real bash is the oracle ----------------------------------------------


def _word_forms(target: str) -> st.SearchStrategy[str]:
    """``rm target`` spelled in ways bash reads as running rm."""
    return st.sampled_from(
        [
            f"rm {target}",
            f"'rm' {target}",
            f'"rm" {target}',
            f"\\rm {target}",
            f"r''m {target}",
            f'r""m {target}',
            f"r\\\nm {target}",
            f"rm\t{target}",
            f"rm  -f {target}",
            f"rm${{IFS}}{target}",
            f"X=rm; $X {target}",
            f"X=rm; ${{X}} {target}",
            f"export X=rm; $X {target}",
            f"FOO=1 rm {target}",
            f"$'\\x72m' {target}",
            f"$'rm' {target}",
            f"{{rm,{target}}}",
            f"r{{m,}} {target}",
            f"env rm {target}",
            f"env -u HOME FOO=1 rm {target}",
            f"command rm {target}",
            f"nice -n 1 rm {target}",
            f"timeout 30 rm {target}",
            f"echo {target} | xargs rm",
            f"echo {target} | xargs -n1 rm",
            f"find {target} -maxdepth 0 -exec rm {{}} +",
            f"find {target} -maxdepth 0 -exec rm {{}} \\;",
            f"STUB/rm {target}",
            *_hidden_forms(target),
        ]
    )


def _hidden_forms(target: str) -> list[str]:
    """``rm target`` run by code bash evaluates in a "data" string or through a variable set
    earlier in the line (issue 27, items 1-2). ``EVIL/`` holds an ``ls`` that runs rm and a
    ``BASH_ENV`` file that does."""
    hide = f"a[$(rm {target})]"
    return [
        f"x='{hide}'; ls $((x))",
        f"x='{hide}'; : $[x]",
        f"x='{hide}'; : ${{PWD:x:0}}",
        f"x='{hide}'; : ${{PWD:0:x}}",
        f"x='{hide}'; : \"$((x))\"",
        f"declare -i y='{hide}'",
        f"typeset -i y='{hide}'",
        f"readonly -a r='([$(rm {target})]=1)'",
        f"export -n e='{hide}'; : $((e))",
        f"z='{hide}'; [[ $z -eq 0 ]]",
        f"[[ '{hide}' -eq 0 ]]",
        f"v='{hide}'; ((v))",
        f"v='{hide}'; a[v]=1",
        f"v='{hide}'; a=(); : ${{a[v]}}",
        f"v='{hide}'; for ((i=0;i<v;i++)); do :; done",
        f"let '{hide}'",
        f"read -r x <<< '{hide}'; : $((x))",
        f"printf -v x %s '{hide}'; : $((x))",
        f"for x in '{hide}'; do : $((x)); done",
        f"x='{hide}'; [ -v \"$x\" ]",
        f"x='{hide}'; test -v \"$x\"",
        f"a=(1); x='{hide}'; unset \"$x\"",
        f"x='{hide}'; : ${{!x}}",
        f"x='{hide}'; printf -v \"$x\" y",
        f"x='{hide}'; read \"$x\" <<< 1",
        f"x=$(echo '{hide}'); : $((x))",
        f"export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm {target}'; git x",
        f"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm {target}' git x",
        f"PATH=EVIL:$PATH; ls {target}",
        f"export PATH=EVIL:$PATH; ls {target}",
        f"read -r PATH <<< EVIL:$PATH; ls {target}",
        f"printf -v PATH %s EVIL:$PATH; ls {target}",
        f"for PATH in EVIL:$PATH; do ls {target}; done",
        f"hash -p EVIL/ls ls; ls {target}",
        "export BASH_ENV=EVIL/env.sh; bash -c :",
        "BASH_ENV=EVIL/env.sh bash -c :",
        f"mapfile -t -C 'rm {target}' -c 1 lines <<< x",
        f": ${{PWD#$(rm {target})}}",
        f': "${{PWD%%`rm {target}`}}"',
        f": ${{PWD^^$(rm {target})}}",
        f"y='{hide}'; : ${{PWD#$((y))}}",
        f": `echo \\`rm {target}\\``",
        f": `echo \\$(rm {target})`",
        f": ${{nope:-`rm {target}`}}",
        f': "${{PWD:+`rm {target}`}}"',
        f": ${{PWD/#/`rm {target}`}}",
    ]


_WRAPS = [  # the inner command on lines of its own, so that here-documents still end
    "true && {}",
    "false || {}",
    "true; {}",
    "true\n{}",
    "true | {{\n{}\n}}",
    "(\n{}\n)",
    "{{\n{}\n}}",
    "echo $(\n{}\n)",
    "echo `\n{}\n`",
    'echo "$(\n{}\n)"',
    "cat <(\n{}\n)",
    "if true; then\n{}\nfi",
    "for i in 1; do\n{}\ndone",
    "f() {{\n{}\n}}\nf",
    "bash -c {q}",
    "bash -ec {q}",
    "eval {q}",
    "bash <<< {q}",
    "bash <<'EOF{n}'\n{}\nEOF{n}",
    "trap {q} EXIT",
]


@st.composite
def hidden_rm(draw: st.DrawFn, target: str) -> str:
    command = draw(_word_forms(target))
    for level, wrap in enumerate(draw(st.lists(st.sampled_from(_WRAPS), max_size=3))):
        if ("`" in wrap and "`" in command) or ("trap" in wrap and "trap" in command):
            continue  # backticks do not nest without escapes; an EXIT trap set on exit never runs
        command = wrap.format(command, q=shlex.quote(command), n=level)
    return command


@pytest.fixture(scope="module")
def stub_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with an ``rm`` that only records that it ran (nothing is deleted)."""
    folder = tmp_path_factory.mktemp("stub")
    stub = folder / "rm"
    stub.write_text('#!/bin/sh\necho "rm $*" >> "$RM_LOG"\n')
    stub.chmod(0o755)
    evil = folder / "evil"  # what a repository could hold: an ls that is not ls
    evil.mkdir()
    (evil / "ls").write_text(f'#!/bin/sh\nexec {stub} "$@"\n')
    (evil / "ls").chmod(0o755)
    (evil / "env.sh").write_text(f"{stub} victim.txt\n")
    return folder


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_no_spelling_of_rm_gets_past_a_deny(
    data: st.DataObject, stub_bin: Path, tmp_path: Path
) -> None:
    command = data.draw(hidden_rm("victim.txt"))
    command = command.replace("STUB/", f"{stub_bin}/").replace("EVIL", f"{stub_bin}/evil")
    # The oracle: bash itself, with a recording rm first on PATH.
    log = tmp_path / "rm.log"
    log.unlink(missing_ok=True)
    (tmp_path / "victim.txt").write_text("x")
    env = {**os.environ, "PATH": f"{stub_bin}:{os.environ['PATH']}", "RM_LOG": str(log)}
    subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, timeout=30)
    assert log.exists(), f"the generator made a command that does not run rm: {command!r}"
    assert decision(tmp_path, RM_DENIED, command) in ("deny", "ask"), command
    assert decision(tmp_path, ONLY_LS, command) in ("deny", "ask"), command


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(
        st.sampled_from(
            [
                "rm",
                "-rf",
                "x",
                "'rm x'",
                '"a;b"',
                "a|b",
                "$(ls)",
                "`ls`",
                ">",
                "o",
                "$((x))",
                "a[$(rm x)]",
                "x=1;",
            ]
        ),
        min_size=1,
        max_size=6,
    )
)
def test_property_harmless_mentions_of_rm_stay_allowed(words: list[str], tmp_path: Path) -> None:
    """``echo``/``grep`` arguments that merely mention rm are not commands."""
    quoted = " ".join(shlex.quote(word) for word in words)
    assert decision(tmp_path, RM_DENIED, f"echo {quoted}") == "allow"
    assert decision(tmp_path, RM_DENIED, f"grep -n {quoted} README.md") == "allow"


# ---- issue 27: code hidden in arithmetic, variables that steer a program -------------

ALLOW_ALL = {"bash": "allow"}


@pytest.mark.parametrize(
    "command",
    [
        "x=1; ls",
        "ls $((x))",
        "ls $[x]",
        "ls ${PWD:x:0}",
        "ls ${PWD#$(rm x)}",
        "ls ${PWD%%$((y))}",
        "ls ${PWD,$[y]}",
        "ls ${nope:-`rm x`}",
        "echo ${x: -y} ${x:(y):1}",
        "echo ${a[i]}",
        "echo ${!name}",
        "echo ${x@P}",
        "echo ${x:=v}",
        "((v))",
        "time ((v))",
        "! ((v))",
        "time [[ $z -eq 0 ]]",
        "time b[v]=1",
        "a[v]=1",
        "for ((i=0;i<v;i++)); do ls; done",
        "[[ $z -eq 0 ]]",
        "[[ z -lt 1 ]]",
        "[[ -v x ]]",
        "[ -v x ]",
        "test -v x",
        "let x",
        "declare -i y=x",
        "readonly -a r=(1)",
        "typeset y",
        "local y",
        "export GIT_DIR=x; git status",
        "export PATH",
        "export -f ls",
        "command export -f ls",
        "unset HOME",
        "FOO=1 ls",
        "env PATH=./bin ls",
        "read PATH",
        "IFS= read -r PATH",
        "IFS= ls",
        "IFS= PATH=./bin read -r x",
        "read -a ARR",
        'read "$name"',
        "printf -v IFS %s x",
        "getopts ab OPTIND",
        "mapfile -C cb lines",
        "for PATH in ./bin; do ls; done",
        "select LD_PRELOAD in x; do ls; done",
        "alias ls='ls -la'",
        "shopt -s expand_aliases",
        "set -o posix",
        "set -a",
        "set -k",
        "hash -p ./bin/ls ls",
        "enable -f ./x.so x",
        "source ./env.sh",
        ". ./env.sh",
        "compgen -C ls x",
        "umask 000",
        "command export X=1",
        "cat <<EOF\n$((x))\nEOF",
    ],
)
def test_what_can_run_code_or_steer_a_program_is_asked(tmp_path: Path, command: str) -> None:
    assert decision(tmp_path, ALLOW_ALL, command) == "ask", analyze(command).dynamic_patterns()


@pytest.mark.parametrize(
    "command",
    [
        "x='a[$(rm -rf victim)]'; ls $((x))",
        "declare -i y='a[`rm victim`]'",
        "readonly -a r='([$(rm victim)]=1)'",
        "let 'a[$(rm victim)]'",
        "read -r x <<< 'a[$(rm victim)]'; ls $((x))",
        "ls $((a[$(rm victim)]))",
        "echo ${PWD:$(rm victim):0}",
    ],
)
def test_a_deny_still_sees_rm_hidden_in_arithmetic(tmp_path: Path, command: str) -> None:
    assert decision(tmp_path, RM_DENIED, command) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "ls -la 'a b'",
        "set -euo pipefail; ls",
        "set -e +x -o errexit",
        "echo $((1 + 2 * 0x10))",
        "echo ${x:-d} ${#x} ${x/a/b} ${x%.py} ${a[0]} ${a[@]} ${x:1:2} ${x: -1} ${x:(-2):1}",
        "for f in a b; do echo $f; done",
        "[[ -n $x && $x == y* ]]",
        '[ "$a" -eq 1 ]',
        "read -r -p 'name: ' line",
        'while IFS= read -r line; do echo "$line"; done < f.txt',
        "IFS=, read -ra cols <<< 'a,b'",
        "printf '%s\\n' x",
        "declare -p",
        "export -p",
        "declare -f",
        "command declare -p",
        "echo 'x=1; $((x))' \"a[\\$(rm x)]\"",
        "cd src && ls *.py",
        "shopt -p",
        "hash -r",
    ],
)
def test_plain_lines_stay_allowed(tmp_path: Path, command: str) -> None:
    assert decision(tmp_path, ALLOW_ALL, command) == "allow", analyze(command).dynamic_patterns()


def _plain_only_decision(directory: Path, command: str) -> str:
    """Like ``command_decision`` with ``"*": "allow"``, for an agent whose sandbox is missing."""
    import asyncio

    from etcode.security.sandbox import SandboxPolicy
    from etcode.tools.command_permission import check_command

    asker = Answer()
    ctx = ruled_context(directory, ALLOW_ALL, asker, sandbox=SandboxPolicy(plain_commands_only=True))
    try:
        asyncio.run(check_command(ctx, command))
    except PermissionDenied:
        return "ask" if asker.requests else "deny"
    return "allow"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la src", "allow"),
        ("git status --short && git log -n 3 | cat", "allow"),
        ("grep -rn 'a|b' . 2>/dev/null", "allow"),
        ("ls $(cat f)", "ask"),
        ("ls `cat f`", "ask"),
        ("ls <(cat f)", "ask"),
        ("ls $HOME", "ask"),
        ('ls "$HOME"', "ask"),
        ("git diff *", "ask"),
        ("ls > out.txt", "ask"),
        ("(ls)", "ask"),
        ("ls &", "ask"),
        ("if true; then ls; fi", "ask"),
        ("echo $((1+2))", "ask"),
    ],
)
def test_without_its_sandbox_a_read_only_agent_allows_only_plain_lines(
    tmp_path: Path, command: str, expected: str
) -> None:
    assert _plain_only_decision(tmp_path, command) == expected
    assert decision(tmp_path, ALLOW_ALL, command) == "allow" or command == "ls > out.txt"


def test_a_glob_that_matches_a_file_named_like_an_option_is_asked(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    assert decision(tmp_path, ALLOW_ALL, "git diff *") == "allow"
    (tmp_path / "--output=x").write_text("x")
    assert decision(tmp_path, ALLOW_ALL, "git diff *") == "ask"
    assert decision(tmp_path, ALLOW_ALL, "git diff *.txt") == "allow"


#: How a variable gets a "data" string (issue 27, item 1) …
_SETTERS = [
    "{v}='{p}'; {u}",
    "declare {v}='{p}'; {u}",
    "typeset {v}='{p}'; {u}",
    "export {v}='{p}'; {u}",
    "setter() {{ local {v}='{p}'; {u}; }}; setter",
    "read -r {v} <<< '{p}'; {u}",
    "IFS= read -r {v} <<< '{p}'; {u}",
    "printf -v {v} %s '{p}'; {u}",
    "{v}=$(printf %s '{p}'); {u}",
    "for {v} in '{p}'; do {u}; done",
    "mapfile -t arr <<< '{p}'; {v}=${{arr[0]}}; {u}",
]
#: … and how bash then evaluates it as code.
_USERS = [
    ": $(({v}))",
    ": $[{v}]",
    ": ${{PWD:{v}:0}}",
    ": ${{PWD:0:{v}}}",
    "(({v}))",
    "let {v}",
    "let '{v}+1'",
    "[[ ${v} -eq 0 ]]",
    "[[ {v} -lt 1 ]]",
    "a[{v}]=1",
    "a=(1); : ${{a[{v}]}}",
    "for ((i=0;i<{v};i++)); do :; done",
    "declare -i y={v}",
    'test -v "${v}"',
    '[ -v "${v}" ]',
    "[[ -v ${v} ]]",
    ": ${{!{v}}}",
    'printf -v "${v}" x',
    'read "${v}" <<< 1',
    'a=(1); unset "${v}"',
    ': "$(({v}))"',
    "echo $(({v})) >/dev/null",
    "case 1 in $(({v}))) ;; esac",
    ": ${{{v}:+$(({v}))}}",
    "a=(1); : ${{a[@]:{v}}}",
    "b=({v}); : $((b[0]))",
    "user() {{ local -i n={v}; }}; user",
    "time (({v}))",
    "! (({v}))",
    "time [[ ${v} -eq 0 ]]",
    "time b[{v}]=1",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    setter=st.sampled_from(_SETTERS),
    user=st.sampled_from(_USERS),
    payload=st.sampled_from(["a[$(rm victim.txt)]", "a[`rm victim.txt`]", "a[$(STUB/rm victim.txt)]"]),
    name=st.sampled_from(["x", "data", "n1", "Y"]),
    wraps=st.lists(st.sampled_from(_WRAPS[:16]), max_size=2),
)
def test_property_code_hidden_in_a_variable_is_always_asked(
    setter: str, user: str, payload: str, name: str, wraps: list[str], stub_bin: Path, tmp_path: Path
) -> None:
    """Whatever sets the variable and whatever evaluates it, bash runs the ``rm`` hidden in
    its value (real bash is the oracle, with a recording rm); the line is never allowed, not
    even under ``"*": "allow"``."""
    command = setter.format(v=name, p=payload, u=user.format(v=name))
    for level, wrap in enumerate(wraps):
        if "`" in wrap and "`" in command:
            continue
        command = wrap.format(command, q=shlex.quote(command), n=level)
    command = command.replace("STUB/", f"{stub_bin}/")
    log = tmp_path / "rm.log"
    log.unlink(missing_ok=True)
    (tmp_path / "victim.txt").write_text("x")
    env = {**os.environ, "PATH": f"{stub_bin}:{os.environ['PATH']}", "RM_LOG": str(log)}
    subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, timeout=30)
    assert log.exists(), f"the generator made a command that does not run rm: {command!r}"
    assert decision(tmp_path, ALLOW_ALL, command) == "ask", command
    assert decision(tmp_path, RM_DENIED, command) in ("deny", "ask"), command
