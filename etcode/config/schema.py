"""The shape of ``etcode.json`` as pydantic models, and one-line validation errors.

Keys are spelled as in the JSON (``baseURL``, ``apiKey``, ``small_model``); the Python
attribute names are snake_case and also accepted on input. Unknown keys are errors
(with a "did you mean" hint) except inside the free-form objects (``options``,
``permission``, per-model info).
"""

from __future__ import annotations

import difflib
import json
import types
from pathlib import Path
from typing import Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from etcode.config.raw import ConfigFile, Loc
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ModelLimit(_Open):
    """Token limits of one model."""

    context: int | None = Field(default=None, gt=0)
    output: int | None = Field(default=None, gt=0)


class ModelCost(_Open):
    """Prices in USD per million tokens."""

    input: float | None = Field(default=None, ge=0)
    output: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)


class ModelModalities(_Open):
    """What a model takes and gives (models.dev's names): ``"input": ["text", "image"]``
    says it takes images, ``["text"]`` that it does not."""

    input: list[str] | None = None
    output: list[str] | None = None


class ModelInfo(_Open):
    """Per-model overrides in a provider entry (free-form; these keys are typed)."""

    name: str | None = None
    limit: ModelLimit | None = None
    cost: ModelCost | None = None
    modalities: ModelModalities | None = None


class ProviderConfig(_Strict):
    """One ``"provider"`` entry. Well-known ids need only what differs from the defaults."""

    id: str
    type: Literal["openai", "anthropic"] | None = None
    base_url: str | None = Field(default=None, alias="baseURL")
    api_key: str | None = Field(default=None, alias="apiKey", repr=False)  # never in a repr
    model: str | None = None
    models: dict[str, ModelInfo] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    options: JsonObject = Field(default_factory=dict)
    timeout: float | None = Field(default=None, gt=0, description="request timeout in ms")

    @field_validator("id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if not value or "/" in value or any(c.isspace() for c in value):
            raise ValueError('a provider id must be non-empty, without "/" or spaces')
        return value


class AgentConfig(_Strict):
    """A custom agent, or overrides of a built-in one."""

    description: str | None = None
    prompt: str | None = None
    model: str | None = None
    tools: dict[str, bool] | None = None
    permission: JsonValue = None
    steps: int | None = Field(default=None, ge=1)
    mode: Literal["primary", "subagent", "all"] | None = None
    temperature: float | None = Field(default=None, ge=0)
    #: How this agent's Bash commands are confined (see ``SandboxConfig``).
    sandbox: Literal["off", "workspace-write", "read-only"] | None = None


class CompactionConfig(_Strict):
    """When and how older history is summarised. ``threshold``: the fraction of the usable
    window (context − ``reserve`` output tokens) that triggers it (default 0.9);
    ``keep_turns``: the last turns kept verbatim (default 2)."""

    auto: bool = True
    threshold: float | None = Field(default=None, gt=0, le=1)
    reserve: int | None = Field(default=None, ge=0)
    keep_turns: int | None = Field(default=None, ge=0)


class SnapshotConfig(_Strict):
    """Undo copies of the files WriteFile/Edit change. ``maxFileBytes``: files larger than
    this are changed without a copy (a warning says undo cannot restore them); 0 keeps none."""

    max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=0, alias="maxFileBytes")


class LimitsConfig(_Strict):
    """The loop's limits besides ``max_steps`` (``etcode.engine.limits.LoopLimits``). A key
    left out takes the default of what runs: ``etcode run``, the chat and ``etcode acp``
    stop hard at their step limit and have no token budget; the Python API warns softly and
    stops at 200,000 output tokens. ``max_tokens``: the whole run's output tokens (null:
    no budget); ``soft_limit_interval``: steps between two reminders after the first
    (default: ``max_steps``); ``doom_loop_threshold``: identical calls in a row before the
    model is told it is looping."""

    step_limit_mode: Literal["soft", "hard"] | None = None
    soft_limit_interval: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    doom_loop_threshold: int = Field(default=3, ge=2)


class RetrySettings(_Strict):
    """``retry``: the Python API's ``RetryConfig`` (``base_delay`` is the design's name of
    ``initial_delay``; one or the other)."""

    max_retries: int = Field(default=2, ge=0)
    initial_delay: float | None = Field(default=None, gt=0)
    base_delay: float | None = Field(default=None, gt=0)
    max_delay: float = Field(default=8.0, gt=0)
    max_retry_after: float = Field(default=60.0, ge=0)

    @model_validator(mode="after")
    def _one_delay(self) -> RetrySettings:
        if self.initial_delay is not None and self.base_delay is not None:
            raise ValueError("give initial_delay or base_delay (the same setting), not both")
        return self


