"""Exceptions that carry a one-line, user-facing message and an exit code."""

from __future__ import annotations


class EtcodeError(Exception):
    """Base of every error a user may see. ``str(err)`` is the one line to print."""

    exit_code: int = 1


class UsageError(EtcodeError):
    """Bad flags or arguments (exit code 2)."""

    exit_code = 2


class ConfigError(EtcodeError):
    """A configuration file, key or value is wrong. The message names the file and key."""

    exit_code = 1
