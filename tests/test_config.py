"""Config: JSONC, discovery and layer order, merging, substitution, schema errors, paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from etcode.config.jsonc import parse_jsonc, strip_jsonc
from etcode.config.loader import config_files, load_config, load_file
from etcode.util.errors import ConfigError
from etcode.util.paths import cache_dir, config_dir, data_dir, find_up_all, state_dir

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the real user config; no ETCODE_* leaking in from the outside."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("ETCODE_"):
            monkeypatch.delenv(name)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A worktree with a nested working directory ``repo/pkg/sub``."""
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    return root


# --- JSONC ---------------------------------------------------------------------------


def test_jsonc_comments_and_trailing_commas() -> None:
    text = """
    // leading comment
    {
      "a": 1, // end of line
      /* block
         comment */ "b": [1, 2, 3,],
      "c": {"d": true,},
    }
    """
    assert parse_jsonc(text, "x.json") == {"a": 1, "b": [1, 2, 3], "c": {"d": True}}


def test_jsonc_leaves_strings_alone() -> None:
    text = r'{"url": "http://x.test/a//b", "glob": "src/*/x", "c": "/* not */", "q": "a\"//b",}'
    assert parse_jsonc(text, "x.json") == {
        "url": "http://x.test/a//b",
        "glob": "src/*/x",
        "c": "/* not */",
        "q": 'a"//b',
    }


def test_jsonc_keeps_positions_and_empty_is_object() -> None:
    text = '{\n  /* a\n  b */ "x": 1 // c\n}'
    stripped = strip_jsonc(text)
    assert len(stripped) == len(text)
    assert stripped.count("\n") == text.count("\n")
    assert parse_jsonc("  // only a comment\n", "x.json") == {}
    assert parse_jsonc('\ufeff{"a": 1}', "x.json") == {"a": 1}


