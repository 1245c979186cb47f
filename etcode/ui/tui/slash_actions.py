"""What each slash command does in the app (the table is in :mod:`commands`).

The commands see the app through :class:`SlashApp`, the few parts of
:class:`~etcode.ui.tui.app.EtcodeApp` they use (so this module does not import the app).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from etcode.ui.tui.background import status_text
from etcode.ui.tui.commands import ParsedCommand, help_text
from etcode.ui.tui.widgets.messages import HelpMessage, Notice
from etcode.util.errors import EtcodeError

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen

    from etcode.ui.command_prompts import CommandIndex
    from etcode.ui.tui.background import BackgroundWatch
    from etcode.ui.tui.controller import AgentHost
    from etcode.ui.tui.widgets.conversation import Conversation
    from etcode.ui.tui.widgets.status import StatusBar
    from etcode.ui.tui.widgets.todo import TodoPanel


class SlashApp(Protocol):
    """What the slash commands use of the app."""

    directory: Path
    custom: CommandIndex
    conversation: Conversation
    todos: TodoPanel
    status_bar: StatusBar
    background: BackgroundWatch

    @property
    def host(self) -> AgentHost | None: ...

    @property
    def busy(self) -> bool: ...

    def notify(self, message: str, *, severity: SeverityLevel = ..., timeout: float | None = ...) -> None: ...

    def push_screen(
        self, screen: Screen[str | None], callback: Callable[[str | None], Awaitable[None]]
    ) -> object: ...

    def run_busy(self, work: Awaitable[None]) -> None: ...

    async def start_turn(self, text: str, task: str, attached: list[str] | None = None) -> None: ...

    def warm_up(self) -> object: ...

    async def action_quit(self) -> None: ...


#: Commands allowed while a turn runs (the others change the agent under it).
WHILE_BUSY = {"help", "exit", "export", "bashes"}


async def run_slash(app: SlashApp, parsed: ParsedCommand) -> None:
    """Run one parsed command, reporting problems in the conversation, never raising."""
    if parsed.command is None:
        await say(app, f"unknown command /{parsed.name} (see /help)", "warning")
        return
    name = parsed.name
    if name == "help":
        await app.conversation.add_aside(HelpMessage(help_text(app.custom.slash)))
        return
    if name == "exit":
        await app.action_quit()
        return
    if app.busy and name not in WHILE_BUSY:  # a toast: a notice would land mid-answer
        app.notify(f"/{name}: wait for the turn to finish (Esc interrupts it)", severity="warning", timeout=5)
        return
    host = app.host
    if host is None:
        await say(app, f"/{name}: no agent (see the error above)", "error")
        return
    handler = _HANDLERS[name]
    try:
        await handler(app, parsed.args)
    except EtcodeError as err:
        await say(app, f"error: {err}", "error")


async def say(app: SlashApp, text: str, kind: str = "info") -> None:
    """A command's output: in view, and after the answer when one is streaming."""
    await app.conversation.add_aside(Notice(text, kind))


async def _new(app: SlashApp, args: str) -> None:
    assert app.host is not None
    await app.host.new_session()
    await reset_view(app)
    await say(app, "New session.", "info")


async def reset_view(app: SlashApp) -> None:
    """Empty the conversation, todos and usage figures."""
    await app.conversation.clear()
    app.todos.set_todos([])
    app.status_bar.update_info(context_tokens=None, cost=None)


async def _sessions(app: SlashApp, args: str) -> None:
    from etcode.ui.tui.widgets.sessions import SessionPicker

    assert app.host is not None
    sessions = app.host.list_sessions()
    if not sessions:
        await say(app, "No stored sessions for this project yet.", "info")
        return

    async def chosen(session_id: str | None) -> None:
        if not session_id or app.host is None:
            return
        await app.host.resume(session_id)
        await reset_view(app)
        await say(app, f"Resumed session {session_id}.", "info")
        app.warm_up()

    app.push_screen(SessionPicker(sessions), chosen)


