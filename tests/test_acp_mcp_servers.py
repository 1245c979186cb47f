"""MCP servers an editor passes with ``session/new``: what etcode makes of them."""

from __future__ import annotations

from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

from etcode.acp.mcp_servers import with_client_servers
from etcode.config.schema import Config, McpServerConfig
from etcode.mcp.config import DEFAULT_TIMEOUT, server_specs


def test_an_editors_servers_get_a_start_up_limit_for_npx_and_uvx() -> None:
    config = Config.model_validate({"mcp": {"mine": {"command": ["my-server"], "timeout": 2000}}})
    stdio = McpServerStdio(
        name="time", command="uvx", args=["mcp-server-time"], env=[EnvVariable(name="TZ", value="UTC")]
    )
    remote = HttpMcpServer(
        name="docs", url="http://127.0.0.1:9/mcp", headers=[HttpHeader(name="X-Key", value="k")], type="http"
    )
    specs = {spec.name: spec for spec in server_specs(with_client_servers(config, [stdio, remote]).mcp)}
    assert specs["time"].command == ("uvx", "mcp-server-time") and dict(specs["time"].environment) == {
        "TZ": "UTC"
    }
    assert specs["docs"].url == "http://127.0.0.1:9/mcp" and dict(specs["docs"].headers) == {"X-Key": "k"}
    # ACP lets the editor set no limit; 5 s is too short for a first `uvx`/`npx` start.
    assert specs["time"].timeout == specs["docs"].timeout == 30.0 > DEFAULT_TIMEOUT
    assert specs["mine"].timeout == 2.0  # a configured server keeps its own


def test_a_client_server_wins_a_name_clash_and_the_config_is_not_changed() -> None:
    config = Config.model_validate({"mcp": {"time": {"command": ["old"]}}})
    merged = with_client_servers(config, [McpServerStdio(name="time", command="new", args=[], env=[])])
    assert merged.mcp["time"] == McpServerConfig(command=["new"], type="local", timeout=30_000)
    assert config.mcp["time"].command == ["old"]