@pytest.mark.parametrize("text", ["[,]", "{,}", '{"a": 1,,}'])
def test_jsonc_lone_commas_are_still_errors(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid JSON"):
        parse_jsonc(text, "x.json")


def test_malformed_json_names_file_line_and_column(repo: Path) -> None:
    path = write(
        repo / "etcode.json",
        '// a comment on line 1\n{\n  /* two\n  lines */ "model": "a/b"\n  "max_steps": 3\n}\n',
    )
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    message = str(info.value)
    assert message == f"{path}:5:3: invalid JSON: Expecting ',' delimiter"
    assert "\n" not in message


def test_unterminated_block_comment_position() -> None:
    with pytest.raises(ConfigError) as info:
        parse_jsonc('{\n  "a": 1 /* oops\n}', "c.json")
    assert str(info.value) == "c.json:2:10: invalid JSON: unterminated /* comment"


def test_top_level_must_be_an_object(repo: Path) -> None:
    path = write(repo / "etcode.json", "[1, 2]")
    with pytest.raises(ConfigError, match=f"^{path}: expected a JSON object"):
        load_config(repo, repo)


# --- layers --------------------------------------------------------------------------


def test_layer_order(tmp_path: Path, repo: Path) -> None:
    global_file = write(
        tmp_path / "xdg" / "etcode" / "etcode.json",
        '{"model": "g/m", "small_model": "g/s", "max_steps": 1, "timeout": 9, "default_agent": "g"}',
    )
    outer = write(repo / "etcode.json", '{"model": "o/m", "small_model": "o/s", "max_steps": 2}')
    inner = write(repo / "pkg" / "sub" / "etcode.json", '{"model": "i/m", "small_model": "i/s"}')
    explicit = write(tmp_path / "elsewhere" / "custom.json", '{"model": "c/m", "default_agent": "c"}')
    cwd = repo / "pkg" / "sub"

    base = env(ETCODE_CONFIG=str(explicit))
    cfg = load_config(cwd, repo, env=base)
    assert (cfg.model, cfg.small_model, cfg.max_steps, cfg.timeout) == ("c/m", "i/s", 2, 9)
    assert cfg.default_agent == "c"
    assert cfg.sources == [global_file, outer, inner, explicit]
    assert cfg.origin("small_model") == str(inner)
    assert cfg.origin("timeout") == str(global_file)

    cfg = load_config(cwd, repo, env={**base, "ETCODE_MODEL": "e/m", "ETCODE_MAX_STEPS": "7"})
    assert (cfg.model, cfg.max_steps) == ("e/m", 7)
    assert cfg.origin("model") == "ETCODE_MODEL"

    cfg = load_config(
        cwd,
        repo,
        env={**base, "ETCODE_MODEL": "e/m", "ETCODE_AGENT": "plan"},
        flags={"model": "f/m", "max_steps": 5, "small_model": None, "agent": "review"},
    )
    assert (cfg.model, cfg.max_steps, cfg.small_model) == ("f/m", 5, "i/s")
    assert cfg.default_agent == "review"
    assert cfg.origin("model") == "command line"


def test_nothing_above_the_worktree_is_read(tmp_path: Path, repo: Path) -> None:
    write(tmp_path / "etcode.json", "{ this is not json")
    inside = write(repo / "etcode.json", '{"model": "a/b"}')
    cfg = load_config(repo / "pkg" / "sub", repo)
    assert cfg.model == "a/b"
    assert cfg.sources == [inside]


def test_defaults_without_any_file(repo: Path) -> None:
    cfg = load_config(repo, repo)
    assert cfg.sources == []
    assert cfg.model is None
    assert cfg.max_steps == 50
    assert cfg.instructions_compat is True
    assert cfg.compaction.auto is True
    assert cfg.retry.max_retries == 2
    assert cfg.debug is False


def test_jsonc_file_and_json_file_in_one_folder(repo: Path) -> None:
    plain = write(repo / "etcode.json", '{"model": "a/json", "max_steps": 3}')
    commented = write(repo / "etcode.jsonc", '// c\n{"model": "a/jsonc",}')
    cfg = load_config(repo, repo)
    assert (cfg.model, cfg.max_steps) == ("a/jsonc", 3)
    assert cfg.sources == [plain, commented]


def test_global_jsonc_is_read(tmp_path: Path, repo: Path) -> None:
    write(tmp_path / "xdg" / "etcode" / "etcode.jsonc", '{"model": "g/m", /* c */}')
    assert load_config(repo, repo).model == "g/m"


def test_objects_deep_merge(tmp_path: Path, repo: Path) -> None:
    write(
        tmp_path / "xdg" / "etcode" / "etcode.json",
        json.dumps(
            {
                "agent": {"rev": {"prompt": "p", "tools": {"Bash": False, "Edit": False}}},
                "compaction": {"threshold": 0.8},
                "instructions": ["~/rules.md", "shared.md"],
            }
        ),
    )
    write(
        repo / "etcode.json",
        json.dumps(
            {
                "agent": {"rev": {"steps": 3, "tools": {"Edit": True}}},
                "compaction": {"auto": False},
                "instructions": ["shared.md", "docs/*.md"],
            }
        ),
    )
    cfg = load_config(repo, repo)
    rev = cfg.agent["rev"]
    assert (rev.prompt, rev.steps, rev.tools) == ("p", 3, {"Bash": False, "Edit": True})
    assert (cfg.compaction.auto, cfg.compaction.threshold) == (False, 0.8)
    assert cfg.instructions == ["~/rules.md", "shared.md", "docs/*.md"]


def test_provider_list_merges_by_id(tmp_path: Path, repo: Path) -> None:
    write(
        tmp_path / "xdg" / "etcode" / "etcode.json",
        json.dumps(
            {
                "provider": [
                    {"id": "anthropic", "apiKey": "global-key", "model": "claude-a"},
                    {"id": "local", "type": "openai", "baseURL": "http://h/v1", "headers": {"A": "1"}},
                ]
            }
        ),
    )
    write(
        repo / "etcode.json",
        json.dumps(
            {
                "provider": [
                    {"id": "local", "model": "qwen", "headers": {"B": "2"}},
                    {"id": "groq", "model": "llama"},
                ]
            }
        ),
    )
    cfg = load_config(repo, repo)
    assert [p.id for p in cfg.provider] == ["anthropic", "local", "groq"]
    local = cfg.provider_entry("local")
    assert local is not None
    assert (local.type, local.base_url, local.model) == ("openai", "http://h/v1", "qwen")
    assert local.headers == {"A": "1", "B": "2"}
    assert cfg.provider_entry("anthropic").api_key == "global-key"  # type: ignore[union-attr]


def test_duplicate_provider_id_in_one_file(repo: Path) -> None:
    path = write(repo / "etcode.json", '{"provider": [{"id": "a", "baseURL": "u"}, {"id": "a"}]}')
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    assert str(info.value) == f'{path}: provider[1].id: duplicate provider id "a"'


def test_missing_etcode_config_file_is_named(tmp_path: Path, repo: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo, env=env(ETCODE_CONFIG=str(missing)))
    assert "ETCODE_CONFIG" in str(info.value)
    assert str(missing) in str(info.value)


def test_etcode_config_already_found_is_read_once(repo: Path) -> None:
    path = write(repo / "etcode.json", '{"model": "a/b"}')
    assert config_files(repo, repo, env(ETCODE_CONFIG=str(path))) == [path]


def test_debug_from_env_and_flags(repo: Path) -> None:
    assert load_config(repo, repo, env=env(ETCODE_DEBUG="1")).debug is True
    assert load_config(repo, repo, env=env(ETCODE_DEBUG="false")).debug is False
    assert load_config(repo, repo, flags={"debug": True}).debug is True
    with pytest.raises(ConfigError, match="^ETCODE_DEBUG: "):
        load_config(repo, repo, env=env(ETCODE_DEBUG="maybe"))


def test_env_type_error_names_the_variable(repo: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo, env=env(ETCODE_MAX_STEPS="lots"))
    assert str(info.value).startswith("ETCODE_MAX_STEPS: max_steps: Input should be a valid integer")


def test_small_model_from_env(repo: Path) -> None:
    assert load_config(repo, repo, env=env(ETCODE_SMALL_MODEL="a/small")).small_model == "a/small"


# --- substitution --------------------------------------------------------------------


def test_env_and_file_substitution(tmp_path: Path, repo: Path) -> None:
    write(repo / "secrets" / "key.txt", "  file-key\n")
    write(tmp_path / "home" / "prompt.md", "Be brief.\n")
    write(
        repo / "etcode.json",
        json.dumps(
            {
                "provider": [
                    {
                        "id": "local",
                        "baseURL": "http://{env:HOST_FOR_TEST}/v1",
                        "apiKey": "{file:secrets/key.txt}",
                        "headers": {"X-Unset": "[{env:SURELY_NOT_SET_VAR}]"},
                    }
                ],
                "agent": {"a": {"prompt": "{file:~/prompt.md}"}},
            }
        ),
    )
    cfg = load_config(repo, repo, env=env(HOST_FOR_TEST="h:1"))
    local = cfg.provider[0]
    assert (local.base_url, local.api_key) == ("http://h:1/v1", "file-key")
    assert local.headers == {"X-Unset": "[]"}
    assert cfg.agent["a"].prompt == "Be brief."


def test_file_substitution_is_relative_to_the_config_file(tmp_path: Path, repo: Path) -> None:
    write(tmp_path / "xdg" / "etcode" / "prompt.txt", "global prompt")
    write(tmp_path / "xdg" / "etcode" / "etcode.json", '{"agent": {"a": {"prompt": "{file:prompt.txt}"}}}')
    assert load_config(repo, repo).agent["a"].prompt == "global prompt"


def test_missing_substituted_file_names_config_and_key(repo: Path) -> None:
    path = write(repo / "etcode.json", '{"provider": [{"id": "x", "apiKey": "{file:./missing.key}"}]}')
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    message = str(info.value)
    assert message.startswith(f"{path}: provider[0].apiKey: {{file:./missing.key}}: file not found")
    assert "\n" not in message


# --- schema errors -------------------------------------------------------------------


def test_unknown_top_level_key_suggests(repo: Path) -> None:
    path = write(repo / "etcode.json", '{"modle": "a/b"}')
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    assert str(info.value) == f'{path}: unknown key "modle" (did you mean "model"?)'


def test_unknown_nested_key_suggests(repo: Path) -> None:
    path = write(repo / "etcode.json", '{"provider": [{"id": "x", "baseUrl": "http://h"}]}')
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    assert str(info.value) == f'{path}: unknown key "provider[0].baseUrl" (did you mean "baseURL"?)'


def test_unknown_key_without_close_match(repo: Path) -> None:
    path = write(repo / "etcode.json", '{"zzzzzz": 1}')
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    assert str(info.value) == f'{path}: unknown key "zzzzzz"'


def test_type_error_names_file_and_key(tmp_path: Path, repo: Path) -> None:
    write(tmp_path / "xdg" / "etcode" / "etcode.json", '{"model": "a/b"}')
    path = write(repo / "etcode.json", '{"max_steps": "many", "agent": {"r": {"mode": "boss"}}}')
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    assert str(info.value) == (
        f"{path}: agent.r.mode: Input should be 'primary', 'subagent' or 'all' (and 1 more problem)"
    )


def test_type_error_single(repo: Path) -> None:
    path = write(repo / "etcode.json", '{"max_steps": "many"}')
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    assert str(info.value) == (
        f"{path}: max_steps: Input should be a valid integer, unable to parse string as an integer"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"provider": [{"id": "a", "type": "grpc"}]},
            "provider[0].type: Input should be 'openai' or 'anthropic'",
        ),
        ({"provider": [{"id": "a/b"}]}, 'provider[0].id: a provider id must be non-empty, without "/"'),
        ({"compaction": {"threshold": 2}}, "compaction.threshold: Input should be less than or equal to 1"),
        ({"permission": 3}, 'permission: expected an object of rules or "allow"'),
        ({"provider": [{"baseURL": "x"}]}, "provider[0].id: Field required"),
    ],
)
def test_schema_messages(repo: Path, data: dict, expected: str) -> None:
    path = write(repo / "etcode.json", json.dumps(data))
    with pytest.raises(ConfigError) as info:
        load_config(repo, repo)
    assert str(info.value).startswith(f"{path}: {expected}")


