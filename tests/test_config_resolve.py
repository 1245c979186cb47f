"""resolve_model: "provider/model" references → ProviderSpec."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from etcode.config.loader import load_config
from etcode.config.resolve import NO_MODEL, detect_model, resolve_model, retry_config
from etcode.config.schema import Config
from etcode.provider.spec import KNOWN_PROVIDERS
from etcode.util.errors import ConfigError


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("ETCODE_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name)


def cfg(**data: Any) -> Config:
    return Config.model_validate(data)


def test_explicit_ref_for_well_known_provider() -> None:
    spec = resolve_model(cfg(model="openai/gpt-4.1"), "anthropic/claude-x", env={"ANTHROPIC_API_KEY": "k"})
    assert (spec.id, spec.type, spec.model) == ("anthropic", "anthropic", "claude-x")
    assert spec.base_url == "https://api.anthropic.com"
    assert spec.api_key == "k"
    assert spec.full_id == "anthropic/claude-x"
    assert spec.timeout == 600.0


def test_model_id_may_contain_slashes() -> None:
    spec = resolve_model(cfg(), "openrouter/anthropic/claude-sonnet-4", env={"OPENROUTER_API_KEY": "r"})
    assert (spec.id, spec.model, spec.type) == ("openrouter", "anthropic/claude-sonnet-4", "openai")
    assert spec.base_url == KNOWN_PROVIDERS["openrouter"].base_url


def test_config_model_is_the_default() -> None:
    spec = resolve_model(cfg(model="openai/gpt-4o-mini"), env={"OPENAI_API_KEY": "o"})
    assert (spec.id, spec.model, spec.api_key) == ("openai", "gpt-4o-mini", "o")


def test_first_provider_with_a_model_is_next() -> None:
    config = cfg(
        provider=[
            {"id": "anthropic", "apiKey": "a"},
            {"id": "local", "baseURL": "http://127.0.0.1:9/v1", "model": "qwen"},
        ]
    )
    spec = resolve_model(config, env={"ANTHROPIC_API_KEY": "x"})
    assert (spec.id, spec.model, spec.type, spec.api_key) == ("local", "qwen", "openai", None)


def test_bare_provider_id_uses_its_model() -> None:
    config = cfg(provider=[{"id": "local", "baseURL": "http://h/v1/", "apiKey": "x", "model": "qwen2.5"}])
    spec = resolve_model(config, "local")
    assert (spec.id, spec.model, spec.base_url) == ("local", "qwen2.5", "http://h/v1")
    # a well-known id without a configured model gets the built-in default
    assert resolve_model(cfg(), "openai", env={"OPENAI_API_KEY": "o"}).model == "gpt-4.1"


def test_bare_provider_without_model_is_an_error() -> None:
    config = cfg(provider=[{"id": "local", "baseURL": "http://h/v1"}])
    with pytest.raises(ConfigError, match='provider "local" has no default "model"'):
        resolve_model(config, "local")


@pytest.mark.parametrize(
    ("bare", "provider"),
    [
        ("gpt-4o-mini", "openai"),
        ("chatgpt-4o-latest", "openai"),
        ("o3-mini", "openai"),
        ("o1", "openai"),
        ("claude-sonnet-4-20250514", "anthropic"),
        ("gemini-2.5-flash", "gemini"),
    ],
)
def test_a_bare_model_id_resolves_by_its_family(bare: str, provider: str) -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}
    spec = resolve_model(cfg(), bare, env=env)
    assert (spec.id, spec.model) == (provider, bare)


def test_a_bare_model_id_of_no_known_family_is_an_error() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model(cfg(), "llama3")
    assert str(info.value) == 'model "llama3" must look like "provider/model"'
    with pytest.raises(ConfigError, match='must look like "provider/model"'):
        resolve_model(cfg(), "o5x")
    with pytest.raises(ConfigError, match='must look like "provider/model"'):
        resolve_model(cfg(), "anthropic/")


def test_well_known_provider_reads_its_env_key() -> None:
    spec = resolve_model(cfg(), "gemini/gemini-2.5-pro", env={"GOOGLE_API_KEY": "g"})
    assert (spec.type, spec.api_key) == ("openai", "g")
    assert spec.base_url == KNOWN_PROVIDERS["gemini"].base_url


def test_base_url_env_override_for_well_known_ids() -> None:
    env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:5/"}
    assert resolve_model(cfg(), "anthropic/c", env=env).base_url == "http://127.0.0.1:5"
    config = cfg(provider=[{"id": "anthropic", "baseURL": "http://configured"}])
    assert resolve_model(config, "anthropic/c", env=env).base_url == "http://configured"


def test_configured_key_wins_over_env_and_empty_key_falls_back() -> None:
    config = cfg(provider=[{"id": "openai", "apiKey": "from-config"}])
    assert resolve_model(config, "openai/gpt-4.1", env={"OPENAI_API_KEY": "e"}).api_key == "from-config"
    config = cfg(provider=[{"id": "openai", "apiKey": ""}])  # "{env:UNSET}" substituted
    assert resolve_model(config, "openai/gpt-4.1", env={"OPENAI_API_KEY": "e"}).api_key == "e"


def test_unknown_provider_error() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model(cfg(), "foo/bar")
    message = str(info.value)
    assert message.startswith(
        'unknown provider "foo" in model "foo/bar": configure it in etcode.json "provider" '
        'with "type" and "baseURL" (known: anthropic, openai'
    )
    assert "\n" not in message


def test_unknown_provider_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "etcode.json"
    path.write_text('{"model": "foo/bar"}')
    config = load_config(tmp_path, tmp_path)
    with pytest.raises(ConfigError, match=f'^{path}: unknown provider "foo"'):
        resolve_model(config, env={})


def test_configured_custom_provider() -> None:
    config = cfg(
        provider=[
            {
                "id": "vllm",
                "baseURL": "http://10.0.0.2:8000/v1/",
                "apiKey": "secret",
                "headers": {"X-A": "1"},
                "options": {"seed": 1},
                "timeout": 30000,
                "models": {"big/model": {"limit": {"context": 32000, "output": 4096}, "name": "Big"}},
            }
        ]
    )
    spec = resolve_model(config, "vllm/big/model")
    assert (spec.type, spec.base_url, spec.api_key) == ("openai", "http://10.0.0.2:8000/v1", "secret")
    assert (spec.headers, spec.options, spec.timeout) == ({"X-A": "1"}, {"seed": 1}, 30.0)
    assert spec.model_info == {"name": "Big", "limit": {"context": 32000, "output": 4096}}
    other = resolve_model(config, "vllm/anything-else")  # any model id is accepted
    assert (other.model, other.model_info) == ("anything-else", {})


def test_custom_anthropic_compatible_provider() -> None:
    config = cfg(provider=[{"id": "proxy", "type": "anthropic", "baseURL": "https://proxy.test/"}])
    spec = resolve_model(config, "proxy/claude-x")
    assert (spec.type, spec.base_url, spec.api_key) == ("anthropic", "https://proxy.test", None)


def test_custom_provider_needs_base_url(tmp_path: Path) -> None:
    path = tmp_path / "etcode.json"
    path.write_text(json.dumps({"provider": [{"id": "mine", "model": "m"}]}))
    config = load_config(tmp_path, tmp_path)
    with pytest.raises(ConfigError) as info:
        resolve_model(config, env={})
    assert str(info.value) == (
        f'{path}: provider "mine" needs "baseURL" (and "type": "openai" or "anthropic")'
    )


def test_missing_key_error() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model(cfg(), "anthropic/claude-x", env={})
    assert str(info.value) == (
        'No API key for provider "anthropic": set ANTHROPIC_API_KEY or "apiKey" in etcode.json'
    )


def test_local_providers_need_no_key() -> None:
    spec = resolve_model(cfg(), "ollama/qwen2.5-coder", env={})
    assert (spec.api_key, spec.base_url) == (None, "http://127.0.0.1:11434/v1")
    # a well-known id pointed at another server (a local proxy) does not demand the key
    config = cfg(provider=[{"id": "openai", "baseURL": "http://127.0.0.1:8000/v1"}])
    assert resolve_model(config, "openai/gpt-4.1", env={}).base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({"ANTHROPIC_API_KEY": "a"}, "anthropic/claude-sonnet-4-20250514"),
        ({"OPENAI_API_KEY": "o"}, "openai/gpt-4.1"),
        ({"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a"}, "anthropic/claude-sonnet-4-20250514"),
        ({"GROQ_API_KEY": "g", "DEEPSEEK_API_KEY": "d"}, "deepseek/deepseek-chat"),
        ({"GROQ_API_KEY": "g"}, "groq/llama-3.3-70b-versatile"),
        ({"ANTHROPIC_API_KEY": ""}, None),
    ],
)
def test_auto_detect_from_env(keys: dict[str, str], expected: str | None) -> None:
    assert detect_model(keys) == expected


def test_auto_detect_resolves() -> None:
    spec = resolve_model(cfg(), env={"OPENAI_API_KEY": "o"})
    assert (spec.full_id, spec.api_key) == ("openai/gpt-4.1", "o")


def test_auto_detect_uses_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    assert resolve_model(cfg()).full_id == "anthropic/claude-sonnet-4-20250514"


def test_nothing_configured() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model(cfg(), env={})
    assert str(info.value) == NO_MODEL
    assert "\n" not in NO_MODEL
    assert "ANTHROPIC_API_KEY" in NO_MODEL and "etcode.json" in NO_MODEL
    # An installed wheel has no example file: the line itself says what to write, a local server too.
    assert "example" not in NO_MODEL and "llama.cpp" in NO_MODEL
    hint = json.loads(NO_MODEL[NO_MODEL.index("{") :])
    assert hint["model"].startswith(hint["provider"][0]["id"] + "/") and hint["provider"][0]["baseURL"]


def test_api_overrides() -> None:
    spec = resolve_model(cfg(), "mybox/llama", base_url="http://127.0.0.1:1/v1", api_key="k")
    assert (spec.type, spec.base_url, spec.api_key) == ("openai", "http://127.0.0.1:1/v1", "k")
    spec = resolve_model(cfg(), "anthropic/claude-x", api_key="direct", env={})
    assert spec.api_key == "direct"


def test_retry_config() -> None:
    assert retry_config(cfg()).max_retries == 2
    assert retry_config(cfg(retry={"max_retries": 5})).max_retries == 5
