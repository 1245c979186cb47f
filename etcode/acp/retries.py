"""A provider's retry (after a 429, a 503, a cut connection) as one line for the editor:
``Rate limited (429); retrying in 1.0 s (attempt 2 of 3)``."""

from __future__ import annotations

from etcode.contract import events as ev

_LEADS = {429: "Rate limited", 503: "Overloaded", 529: "Overloaded", 408: "Timed out"}


def retry_line(event: ev.RetryEvent) -> str:
    """What failed, when the next attempt starts and how many there are."""
    if event.status is None:
        lead = f"Request failed ({event.reason})"
    else:
        name = _LEADS.get(event.status, "Server error" if event.status >= 500 else "Request failed")
        lead = f"{name} ({event.status})"
    of = f" of {event.attempts}" if event.attempts else ""
    return f"{lead}; retrying in {event.delay:.1f} s (attempt {event.attempt + 1}{of})"