def test_snake_case_names_are_accepted_and_camel_case_kept(repo: Path) -> None:
    write(
        repo / "etcode.json",
        '{"$schema": "x", "provider": [{"id": "l", "base_url": "http://a/v1", "apiKey": "k"}]}',
    )
    write(repo / "pkg" / "etcode.json", '{"provider": [{"id": "l", "baseURL": "http://b/v1"}]}')
    cfg = load_config(repo / "pkg", repo)
    assert cfg.provider[0].base_url == "http://b/v1"
    assert cfg.schema_ == "x"


def test_example_file_loads(repo: Path) -> None:
    example = REPO_ROOT / "etcode.example.json"
    data = load_file(example)
    assert data["model"] and data["provider"]
    (repo / "etcode.json").write_text(example.read_text(encoding="utf-8"), encoding="utf-8")
    cfg = load_config(repo, repo)
    assert cfg.provider_entry("local") is not None
    assert cfg.agent["reviewer"].steps == 20


def test_example_file_comments_every_key() -> None:
    lines = (REPO_ROOT / "etcode.example.json").read_text(encoding="utf-8").splitlines()
    from etcode.config.schema import Config

    keys = {field.alias or name for name, field in Config.model_fields.items()}  # every top-level key
    keys |= {"baseURL", "apiKey", "models", "headers", "options", "limit", "cost"}
    text = "\n".join(lines)
    for key in keys:
        assert f'"{key}"' in text, key