class McpServerConfig(_Strict):
    """One ``"mcp"`` server: ``"local"`` (a command run over stdio) or ``"remote"``
    (streamable HTTP). ``type`` may be left out when ``command`` or ``url`` says it.
    ``timeout`` is the start-up limit in milliseconds. A later config layer may hold
    just ``{"enabled": false}`` to switch off a server defined in an earlier one."""

    type: Literal["local", "remote"] | None = None
    command: list[str] | None = None
    environment: dict[str, str] = Field(default_factory=dict, repr=False)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    enabled: bool = True
    timeout: float | None = Field(default=None, gt=0, description="start-up timeout in ms")

    @model_validator(mode="after")
    def _shape(self) -> McpServerConfig:
        kind = self.type or ("local" if self.command else "remote" if self.url else None)
        if kind is None:
            if self.enabled:
                raise ValueError(
                    'needs "type": "local" with "command" (e.g. ["uvx", "mcp-server-time"]) '
                    'or "type": "remote" with "url"'
                )
            return self
        if kind == "local":
            self._check_local()
        else:
            self._check_remote()
        self.type = kind
        return self

    def _check_local(self) -> None:
        if self.url is not None or self.headers:
            raise ValueError('"url" and "headers" are for "type": "remote" servers')
        if self.enabled and not self.command:
            raise ValueError(
                'a local server needs "command", a non-empty list such as ["uvx", "mcp-server-time"]'
            )
        if self.command is not None and (not self.command or not self.command[0].strip()):
            raise ValueError('"command" must be a non-empty list whose first item is the program')

    def _check_remote(self) -> None:
        if self.command is not None or self.environment:
            raise ValueError('"command" and "environment" are for "type": "local" servers')
        if self.enabled and not self.url:
            raise ValueError('a remote server needs "url" (http:// or https://)')
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f'"url" must start with http:// or https://, got "{self.url}"')


class ShellEnvConfig(_Strict):
    """The environment of ``Bash`` commands (see ``etcode/security/shell_env.py``): what is
    inherited, name patterns included despite looking secret, more names excluded, and
    variables set."""

    inherit: Literal["all", "core", "none"] = "all"
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    set_: dict[str, str] = Field(default_factory=dict, alias="set")

    @field_validator("include", "exclude")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern.strip() or "=" in pattern:
                raise ValueError(f'"{pattern}" is not a variable name pattern (like "NPM_TOKEN" or "AWS_*")')
        return value

    @field_validator("set_")
    @classmethod
    def _settable(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f'"{name}" is not a variable name')
        return value


class SandboxConfig(_Strict):
    """The OS sandbox of ``Bash`` commands (``etcode/security/sandbox.py``). Written as a
    mode alone (``"sandbox": "workspace-write"``) or as this object."""

    mode: Literal["off", "workspace-write", "read-only"] = "off"
    network: bool = False
    writable: list[str] = Field(default_factory=list)
    #: Unix sockets commands may reach (``~/`` allowed). One entry turns the socket filter
    #: off: seccomp cannot tell one socket path from another (see docs/security.md).
    allow_unix_sockets: list[str] = Field(default_factory=list, alias="allowUnixSockets")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        return {"mode": value} if isinstance(value, str) else value


class ShellConfig(_Strict):
    """How ``Bash`` runs commands."""

    env: ShellEnvConfig = Field(default_factory=ShellEnvConfig)
    #: At most this many background processes (``Bash`` with ``run_in_background``) at once.
    max_background: int = Field(default=8, ge=1, le=64, alias="maxBackground")


class WorkflowConfig(_Strict):
    """The Planner → Executor → Verifier workflow (``--agent workflow``). ``prompts``:
    business context per role (``planner``, ``executor``, ``verifier``), used when the
    project has no ``.etcode/prompts/<role>.md``. The round limits (None: the defaults
    3 / 3 / 10): plan → execute → verify cycles, planner answers per cycle, executor
    rounds per todo."""

    prompts: dict[Literal["planner", "executor", "verifier"], str] = Field(default_factory=dict)
    max_cycles: int | None = Field(default=None, ge=1)
    planner_rounds: int | None = Field(default=None, ge=1)
    executor_rounds: int | None = Field(default=None, ge=1)


