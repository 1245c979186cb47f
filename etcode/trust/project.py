"""Project trust: the settings of a cloned repository's ``etcode.json`` that could send the
user's keys elsewhere or run programs need the user's approval first.

Only *project* files are checked (found in the worktree); the global file and
``ETCODE_CONFIG`` are the user's own. Detection reads each file's data as written, before
``{env:}``/``{file:}`` substitution, so it can tell where a value comes from. Risky:

- a ``provider`` entry that sets ``baseURL`` while its key comes from the user (no
  ``apiKey`` of the project's, or one that resolves to empty: a well-known provider's key
  variable is then used, or an ``apiKey`` from the user's own config), or whose ``apiKey``/``headers`` read the user's secrets
  (``{env:VAR}``, ``{file:path}`` of the user's: see below);
- an ``mcp`` server that runs a local command, or a remote one sent the user's secrets in
  its ``headers``;
- a ``plugin`` (Python code imported and run);
- a ``hooks`` command (issue 28), in ``etcode.json`` or in Claude Code's project settings
  files (``.claude/settings.json``, ``.claude/settings.local.json``: trust layers of their
  own, kind "settings"): it runs as the user on agent events;
- an ``instructions`` path outside the project, or to the user's files in it (its text is
  sent to the model), and any ``instructions`` URL (fetched at start, its answer sent);
- a ``skills.paths`` folder outside the project (its skills are sent to the model);
- a ``permission`` allow (top level, per agent, or in a project markdown agent's front
  matter) where the user's own rules and the defaults ask or deny (``trust/loosening.py``);
- ``shell.env.include`` of secret-looking variables, ``shell.env.set`` of variables that
  decide what a command runs (``PATH``, ``BASH_ENV``, ``LD_PRELOAD``...), and a ``sandbox``
  looser than the user's (turned off, network, writable paths outside the project);
- any other ``{env:VAR}`` or ``{file:path}`` of the user's: outside the project, or inside
  it but not the repository's (git-ignored, or an untracked ``.env``...: ``private_files``).

A file's approval is remembered with the sha256 of its bytes (:class:`TrustStore`), so any
change asks again. ``etcode run``, the chat, ACP (it asks the editor) and the Python API
(``Agent(trust=...)``) all check.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.config.loader import substitute
from etcode.config.raw import ConfigFile, Loc
from etcode.config.schema import key_path
from etcode.config.trust import Finding, UntrustedConfigError, join_names
from etcode.provider.spec import KNOWN_PROVIDERS, known_base_url
from etcode.trust.agent_files import trust_layers
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue
from etcode.util.paths import data_dir

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.trust.loosening import Layers

TRUST_FILE = "trusted-projects.json"
#: Approved versions remembered per file (switching branches back and forth asks once each).
KEEP_HASHES = 20

_TOKEN = re.compile(r"\{(env|file):([^{}]+)\}")
_GLOB_CHARS = frozenset("*?[")
_SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH", re.IGNORECASE)
#: Variables that decide which program or code a command runs.
_RUNS_CODE = re.compile(
    r"PATH|HOME|ZDOTDIR|XDG_(CONFIG|DATA)_\w+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|IFS|CDPATH|EDITOR|VISUAL|NODE_OPTIONS|NODE_PATH|"
    r"(LD|DYLD|GIT|NPM_CONFIG|PIP|CARGO)_\w+|PYTHON\w+|PERL5\w+|RUBY\w+|RUSTC\w*|GO(FLAGS|PROXY|PATH|ROOT|TOOLCHAIN)|"
    r"BASH_FUNC_\S*",
    re.IGNORECASE,
)


#: What the default rules ask about because it lies beyond the project (``--yes`` grants
#: neither ``private_network`` nor ``sandbox``): a project rule that allows one is risky.
GUARDED: dict[str, str] = {
    "external_directory": "edits and reads outside the project",
    "private_network": "WebFetch to localhost and the local network",
    "sandbox": "commands outside the sandbox",
}


# ---- detection --------------------------------------------------------------------------


def _get(entry: Mapping[str, JsonValue], *names: str) -> JsonValue:
    """A key under its JSON name or its snake_case alias (both are accepted)."""
    return next((entry[n] for n in names if n in entry), None)


def _refs(value: JsonValue) -> list[tuple[str, str]]:
    """Every ``{env:…}``/``{file:…}`` in a string value: ``[("env", "VAR"), ...]``."""
    if not isinstance(value, str):
        return []
    return [(m.group(1), m.group(2).strip()) for m in _TOKEN.finditer(value)]


def _target(path: str, base: Path) -> Path:
    """``path`` with ``~`` expanded, relative to ``base``."""
    target = Path(os.path.expanduser(path))
    return target if target.is_absolute() else base / target


def _outside(path: str, base: Path, root: Path) -> bool:
    """Does ``path`` (``~`` expanded, relative to ``base``) lead outside ``root``?"""
    try:
        return not _target(path, base).resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return True


NOT_THE_REPOS = "not part of the repository"


def _secrets(value: JsonValue, file: ConfigFile) -> list[str]:
    """The user's secrets a string would read: ``$VAR``, files outside the project, and the
    user's own files inside it (git-ignored ones, untracked ``.env``...: ``private_files``)."""
    from etcode.security.private_files import users_file

    found: list[str] = []
    for kind, arg in _refs(value):
        if kind == "env":
            found.append(f"${arg}")
        elif _outside(arg, file.path.parent, file.root):
            found.append(f"the contents of {arg}")
        elif users_file(_target(arg, file.path.parent), file.root):
            found.append(f"the contents of {arg} ({NOT_THE_REPOS})")
    return found