async def _agent(app: SlashApp, args: str) -> None:
    assert app.host is not None
    if not args:
        described = app.host.agent_descriptions()
        listed = "\n".join(f"  {agent_line(name, text)}" for name, text in described.items())
        names = ", ".join(described)
        await say(app, f"agent: {app.host.resolved_agent()} (available: {names})\n{listed}", "info")
        return
    name = await app.host.switch_agent(args.split()[0])
    app.status_bar.update_info(agent=name)
    await say(app, f"Agent: {agent_line(name, app.host.agent_descriptions().get(name, ''))}", "info")


#: Characters of an agent's description shown beside its name (its first line).
DESCRIPTION_CHARS = 90


def agent_line(name: str, description: str) -> str:
    """``workflow — Planner → Executor → Verifier: …``: the name and the first line of its
    description (cut to ``DESCRIPTION_CHARS``), or the name alone."""
    first = description.strip().splitlines()[0].strip() if description.strip() else ""
    if len(first) > DESCRIPTION_CHARS:
        first = first[: DESCRIPTION_CHARS - 1].rstrip() + "…"
    return f"{name} — {first}" if first else name


async def cycle_agent(app: SlashApp) -> None:
    """Switch to the next agent; the status bar shows it, the next turn uses it."""
    host = app.host
    if host is None:
        return
    if app.busy:
        app.notify("Agent: wait for the turn to finish (Esc interrupts it)", severity="warning", timeout=3)
        return
    try:
        name = await host.cycle_agent()
    except EtcodeError as err:
        await say(app, f"error: {err}", "error")
        return
    app.status_bar.update_info(agent=name)
    app.notify(f"Agent: {agent_line(name, host.agent_descriptions().get(name, ''))}", timeout=4)


async def _model(app: SlashApp, args: str) -> None:
    assert app.host is not None
    if not args:
        await say(app, f"model: {app.status_bar.info.model}", "info")
        return
    full = await app.host.switch_model(args.split()[0])
    _, limit = app.host.resolved_model()
    app.status_bar.update_info(model=full, context_limit=limit)
    await say(app, f"Model: {full}", "info")


async def _clear(app: SlashApp, args: str) -> None:
    assert app.host is not None
    await app.host.clear()
    await reset_view(app)
    await say(app, "Context cleared.", "info")


async def _compact(app: SlashApp, args: str) -> None:
    assert app.host is not None
    app.run_busy(app.host.compact())  # a model call: in a worker; the events say what happened


async def _undo(app: SlashApp, args: str) -> None:
    assert app.host is not None
    flag = args.strip()
    if flag not in ("", "--force"):
        await say(app, f"error: /undo takes only --force, not {flag!r}", "error")
        return
    restored = await app.host.undo(force=flag == "--force")  # UndoRefused: an error notice
    if restored:
        await say(app, "Restored the last changed turn — " + "; ".join(restored), "info")
    else:
        await say(app, "Nothing to undo.", "info")


async def _export(app: SlashApp, args: str) -> None:
    from etcode.ui.tui.export import transcript_markdown

    assert app.host is not None
    agent = app.host.agent
    target = Path(args.strip()).expanduser() if args.strip() else Path(f"etcode-{agent.session_id}.md")
    if not target.is_absolute():
        target = app.directory / target
    text = transcript_markdown(agent.history, title=f"etcode session {agent.session_id}")
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as err:
        await say(app, f"error: cannot write {target}: {err.strerror or err}", "error")
        return
    await say(app, f"Transcript written to {target}", "info")