class SkillsConfig(_Strict):
    """Skills (``SKILL.md`` folders, ``etcode/extensions/skills.py``): more folders to look
    in (each a skill or a folder of skills; relative to the worktree, ``~/`` allowed) and the
    names of skills to leave out."""

    paths: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)


#: The hook events, as Claude Code names them.
HookEventName = Literal[
    "PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart", "SessionEnd",
    "PreCompact", "Notification",
]  # fmt: skip


class HookCommandConfig(_Strict):
    """One hook: a shell command (``"type": "command"``), run with the event as JSON on stdin;
    ``timeout`` in seconds (default 60)."""

    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0, description="seconds")


class HookMatcherConfig(_Strict):
    """The hooks of one event for the tools (or sources) ``matcher`` names: ``"Bash"``,
    ``"Write|Edit"``, a regular expression such as ``"^Notebook"``, or ``"*"``/empty for all."""

    matcher: str = ""
    hooks: list[HookCommandConfig] = Field(default_factory=list)


class Config(_Strict):
    """The merged configuration. ``sources`` lists the files it was loaded from."""

    schema_: str | None = Field(default=None, alias="$schema")
    model: str | None = None
    small_model: str | None = None
    default_agent: str | None = None
    provider: list[ProviderConfig] = Field(default_factory=list)
    agent: dict[str, AgentConfig] = Field(default_factory=dict)
    instructions: list[str] = Field(default_factory=list)
    instructions_compat: bool = True
    #: ``"module:function"`` callables run on the system prompt parts before sending
    #: (the ``system.prompt.transform`` hook; entry points are found automatically).
    plugin: list[str] = Field(default_factory=list)
    permission: JsonValue = None
    mcp: dict[str, McpServerConfig] = Field(default_factory=dict)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    #: Commands run on agent events, per event (Claude Code's ``hooks`` shape).
    hooks: dict[HookEventName, list[HookMatcherConfig]] = Field(default_factory=dict)
    workflow: WorkflowConfig = Field(default_factory=WorkflowConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    snapshot: SnapshotConfig = Field(default_factory=SnapshotConfig)
    shell: ShellConfig = Field(default_factory=ShellConfig)
    #: None when no layer set it (the agent's own default then applies).
    sandbox: SandboxConfig | None = None
    #: A models.dev-format JSON file with model limits and prices (see provider/catalog.py).
    model_catalog: str | None = None
    #: Files (besides the project's ``.env``/``.envrc`` files) whose secret-looking values
    #: are ``[REDACTED]`` in tool output (``security/secret_values.py``); relative to the project.
    secret_files: list[str] = Field(default_factory=list)
    retry: RetrySettings = Field(default_factory=RetrySettings)
    #: Model calls of a run (null: no limit). Left out: 50 for the front ends, none for the
    #: Python API (``etcode.wiring.run_limits``).
    max_steps: int | None = Field(default=50, ge=1)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    #: The provider prompt and tool descriptions: "lean" (short, for small local models),
    #: "full", or "auto" (lean when the model's window is 16k tokens or less).
    prompt: Literal["auto", "full", "lean"] = "auto"
    #: Tool calls run from one model answer; the rest are answered "not run".
    max_tool_calls: int = Field(default=64, ge=1)
    timeout: float | None = Field(default=None, gt=0, description="loop wall-clock limit in s")
    #: How hard the model thinks: "low", "medium", "high", a token budget, or "off" (the
    #: model's default), sent as each provider's own field (``provider/reasoning.py``).
    reasoning: JsonValue = None

    _sources: list[Path] = PrivateAttr(default_factory=list)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)
    _debug: bool = PrivateAttr(default=False)
    _permission_files: list[tuple[str, JsonValue]] = PrivateAttr(default_factory=list)
    _hook_layers: list[tuple[str, bool, JsonValue]] = PrivateAttr(default_factory=list)
    _files: list[ConfigFile] = PrivateAttr(default_factory=list)  # for trust/project.py
    _without: dict[Path, list[Loc]] = PrivateAttr(default_factory=dict)
    _folders: tuple[Path, Path] | None = PrivateAttr(default=None)
    _trusted: bool = PrivateAttr(default=False)

    @field_validator("reasoning")
    @classmethod
    def _reasoning_setting(cls, value: JsonValue) -> JsonValue:
        ok = value in (None, "off", "low", "medium", "high") or (
            isinstance(value, int) and not isinstance(value, bool) and value > 0
        )
        if not ok:
            raise ValueError(
                f'expected "off", "low", "medium", "high" or a token budget (a positive integer), got {json.dumps(value)}'
            )
        return value

    @field_validator("permission")
    @classmethod
    def _permission_shape(cls, value: JsonValue) -> JsonValue:
        if value is not None and not isinstance(value, dict | str):
            raise ValueError('expected an object of rules or "allow" / "ask" / "deny"')
        return value

    @property
    def sources(self) -> list[Path]:
        """Config files that were read, in merge order (later wins)."""
        return list(self._sources)

    @property
    def debug(self) -> bool:
        """``ETCODE_DEBUG`` / ``--debug``: show tracebacks and debug logs."""
        return self._debug

    @property
    def permission_files(self) -> list[tuple[str, JsonValue]]:
        """``(source, permission value)`` of each config file that sets ``permission``, in
        merge order: each file's own denies stay final (see ``permission/rules.py``)."""
        return list(self._permission_files)

    @property
    def hook_layers(self) -> list[tuple[str, bool, JsonValue]]:
        """``(source, project, hooks)`` of each layer that sets ``hooks``, in merge order
        (``hooks`` is their concatenation): where each hook was written, for
        ``extensions/hook_set.py``. Empty for a ``Config`` not made by ``load_config``."""
        return list(self._hook_layers)

    @property
    def files(self) -> list[ConfigFile]:
        """Each file read (``raw.ConfigFile``: path, project or not, raw data, sha256): the
        config files in merge order, then Claude Code's settings files (kind "settings")."""
        return list(self._files)

    @property
    def folders(self) -> tuple[Path, Path] | None:
        """``(directory, worktree)`` it was loaded for (``load_config``); None when built
        otherwise. Trust reads the project's markdown agents from them (``trust/agent_files.py``)."""
        return self._folders

    @property
    def without(self) -> dict[Path, list[Loc]]:
        """Per project file, the settings left out because the user did not trust them
        (``load_config(without=...)``); the agent registry leaves them out of markdown agents."""
        return dict(self._without)

    @property
    def trusted(self) -> bool:
        """The user approved this project for this session (``--trust``, the trust dialog):
        instruction files linked out of the project are sent too (``prompt/project_files.py``)."""
        return self._trusted

    def mark_trusted(self) -> None:
        self._trusted = True

    def origin(self, key: str) -> str | None:
        """Where a top-level key (or ``provider.<id>``) was last set: a file path or label."""
        return self._origins.get(key)

    def provider_entry(self, provider_id: str) -> ProviderConfig | None:
        return next((p for p in self.provider if p.id == provider_id), None)