class _Scan:
    """Findings of one project file; ``seen`` marks the places a rule has judged."""

    def __init__(self, file: ConfigFile, files: Sequence[ConfigFile], env: Mapping[str, str]) -> None:
        self.file = file
        self.files = files
        self.env = env
        self.findings: list[Finding] = []
        self.seen: set[Loc] = set()

    def add(self, loc: Loc, key: str, reason: str) -> None:
        self.findings.append(Finding(self.file.path, loc, key, reason, self.file.sha256))
        self.seen.add(loc)

    def covered(self, loc: Loc) -> bool:
        return any(loc[: len(done)] == done for done in self.seen)

    # ---- provider ---------------------------------------------------------------------
    def providers(self) -> None:
        entries = self.file.raw.get("provider")
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                self.provider(index, entry)

    def _destination(self, provider_id: str) -> tuple[str, bool]:
        """Where requests for ``provider_id`` go, and whether a project file chose it."""
        for file in reversed(self.files):
            for entry in _entries(file, provider_id):
                url = _get(entry, "baseURL", "base_url")
                if isinstance(url, str) and url:
                    return url, file.project
        known = known_base_url(provider_id, self.env)
        if known is not None:
            return known, False
        return "(no baseURL)", True

    def _user_key(self, provider_id: str) -> str | None:
        """The user's key that requests for ``provider_id`` carry, None when it is not the
        user's. As ``resolve_model``: the ``apiKey`` of the last file that sets one (even
        to ``null``) wins; when that is empty (``""``, an unset ``{env:}``, an empty file)
        the well-known key variable is used instead."""
        for file in reversed(self.files):
            entries = [e for e in _entries(file, provider_id) if "apiKey" in e or "api_key" in e]
            if entries:
                if self._non_empty(_get(entries[-1], "apiKey", "api_key"), file):
                    return None if file.project else f"the apiKey from {file.path}"
                break
        known = KNOWN_PROVIDERS.get(provider_id)
        names = [name for name in (known.key_env if known else ()) if self.env.get(name)]
        return join_names(names) if names else None

    def _non_empty(self, value: JsonValue, file: ConfigFile) -> bool:
        """Does ``value`` substitute to a non-empty string (a key that is used as it is)?"""
        if not isinstance(value, str):
            return False
        try:
            return bool(substitute(value, env=self.env, base_dir=file.path.parent, source=str(file.path)))
        except ConfigError:
            return False

    def provider(self, index: int, entry: JsonObject) -> None:
        provider_id = entry["id"]
        loc: Loc = ("provider", index)
        key_name = "apiKey" if "apiKey" in entry else "api_key"
        self.seen.update({(*loc, key_name), (*loc, "headers")})
        url, project_url = self._destination(provider_id)
        # the provider's own key variable, sent to the endpoint the user chose: as usual
        known = KNOWN_PROVIDERS.get(provider_id)
        usual = set() if project_url else {f"${name}" for name in (known.key_env if known else ())}
        sent: dict[str, list[str]] = {  # the setting → what it sends
            "baseURL": self._user_key_sent(provider_id, entry, project_url),
            "apiKey": self._secrets_sent(entry.get(key_name), usual),
            "headers": self._headers_sent(entry.get("headers"), usual),
        }
        sent = {setting: items for setting, items in sent.items() if items}
        if sent:
            setting = next(iter(sent))
            everything = [item for items in sent.values() for item in items]
            self.add(loc, f"provider.{provider_id}.{setting}", f"sends {join_names(everything)} to {url}")

    def _user_key_sent(self, provider_id: str, entry: JsonObject, project_url: bool) -> list[str]:
        """The user's own key, when the project's ``baseURL`` would receive it."""
        if project_url and _get(entry, "baseURL", "base_url") is not None:
            user_key = self._user_key(provider_id)
            if user_key:
                return [user_key]
        return []

    def _secrets_sent(self, value: JsonValue, usual: set[str]) -> list[str]:
        """The secrets in ``value`` but the ``usual`` ones."""
        if value is None:
            return []
        return [s for s in _secrets(value, self.file) if s not in usual]

    def _headers_sent(self, headers: JsonValue, usual: set[str]) -> list[str]:
        if not isinstance(headers, dict):
            return []
        return [
            f"{s} (header {name})"
            for name, value in headers.items()
            for s in self._secrets_sent(value, usual)
        ]

    # ---- programs and code ------------------------------------------------------------
    def mcp_servers(self) -> None:
        servers = self.file.raw.get("mcp")
        for name, entry in servers.items() if isinstance(servers, dict) else ():
            loc: Loc = ("mcp", name)
            if not isinstance(entry, dict) or entry.get("enabled") is False:
                self.seen.add(loc)  # switched off: nothing of it is used
                continue
            command = entry.get("command")
            if isinstance(command, list) and command:
                environment = entry.get("environment")
                values = environment.values() if isinstance(environment, dict) else ()
                env_secrets = [s for value in values for s in _secrets(value, self.file)]
                extra = f" with {join_names(env_secrets)}" if env_secrets else ""
                self.add(loc, f"mcp.{name}", f"runs `{' '.join(str(c) for c in command)}`{extra}")
                continue
            headers = entry.get("headers")
            sent = [
                f"{s} (header {header})"
                for header, value in (headers.items() if isinstance(headers, dict) else ())
                for s in _secrets(value, self.file)
            ]
            self.seen.add((*loc, "headers"))
            if sent:
                self.add(loc, f"mcp.{name}", f"sends {join_names(sent)} to {entry.get('url')}")

    def hooks(self) -> None:
        """Every hook command (``extensions/hook_set.walk_hooks``): it runs as the user,
        outside the sandbox, whenever its event comes."""
        if self.file.raw.get("hooks") is None:
            return
        from etcode.extensions.hook_set import walk_hooks

        found, _ = walk_hooks(self.file.raw["hooks"])
        for hook in found:
            self.add(hook.loc, key_path((*hook.loc, "command")), f"runs `{one_line(hook.command)}`")

    def plugins(self) -> None:
        plugins = self.file.raw.get("plugin")
        for index, spec in enumerate(plugins if isinstance(plugins, list) else []):
            self.add(("plugin", index), f"plugin[{index}]", f"imports and runs Python code: {spec}")

    def instructions(self) -> None:
        entries = self.file.raw.get("instructions")
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, str) and entry.strip().startswith(("http://", "https://")):
                reason = f"fetches {entry.strip()} when a session starts and sends the answer to the model"
                self.add(("instructions", index), f"instructions[{index}]", reason)
                continue
            if not isinstance(entry, str) or not entry.strip():
                continue
            if _TOKEN.search(entry):
                continue  # judged as a substitution below
            path = entry.strip()
            parts = Path(path).parts
            fixed = next((i for i, p in enumerate(parts) if _GLOB_CHARS & set(p)), len(parts))
            prefix = str(Path(*parts[:fixed])) if fixed else "."
            where: Loc = ("instructions", index)
            if _outside(prefix, self.file.root, self.file.root):
                self.add(where, f"instructions[{index}]", f"sends {path} to the model")
            elif self._users_files(prefix, parts[fixed:]):
                self.add(where, f"instructions[{index}]", f"sends {path} ({NOT_THE_REPOS}) to the model")

    def skill_paths(self) -> None:
        skills = self.file.raw.get("skills")
        paths = skills.get("paths") if isinstance(skills, dict) else None
        for index, entry in enumerate(paths if isinstance(paths, list) else []):
            if not isinstance(entry, str) or not entry.strip() or _TOKEN.search(entry):
                continue  # a substitution is judged below
            if _outside(entry.strip(), self.file.root, self.file.root):
                reason = f"sends the skills in {entry.strip()} to the model"
                self.add(("skills", "paths", index), f"skills.paths[{index}]", reason)

    def _users_files(self, prefix: str, pattern: Sequence[str]) -> bool:
        """Could an instructions path (``prefix`` then glob segments) pick up the user's own
        files inside the project (``.env``, a git-ignored folder)?"""
        from etcode.security.private_files import git_ignored, secret_name, users_file

        root = self.file.root
        if not pattern:
            return users_file(_target(prefix, root), root)
        if secret_name(pattern[-1]):
            return True
        return prefix != "." and bool(git_ignored(_target(prefix, root).resolve(), root.resolve()))

    def shell_env(self) -> None:
        """``shell.env`` (issue 12.2): a project that lets secret-looking variables through
        to commands, or sets variables that decide what a command runs (``PATH``,
        ``BASH_ENV``, ``LD_PRELOAD``...)."""
        shell = self.file.raw.get("shell")
        env = shell.get("env") if isinstance(shell, dict) else None
        env = env if isinstance(env, dict) else {}
        include = env.get("include")
        for index, name in enumerate(include if isinstance(include, list) else []):
            if isinstance(name, str) and (_SECRET_NAME.search(name) or _GLOB_CHARS & set(name)):
                reason = f"passes {name} from your environment to every command"
                self.add(("shell", "env", "include", index), f"shell.env.include[{index}]", reason)
        assigned = env.get("set")
        for name in assigned if isinstance(assigned, dict) else ():
            if isinstance(name, str) and _RUNS_CODE.fullmatch(name):
                reason = f"sets {name}, which decides what every command runs"
                self.add(("shell", "env", "set", name), f"shell.env.set.{name}", reason)

    def permissions(self) -> None:
        """``permission`` rules (top level and per agent) that allow what the default rules
        ask because it lies beyond the project (``GUARDED``): a project must not lift those."""
        self._rules(self.file.raw.get("permission"), ("permission",))
        agents = self.file.raw.get("agent")
        for name, agent in agents.items() if isinstance(agents, dict) else ():
            if isinstance(agent, dict):
                self._rules(agent.get("permission"), ("agent", name, "permission"))

    def _rules(self, value: JsonValue, loc: Loc) -> None:
        from etcode.util.wildcard import wildcard_match

        def allows(action: JsonValue) -> bool:
            return isinstance(action, str) and action.strip().lower() == "allow"

        def guarded(permission: str) -> list[str]:
            return [what for name, what in GUARDED.items() if wildcard_match(name, permission.lower(), True)]

        if isinstance(value, str):
            if allows(value):
                self.add(
                    loc, key_path(loc), f"allows everything without asking ({', '.join(GUARDED.values())})"
                )
            return
        for permission, rule in value.items() if isinstance(value, dict) else ():
            what = guarded(str(permission)) if isinstance(permission, str) else []
            if not what:
                continue
            if allows(rule):
                self.add(
                    (*loc, permission),
                    key_path((*loc, permission)),
                    f"allows {join_names(what)} without asking",
                )
            for pattern, action in rule.items() if isinstance(rule, dict) else ():
                if allows(action):
                    place = (*loc, permission, pattern)
                    self.add(
                        place,
                        f'{key_path((*loc, permission))}."{pattern}"',
                        f"allows {join_names(what)} without asking",
                    )

    def loosened(self, layers: Layers) -> None:
        """Allows (top level, ``agent.<name>.permission``, a markdown agent's front matter)
        where the user's own rules ask or deny (issue 27.4: ``trust/loosening.py``)."""
        from etcode.trust.loosening import loosenings

        places: list[tuple[JsonValue, Loc, str | None]] = [
            (self.file.raw.get("permission"), ("permission",), None)
        ]
        agents = self.file.raw.get("agent")
        for name, agent in agents.items() if isinstance(agents, dict) else ():
            if isinstance(agent, dict) and agent.get("permission") is not None:
                places.append((agent["permission"], ("agent", name, "permission"), str(name)))
        for value, loc, agent_name in places:
            if value is None:
                continue
            for found in loosenings(value, loc, agent_name, layers):
                if self.covered(found.loc):
                    continue
                verdict = "deny" if found.users == "deny" else "ask about"
                example = found.example.replace("\x01", "x")
                deep = len(found.loc) > len(loc) + 1
                key = f'{key_path(found.loc[:-1])}."{found.loc[-1]}"' if deep else key_path(found.loc)
                reason = (
                    f'allows without asking what your own rules {verdict} ({found.permission} "{example}")'
                )
                self.add(found.loc, key, reason)

    def sandbox(self) -> None:
        """``sandbox`` (issue 12.9): a project that loosens the sandbox the user chose."""
        value = self.file.raw.get("sandbox")
        mode_loc: Loc = ("sandbox",) if isinstance(value, str) else ("sandbox", "mode")
        value = {"mode": value} if isinstance(value, str) else value
        if not isinstance(value, dict):
            return
        users = [f.raw.get("sandbox") for f in self.files if not f.project and f.raw.get("sandbox")]
        if value.get("mode") == "off" and users:
            self.add(mode_loc, "sandbox.mode", "turns off the sandbox your own config sets")
        if value.get("network") is True:
            self.add(("sandbox", "network"), "sandbox.network", "lets sandboxed commands use the network")
        sockets = value.get("allowUnixSockets")
        for index, path in enumerate(sockets if isinstance(sockets, list) else []):
            reason = f"lets sandboxed commands reach unix sockets ({path} and every other)"
            self.add(("sandbox", "allowUnixSockets", index), f"sandbox.allowUnixSockets[{index}]", reason)
        writable = value.get("writable")
        for index, path in enumerate(writable if isinstance(writable, list) else []):
            if isinstance(path, str) and _outside(path, self.file.root, self.file.root):
                reason = f"lets sandboxed commands write to {path}"
                self.add(("sandbox", "writable", index), f"sandbox.writable[{index}]", reason)

    def agent_sandboxes(self) -> None:
        """``agent.<name>.sandbox`` looser than the built-in agent's own (plan, explore:
        read-only): a project must not take the read-only agents out of their sandbox."""
        from etcode.agent.registry import builtin_agents
        from etcode.security.sandbox import STRICTNESS

        agents = self.file.raw.get("agent")
        if not isinstance(agents, dict):
            return
        builtin = builtin_agents()
        for name, settings in agents.items():
            mode = settings.get("sandbox") if isinstance(settings, dict) else None
            default = builtin[name].sandbox if name in builtin else None
            if isinstance(mode, str) and default and STRICTNESS.get(mode, 0) < STRICTNESS.get(default, 0):
                reason = f"takes the {name} agent out of its {default} sandbox"
                self.add(("agent", name, "sandbox"), f"agent.{name}.sandbox", reason)

    # ---- everything else --------------------------------------------------------------
    def substitutions(self, value: JsonValue, loc: Loc = ()) -> None:
        if self.covered(loc) and loc:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                self.substitutions(item, (*loc, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.substitutions(item, (*loc, index))
        else:
            secrets = _secrets(value, self.file)
            if secrets:
                self.add(loc, key_path(loc), f"reads {join_names(secrets)} into the configuration")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """``text`` on one line, control characters shown as escapes (``\\n``, ``\\x1b``): a
    command the user approves is shown as it is, nothing hidden by a terminal escape."""
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text)


def _entries(file: ConfigFile, provider_id: str) -> list[JsonObject]:
    entries = file.raw.get("provider")
    return [
        e
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict) and e.get("id") == provider_id
    ]


