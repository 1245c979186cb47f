"""The session's selectors offered to the editor as ACP session config options: ``mode``
(etcode's primary agents, as ``modes`` offers them) and ``model`` (the configured and known
models, as the chat's ``/model`` lists them). ``session/set_config_option`` sets either; the
installed ACP SDK has no ``session/set_model`` (the protocol replaced that unstable method
with these options)."""

from __future__ import annotations

from typing import TypeAlias

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionModeState,
)

#: A config option as the SDK's responses list them.
ConfigOption: TypeAlias = SessionConfigOptionSelect | SessionConfigOptionBoolean

MODE = "mode"
MODEL = "model"
OPTIONS = (MODE, MODEL)


def config_options(modes: SessionModeState, models: list[str], model: str) -> list[ConfigOption]:
    """The ``mode`` and ``model`` selectors with their current values."""
    mode_choices = [
        SessionConfigSelectOption(value=mode.id, name=mode.name, description=mode.description)
        for mode in modes.available_modes
    ]
    model_choices = [SessionConfigSelectOption(value=name, name=name) for name in models]
    return [
        SessionConfigOptionSelect(
            id=MODE,
            name="Mode",
            description="The agent that runs the next turn",
            category="mode",
            type="select",
            current_value=modes.current_mode_id,
            options=mode_choices,
        ),
        SessionConfigOptionSelect(
            id=MODEL,
            name="Model",
            description="The model of the next turn",
            category="model",
            type="select",
            current_value=model,
            options=model_choices,
        ),
    ]


def unknown_model(model: str, models: list[str], shown: int = 8) -> str:
    """The error line of a model id that is not offered."""
    listed = ", ".join(models[:shown]) + (f" and {len(models) - shown} more" if len(models) > shown else "")
    return f"unknown model {model}; models: {listed or 'none configured'}"
