"""The warning for a chat template without tools names the template llama.cpp's ``/props``
shows, and no longer tells the user to add ``--jinja`` (current llama.cpp turns it on by
default, and /props does not say it is off: the template is what lacks tools)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etcode.provider.chat_templates import _FALLBACK, template_name
from etcode.provider.discovery import parse_props
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import FakeLLM, Reply

SERVERS = Path(__file__).parent / "fixtures" / "servers"


@pytest.fixture(autouse=True)
def patient_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")


def test_a_gemma_template_is_named_and_jinja_is_not_asked_for(project: Path, llm: FakeLLM) -> None:
    """/props recorded from a real llama-server started with --jinja and Gemma 2's template
    (llama.cpp's models/templates/google-gemma-2-2b-it.jinja): supports_tools false."""
    body = json.loads((SERVERS / "llama-props-gemma.json").read_text())
    assert body["chat_template_caps"]["supports_tools"] is False
    llm.page("GET /props", body).script(Reply(text="text only"))
    write_config(project, llm)
    proc = etcode("run", "hello", cwd=project)
    assert proc.returncode == 0, proc.stderr
    (warning,) = [line for line in proc.stderr.splitlines() if "cannot use tools" in line]
    assert "its chat template (Gemma) has no tool support" in warning
    assert "--jinja" not in warning
    assert "--chat-template-file" in warning


def test_template_families_from_recorded_bodies() -> None:
    smollm2 = parse_props(json.loads((SERVERS / "llama-props.json").read_text()))
    assert smollm2 is not None and smollm2.template == "ChatML"
    gemma = parse_props(json.loads((SERVERS / "llama-props-gemma.json").read_text()))
    assert gemma is not None and gemma.template == "Gemma"
    assert template_name(_FALLBACK) == "llama.cpp's default ChatML (the model file has none)"
    assert template_name("{{ messages }}") == ""
