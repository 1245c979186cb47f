"""What ``etcode`` (no sub-command) was asked to open."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class TuiOptions:
    """Flags of the interactive chat. ``continue_last``/``session_id`` resume a stored
    session (issue 6's store); ``inline`` runs Textual in inline mode."""

    directory: Path | None = None
    model: str | None = None
    agent: str | None = None
    session_id: str | None = None
    continue_last: bool = False
    fork: bool = False
    inline: bool = False
    debug: bool = False
    #: ``--sandbox MODE`` (see ``etcode/security/sandbox.py``); None: as configured.
    sandbox: str | None = None
