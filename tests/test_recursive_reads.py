"""The ``read`` rules against commands that read whole folders or spell a path through
``$PWD`` (issue 27, item 6, layer 1), decided by the real Bash checks (the shell parser,
the rules, the files on disk), and the secret values the redactor takes from a project's
files (layer 2). The same cases through ``etcode run``: tests/test_secret_files.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.security import recursive_reads
from etcode.security.secret_values import project_secret_values, secret_values
from tests.permission_support import command_decision


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / ".env").write_text("NOTE=x\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x\n")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / ".env.local").write_text("TOKEN=x\n")
    (tmp_path / "cfg" / ".env.example").write_text("TOKEN=x\n")
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        'cat "$PWD/.env"', "cat ${PWD}/.env", "cat $PWD/cfg/../.env", "cat ./.env", "cat src/../.env",
        "grep -r x .", "grep -R x", "grep -rl x cfg", "grep --recursive x .", "grep --dereference-rec x .",
        "grep -d recurse x .", "egrep -ri x .", "rgrep x", "rg -uu x", "rg --hidden x cfg", "rg -. x",
        "ag -u x", "git grep --untracked x", "git -C . grep --no-index x", "git diff --no-index cfg src",
        "find . -exec cat {} +", "find cfg -type f -execdir cat {} ;", "find . -type f | xargs cat", "find . -name '.env*' -exec cat {} +",
        "tar cf out.tar .", "tar -czf out.tgz cfg", "tar --create -f - .", "cp -r cfg /tmp/x",
        "cp -a . ../copy", "zip -r out.zip .", "rsync -av cfg/ host:cfg/", "scp -r . host:",
        "diff -r cfg src", "sudo grep -r x .", "grep -r x \"$PWD\"", 'cat "$PWD"/.env',
        "cd cfg && cat .env.local", "cd $PWD/cfg; grep x .env.local",
        "grep -r -- x cfg", "grep -r -e x -- cfg", "grep -r --regexp=x cfg", "grep -rex cfg",
        "grep -r --file pats cfg",
        # git grep's option values are not folders: the whole project is searched.
        "git grep --untracked -e sk-", "git grep --untracked -ie sk-", "git grep --untracked -esk-",
        "git grep --untracked --regexp sk-", "git grep --untracked -f pats", "git grep --untracked -A 3 x",
        "git grep --untracked --max-depth 3 x", "git grep --untracked -e a --and \\( -e b \\) cfg",
        "git grep --untracked -e x -- cfg", "git grep --no-index -e x",
        "git grep --untracked -e = '-Osort -m' cfg src", "git grep --untracked -e sk- -Ovim cfg src",
    ],
)  # fmt: skip
def test_commands_that_read_a_guarded_file_ask(tree: Path, command: str) -> None:
    assert command_decision(tree, None, command) == "ask", command


@pytest.mark.parametrize(
    "command",
    [
        "grep -r x src", "grep x src/app.py", "rg x", "rg x cfg", "find . -name '*.py' -exec cat {} +",
        "find . -type f", "find . -name '*.py' | xargs cat", "grep -r --include='*.py' x .", "grep -r --exclude-dir=cfg --exclude='*env' x .",
        "tar cf out.tar src", "tar tf out.tar", "cp -r src ../copy", "cp -r src cfg", "ls -R", "git grep x",
        "zip out.zip src/app.py", "cat cfg/.env.example", 'cat "$PWD/src/app.py"', "git diff --text", "cd src && cat app.py",
        "grep -r -- -x src", "grep -r --regexp x src", "grep -rex src", "grep -r --exclude-dir cfg --exclude '*env' x .",
        "git grep --untracked -e x src", "git grep --untracked -A 3 x src", "git grep --untracked -e x -- src",
        "git grep --untracked x -- src", "git grep --untracked -e a --or \\( -e b \\) src",
        "git grep --untracked --max-depth=3 -e x src",
    ],
)  # fmt: skip
def test_commands_that_read_no_guarded_file_are_allowed(tree: Path, command: str) -> None:
    assert command_decision(tree, None, command) == "allow", command


def test_deny_rules_see_the_files_of_a_folder_read_whole(tree: Path) -> None:
    (tree / "secret").mkdir()
    (tree / "secret" / "k.txt").write_text("x")
    rules = {"read": {"secret/*": "deny"}}
    assert command_decision(tree, rules, "grep -r x secret") == "deny"
    assert command_decision(tree, rules, "grep -r x --exclude='*env' .") == "deny"
    assert command_decision(tree, rules, "rg x") == "deny"  # not hidden: ripgrep reads it


def test_a_link_to_a_guarded_file_inside_the_folder_asks(tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "k.txt").write_text("x")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "k").symlink_to(tmp_path / "secret" / "k.txt")
    assert command_decision(tmp_path, {"read": {"secret/*": "deny"}}, "grep -r x docs") == "deny"


def test_the_walk_is_bounded_and_breadth_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bound nothing more is looked at; the shallow files come first, so a
    ``.env`` beside the project's top folders is always seen."""
    monkeypatch.setattr(recursive_reads, "MAX_WALK_ENTRIES", 30)
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    for index in range(40):
        (tmp_path / "a" / f"f{index:02}.txt").write_text("x")
    (deep / ".env").write_text("x")
    assert command_decision(tmp_path, None, "grep -r x .") == "allow"  # beyond the bound
    (tmp_path / ".env").write_text("x")
    assert command_decision(tmp_path, None, "grep -r x .") == "ask"


def test_secret_values_are_taken_by_key_and_length() -> None:
    text = (
        "# comment\nOPENAI_API_KEY=sk-abcdef123456\nPORT=3000\nDEBUG=true\nSECRET_KEY=changeme\n"
        'export GH_TOKEN="ghp_quoted value"  # note\nDB_PASSWORD=short\n'
        "DATABASE_URL=postgres://app:pw-12345678@db/app\nHOMEPAGE_URL=https://example.com/a\n"
        'PRIVATE_KEY="-----BEGIN KEY-----\nMIIEabcdefghijklmnop\n-----END KEY-----"\n'
        '"apiKey": "json-secret-123456",\npassword: yaml-pass-1234\nPLAIN_TOKEN=tok-4Hq8Wd2Lm7 # x\n'
    )
    assert secret_values(text) == {
        "sk-abcdef123456",
        "ghp_quoted value",
        "postgres://app:pw-12345678@db/app",
        "pw-12345678",
        "-----BEGIN KEY-----\nMIIEabcdefghijklmnop\n-----END KEY-----",
        "MIIEabcdefghijklmnop",
        "json-secret-123456",
        "yaml-pass-1234",
        "tok-4Hq8Wd2Lm7",
    }


def test_project_secret_files_are_found_within_bounds(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("API_KEY=top-level-123\n")
    (tmp_path / ".env.example").write_text("API_KEY=placeholder-123\n")
    (tmp_path / "node_modules" / "pkg").mkdir(parents=True)
    (tmp_path / "node_modules" / "pkg" / ".env").write_text("API_KEY=dependency-123\n")
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / ".envrc").write_text("export AWS_SECRET_ACCESS_KEY=nested-123\n")
    (tmp_path / "listed.cfg").write_text("SERVICE_TOKEN=listed-12345\n")
    found = project_secret_values(tmp_path, ["listed.cfg", "missing.cfg"])
    assert found == {"top-level-123", "nested-123", "listed-12345"}
