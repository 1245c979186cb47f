"""ACP's model selection before session config options, for editors that still use it: the
unstable ``session/set_model`` (``{sessionId, modelId}``) and ``models`` (``{availableModels:
[{modelId, name}], currentModelId}``) in the ``session/new`` and ``session/load`` answers.
The SDK no longer has either, so both are translated at the wire: the request becomes
``session/set_config_option`` with the ``model`` option, and the answers' ``model`` option
is also given as ``models``. No SDK import (the transport is on the start path)."""

from __future__ import annotations

from etcode.util.json_types import JsonObject

SET_MODEL = "session/set_model"
SET_CONFIG_OPTION = "session/set_config_option"


def incoming(message: JsonObject) -> JsonObject:
    """A ``session/set_model`` request as the ``session/set_config_option`` it means."""
    params = message.get("params")
    if message.get("method") != SET_MODEL or not isinstance(params, dict):
        return message
    meant: JsonObject = {
        "sessionId": params.get("sessionId"),
        "configId": "model",
        "value": params.get("modelId"),
    }
    return {**message, "method": SET_CONFIG_OPTION, "params": meant}


def outgoing(message: JsonObject) -> JsonObject:
    """A session's answer (it has ``modes``) with its ``model`` option also as ``models``."""
    result = message.get("result")
    if not isinstance(result, dict) or "modes" not in result:
        return message
    options = result.get("configOptions")
    found = (
        [o for o in options if isinstance(o, dict) and o.get("id") == "model"]
        if isinstance(options, list)
        else []
    )
    if not found:
        return message
    model = found[0]
    choices = model.get("options")
    available = [
        {"modelId": choice.get("value"), "name": choice.get("name")}
        for choice in (choices if isinstance(choices, list) else [])
        if isinstance(choice, dict)
    ]
    models: JsonObject = {"availableModels": available, "currentModelId": model.get("currentValue")}
    return {**message, "result": {**result, "models": models}}