def find_risky(files: Sequence[ConfigFile], env: Mapping[str, str] | None = None) -> list[Finding]:
    """The risky settings of the project files among ``files`` (all layers, merge order)."""
    env = os.environ if env is None else env
    findings: list[Finding] = []
    layers: Layers | None = None
    for file in files:
        if not file.project:
            continue
        scan = _Scan(file, files, env)
        if file.kind == "settings":  # Claude Code's settings file: its hooks only
            scan.hooks()
            findings.extend(scan.findings)
            continue
        if file.kind == "agent":  # a markdown agent's permission rules (never substituted)
            scan.permissions()
            layers = layers or _layers(files)
            scan.loosened(layers)
            findings.extend(scan.findings)
            continue
        scan.providers()
        scan.mcp_servers()
        scan.plugins()
        scan.hooks()
        scan.instructions()
        scan.skill_paths()
        scan.shell_env()
        scan.sandbox()
        scan.agent_sandboxes()
        scan.permissions()
        if _has_rules(file):
            layers = layers or _layers(files)
            scan.loosened(layers)
        scan.substitutions(file.raw)
        findings.extend(scan.findings)
    return findings


def _layers(files: Sequence[ConfigFile]) -> Layers:
    from etcode.trust.loosening import Layers

    return Layers(files)


