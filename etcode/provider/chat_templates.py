"""A chat template's family, named from its source (llama.cpp's ``/props`` ``chat_template``),
for the warning that a server's template cannot use tools."""

from __future__ import annotations

import re

#: llama.cpp's own ChatML template, used when the model file carries none (common/chat.cpp).
_FALLBACK = (
    "{%- for message in messages -%}\n"
    "  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "  {{- '<|im_start|>assistant\n' -}}\n"
    "{%- endif -%}"
)
#: Marker → family, the first that occurs wins.
_FAMILIES = (
    ("<start_of_turn>", "Gemma"),
    ("<|start_header_id|>", "Llama 3"),
    ("<|channel|>", "gpt-oss (harmony)"),
    ("<|START_OF_TURN_TOKEN|>", "Command R"),
    ("<｜User｜>", "DeepSeek"),
    ("<|im_start|>", "ChatML"),
    ("[INST]", "Mistral/Llama 2 [INST]"),
    ("<|user|>", "Phi/Zephyr"),
)


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def template_name(source: str) -> str:
    """``"Gemma"``, ``"ChatML"``…; ``"llama.cpp's default ChatML (the model file has none)"``
    for the fallback; ``""`` when the source is empty or unknown."""
    if not source.strip():
        return ""
    if _squeezed(source) == _squeezed(_FALLBACK):
        return "llama.cpp's default ChatML (the model file has none)"
    return next((family for marker, family in _FAMILIES if marker in source), "")