async def _skills(app: SlashApp, args: str) -> None:
    """``/skills``: the skills (name, description, where); ``/skills NAME [REQUEST]``: send
    the message with that skill attached (as the Skill tool gives it), as Claude Code does."""
    import asyncio

    from etcode.extensions.skill_prompt import by_hand_text, load_skill
    from etcode.extensions.skills import SkillError
    from etcode.ui.tui.mentions import Attachment, attach

    assert app.host is not None
    skills = await app.host.skills()
    name, _, request = args.strip().partition(" ")
    if not name:
        if not skills:
            await say(
                app,
                "No skills: put SKILL.md folders in .etcode/skills/ or .claude/skills/ (docs/extending.md).",
            )
            return
        rows = "\n".join(
            f"| `{s.name}` | {_cell(s.description)} | {s.source}: `{_where(app, s.folder)}` |" for s in skills
        )
        table = f"| skill | what it is for | where |\n|---|---|---|\n{rows}"
        await app.conversation.add_aside(
            HelpMessage(f"{table}\n\n`/skills NAME [REQUEST]` sends one to the model.")
        )
        return
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        names = ", ".join(s.name for s in skills) or "none"
        await say(app, f"error: no skill named {name!r} (skills: {names})", "error")
        return
    try:
        loaded = await asyncio.to_thread(load_skill, skill)
    except (OSError, SkillError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        await say(app, f"error: cannot read {skill.path}: {reason}", "error")
        return
    # Sent as an attached file is: what the user typed, then the skill (a resumed session
    # shows it as the chat did, ``@.claude/skills/NAME/SKILL.md``).
    shown, where = f"/skills {args.strip()}", _where(app, skill.path)
    await app.start_turn(
        shown, attach(shown, [Attachment(where, by_hand_text(skill, loaded, request))]), [where]
    )


async def _bashes(app: SlashApp, args: str) -> None:
    """``/bashes``: the background processes, live (``k`` kills the highlighted one);
    ``/bashes kill ID``: end that one's process group."""
    from etcode.ui.tui.widgets.bashes import BashesScreen

    assert app.host is not None
    processes = app.host.agent.background
    verb, _, rest = args.strip().partition(" ")
    if verb == "kill":
        await _kill_background(app, rest.strip())
        return
    if verb:
        await say(app, f"error: /bashes takes nothing or kill ID, not {args.strip()!r}", "error")
        return
    if not processes.list():
        await say(app, "No background processes (the model starts one with Bash run_in_background).")
        return

    async def closed(_: str | None) -> None:
        return None

    app.push_screen(BashesScreen(processes, app.background.ended), closed)


async def _kill_background(app: SlashApp, process_id: str) -> None:
    assert app.host is not None
    processes = app.host.agent.background
    known = processes.list()
    running = [info.id for info in known if info.status == "running"]
    info = next((i for i in known if i.id == process_id), None)
    if not process_id or info is None:
        what = f"no background process {process_id!r}" if process_id else "/bashes kill needs an ID"
        await say(app, f"error: {what} (running: {', '.join(running) or 'none'})", "error")
        return
    if info.status != "running":
        await say(app, f"{process_id} is not running ({status_text(info)}).")
        return
    await processes.kill(process_id)
    await say(app, f"Killed {process_id} ({_one_line(info.command)}).")


def _one_line(command: str, width: int = 60) -> str:
    from etcode.security.redact import redact

    flat = " ".join(redact(command).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _cell(text: str, width: int = 160) -> str:
    """A description as one table cell: one line, cut, no ``|``."""
    flat = " ".join(text.split()).replace("|", "/")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _where(app: SlashApp, path: Path) -> str:
    """``path`` relative to the project folder when inside it, else with ``~`` for home."""
    try:
        return path.relative_to(app.directory).as_posix()
    except ValueError:
        pass
    home = Path.home()
    return "~/" + path.relative_to(home).as_posix() if path.is_relative_to(home) else str(path)


_HANDLERS = {
    "new": _new,
    "sessions": _sessions,
    "agent": _agent,
    "model": _model,
    "clear": _clear,
    "compact": _compact,
    "undo": _undo,
    "export": _export,
    "skills": _skills,
    "bashes": _bashes,
}