# --- one-line errors ---------------------------------------------------------------


def key_path(loc: Loc) -> str:
    """``("provider", 0, "baseURL")`` → ``provider[0].baseURL``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _unwrap(tp: object) -> object:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else None
    return tp


def _model_at(loc: Loc) -> type[BaseModel] | None:
    current: object = Config
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next(
                (f for name, f in current.model_fields.items() if part in (name, f.alias)),
                None,
            )
            if field is None:
                return None
            current = field.annotation
        elif get_origin(current) in (list, dict):
            current = get_args(current)[-1]
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _unknown_key_message(loc: Loc) -> str:
    key = str(loc[-1])
    model = _model_at(loc[:-1])
    hint = ""
    if model is not None:
        close = difflib.get_close_matches(key, _allowed_keys(model), n=1, cutoff=0.6)
        if close:
            hint = f' (did you mean "{close[0]}"?)'
    prefix = key_path(loc[:-1])
    name = f"{prefix}.{key}" if prefix else key
    return f'unknown key "{name}"{hint}'


def format_validation_error(err: ValidationError, source: str) -> str:
    """The first problem as ``<source>: <key.path>: <message>`` (one line)."""
    errors = err.errors(include_url=False)
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    loc = tuple(first["loc"])
    if first["type"] == "extra_forbidden":
        text = f"{source}: {_unknown_key_message(loc)}"
    else:
        where = key_path(loc)
        msg = first["msg"].removeprefix("Value error, ")
        text = f"{source}: {where}: {msg}" if where else f"{source}: {msg}"
    more = len(errors) - 1
    if more:
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return " ".join(text.split())


def validate(data: JsonObject, source: str) -> Config:
    """Validate one layer (or the merged result); errors name ``source``."""
    try:
        return Config.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, source)) from None
