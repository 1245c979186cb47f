"""``etcode sessions list|show|export|delete``, ``etcode undo`` and ``etcode models``.

Typer wiring only; each command imports what it needs inside the function. Errors are
``EtcodeError``s, which the entry point prints as one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from etcode.util.json_types import JsonObject

sessions_app = typer.Typer(help="Stored sessions: list, show, export, delete.", no_args_is_help=True)


@sessions_app.callback()
def _sessions() -> None:
    """Stored sessions: list, show, export, delete."""


def add_session_commands(app: typer.Typer) -> None:
    """Register ``sessions``, ``undo`` and ``models`` on the main app."""
    app.add_typer(sessions_app, name="sessions", help="Stored sessions: list, show, export, delete.")
    app.command("undo", help="Restore the files the last turn's WriteFile/Edit calls changed.")(undo)
    app.command("models", help="Configured providers' models with context limits and prices.")(models)


@sessions_app.command("list")
def list_sessions(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
    all_projects: Annotated[bool, typer.Option("--all", "-a", help="Sessions of every project.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most N sessions.", min=1)] = 50,
) -> None:
    """Sessions of this project, most recent first: id, title, updated, messages, cost."""
    from etcode.cli import session_views as views

    store = views.open_store()
    project = None if all_projects else views.project_id()
    items = store.list_sessions(project, limit=limit)
    if as_json:
        views.print_json([item.to_dict() for item in items])
    else:
        views.print_session_table(items)


@sessions_app.command("show")
def show(session_id: Annotated[str, typer.Argument(help="Session id (a unique prefix is enough).")]) -> None:
    """Print a session's transcript."""
    from etcode.cli import session_views as views

    store = views.open_store()
    info = views.find(store, session_id)
    transcript = store.transcript(info.id, images=False)  # labels only: no image is read
    views.print_transcript(info, transcript)


@sessions_app.command("export")
def export(
    session_id: Annotated[str, typer.Argument(help="Session id (a unique prefix is enough).")],
) -> None:
    """Print a session as JSON: its details, every message, todos and usage."""
    from etcode.cli import session_views as views

    store = views.open_store()
    info = views.find(store, session_id)
    data: JsonObject = {
        "session": info.to_dict(),
        "messages": [m.to_dict() for m in store.transcript(info.id)],
        "todos": store.load_todos(info.id),
        "usage": store.usage_rows(info.id),
    }
    from etcode.security.redact import redact_export

    views.print_json(redact_export(data, views.session_config(info)))


@sessions_app.command("delete")
def delete(session_id: Annotated[str, typer.Argument(help="Session id (the full id).")]) -> None:
    """Delete a stored session (its files on disk are not touched)."""
    from etcode.cli import session_views as views

    store = views.open_store()
    info = views.find(store, session_id, exact=True)
    with views.holding(store, info.id) as lock:
        store.delete_session(info.id)
        lock.path.unlink(missing_ok=True)
    typer.echo(f"Deleted session {info.id} ({info.title}).")


def undo(
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Session id (default: this project's latest).")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Restore files changed since etcode wrote them (overwriting those changes); "
            "a changed file the turn created is still kept.",
        ),
    ] = False,
) -> None:
    """Restore the files the last turn's WriteFile/Edit calls changed (works without git).
    Files changed since etcode wrote them stop it (all listed, nothing undone) unless
    --force. Run it again to go back another turn."""
    from etcode.cli import session_views as views
    from etcode.session.snapshots import undo_last_turn

    store = views.open_store()
    info = views.find(store, session, flag="--session") if session else views.latest(store)
    with views.holding(store, info.id):
        report = undo_last_turn(store, info.id, note=True, force=force)
    if report is None:
        typer.echo(f"Nothing to undo in session {info.id}.", err=True)
        return
    views.print_undo(report.lines())
    if report.incomplete:
        from etcode.util.errors import EtcodeError

        raise EtcodeError("undo incomplete: some files could not be restored (see above)")


def models(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """The models of the configured providers, with context/output limits and prices."""
    from etcode.cli import session_views as views

    entries, default = views.configured_models()
    if as_json:
        views.print_json(
            [
                {**e.to_dict(), "default": e.full_id == default, "served": views.SERVED in e.sources}
                for e in entries
            ]
        )
    else:
        views.print_models_table(entries, default)