def test_config_package_import_is_light() -> None:
    code = "import sys, etcode.config; assert 'pydantic' not in sys.modules, 'pydantic imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


# --- paths ---------------------------------------------------------------------------


def test_xdg_dirs(tmp_path: Path) -> None:
    custom = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "c"),
        "XDG_DATA_HOME": str(tmp_path / "d"),
        "XDG_CACHE_HOME": str(tmp_path / "k"),
        "XDG_STATE_HOME": str(tmp_path / "s"),
    }
    assert config_dir(custom) == tmp_path / "c" / "etcode"
    assert data_dir(custom) == tmp_path / "d" / "etcode"
    assert cache_dir(custom) == tmp_path / "k" / "etcode"
    assert state_dir(custom) == tmp_path / "s" / "etcode"
    home_only = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": "relative/ignored"}
    assert config_dir(home_only) == tmp_path / ".config" / "etcode"
    assert data_dir(home_only) == tmp_path / ".local" / "share" / "etcode"
    assert cache_dir(home_only) == tmp_path / ".cache" / "etcode"
    assert state_dir(home_only) == tmp_path / ".local" / "state" / "etcode"


def test_xdg_dirs_default_to_os_environ(tmp_path: Path) -> None:
    assert config_dir() == tmp_path / "xdg" / "etcode"


def test_find_up_all(tmp_path: Path) -> None:
    top = tmp_path / "top"
    deep = top / "a" / "b"
    deep.mkdir(parents=True)
    for folder in (tmp_path, top, top / "a", deep):
        (folder / "AGENTS.md").write_text("x")
    assert find_up_all("AGENTS.md", deep, top) == [
        deep / "AGENTS.md",
        top / "a" / "AGENTS.md",
        top / "AGENTS.md",
    ]
    assert find_up_all("AGENTS.md", deep, deep) == [deep / "AGENTS.md"]
    assert find_up_all("missing.md", deep, top) == []
    # a stop that is not an ancestor: only start is searched
    assert find_up_all("AGENTS.md", deep, tmp_path / "elsewhere") == [deep / "AGENTS.md"]