def _has_rules(file: ConfigFile) -> bool:
    agents = file.raw.get("agent")
    return file.raw.get("permission") is not None or any(
        isinstance(a, dict) and a.get("permission") is not None
        for a in (agents.values() if isinstance(agents, dict) else ())
    )


def config_findings(config: Config, env: Mapping[str, str] | None = None) -> list[Finding]:
    """:func:`find_risky` over the files a loaded ``Config`` was read from (its project's
    markdown agents too: :func:`trust_layers`)."""
    return find_risky(trust_layers(config), env)


# ---- approvals --------------------------------------------------------------------------


class TrustStore:
    """Approved project files: ``{"files": {"/abs/etcode.json": ["<sha256>", ...]}}`` in a
    0600 file under etcode's data dir, written atomically."""

    def __init__(self, path: Path | None = None, env: Mapping[str, str] | None = None) -> None:
        self.path = path if path is not None else data_dir(env) / TRUST_FILE

    def _read(self) -> dict[str, list[str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: nothing is approved
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            return {}
        return {k: [h for h in v if isinstance(h, str)] for k, v in files.items() if isinstance(v, list)}

    def is_trusted(self, path: Path, sha256: str) -> bool:
        return sha256 in self._read().get(str(path.resolve()), [])

    def trust(self, items: Iterable[tuple[Path, str]]) -> None:
        """Remember each ``(file, sha256)`` as approved (``ConfigError`` when it cannot)."""
        files = self._read()
        for path, digest in items:
            key = str(path.resolve())
            kept = [h for h in files.get(key, []) if h != digest]
            files[key] = [*kept, digest][-KEEP_HASHES:]
        try:
            self._write({"version": 1, "files": files})
        except OSError as err:
            raise ConfigError(f"{self.path}: cannot save the approval: {err.strerror or err}") from None

    def _write(self, data: JsonObject) -> None:
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                os.fchmod(out.fileno(), 0o600)
                json.dump(data, out, indent=2, sort_keys=True)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise


def untrusted(
    config: Config, store: TrustStore | None = None, env: Mapping[str, str] | None = None
) -> list[Finding]:
    """The risky settings of project files not approved in their current version."""
    store = store or TrustStore(env=env)
    files = trust_layers(config)
    digests = {file.path: file.sha256 for file in files}
    return [f for f in find_risky(files, env) if not store.is_trusted(f.file, digests[f.file])]


def trust_files(config: Config, findings: Sequence[Finding], store: TrustStore | None = None) -> None:
    """Approve every file that has one of ``findings``, in the version they were found in
    (the one the user was shown; a file changed since then is asked about again)."""
    _mark_trusted(config)
    (store or TrustStore()).trust(dict.fromkeys((f.file, f.sha256) for f in findings))


def _mark_trusted(config: Config) -> None:
    """The user trusted the project for this session (``Config.trusted``): instruction files
    it links out of the project are sent too (``prompt/project_files.py``)."""
    mark = getattr(config, "mark_trusted", None)
    if mark is not None:
        mark()


def exclusions(findings: Sequence[Finding]) -> dict[Path, list[Loc]]:
    """``load_config(without=...)``: leave out every finding's setting."""
    out: dict[Path, list[Loc]] = {}
    for finding in findings:
        out.setdefault(finding.file, []).append(finding.loc)
    return out


# ---- messages ---------------------------------------------------------------------------


RUN_HINT = (
    "approve it with `etcode run --trust ...` (remembered until the file changes), "
    "or allow it for this run only with --yes"
)


def require_trust(
    config: Config,
    *,
    trust: bool = False,
    allow: bool = False,
    store: TrustStore | None = None,
    hint: str | None = None,
) -> list[Finding]:
    """The gate of headless commands. Unapproved risky settings raise
    :class:`UntrustedConfigError`, unless ``trust`` (approve and remember the files) or
    ``allow`` (this time only); returns the findings so let through (to report them).
    ``hint``: how to approve them, for the error (``etcode run --trust`` by default)."""
    if trust:
        _mark_trusted(config)
    found = untrusted(config, store)
    if found and trust:
        trust_files(config, found, store)
    elif found and not allow:
        raise UntrustedConfigError(found, hint or RUN_HINT)
    return found
