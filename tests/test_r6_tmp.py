import json
from pathlib import Path
from tests.cli_helpers import etcode
from tests.fake_llm import FakeLLM
from tests.test_server_window import write_ollama_config

def test_models_ollama_lists_the_configured_model_twice(project: Path, llm: FakeLLM):
    llm.page("GET /api/tags", {"models": [{"name": "qwen2.5-coder:latest"}, {"name": "llama3.2:latest"}]})
    llm.page("POST /api/show", {"parameters": "num_ctx 8192", "capabilities": ["tools"]})
    write_ollama_config(project, llm)
    out = etcode("models", "--json", cwd=project)
    rows = json.loads(out.stdout)
    print([ (r["id"], r.get("served"), r.get("context")) for r in rows])
    table = etcode("models", cwd=project)
    print(table.stdout)
    ids = [r["id"] for r in rows]
    assert not ("ollama/qwen2.5-coder" in ids and "ollama/qwen2.5-coder:latest" in ids), ids
