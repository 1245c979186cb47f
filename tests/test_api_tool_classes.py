"""Issue 33: the agent-loop design's tool classes (``@tool`` methods of a class offered as
``{tool_prefix or ClassName}_{method}``) and its ``Tool`` interface (``to_openai_schema``,
``execute``, ``parameters``, ``function``, ``is_async``) on etcode's tools. The intent of the
design's tests/test_tool.py, in our own code; the runs go over real HTTP to the fake LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from etcode import Agent, Tool, tool
from tests.fake_llm import Call, FakeLLM, Reply


def agent_for(llm: FakeLLM, project: Path, **kwargs: Any) -> Agent:
    return Agent(
        "openai/test-model",
        api_key="k",
        base_url=llm.openai_base_url,
        directory=project,
        store=False,
        builtin_tools=False,
        **kwargs,
    )


def offline(tools: list[Any]) -> Agent:
    """An agent that never runs: what its ``tools=`` became (``custom_tools``)."""
    return Agent("openai/test-model", api_key="k", base_url="http://127.0.0.1:9/v1", store=False, tools=tools)


def named(agent: Agent) -> dict[str, Tool]:
    return {t.name: t for t in agent.custom_tools}


class Notes:
    """A tool class with state, as the design's examples have (exa_search_class_tools.py)."""

    def __init__(self, owner: str = "ann") -> None:
        self.owner = owner
        self.searches: list[str] = []

    @tool
    def search(self, query: str, limit: int = 3) -> str:
        """Search the notes.

        Args:
            query: words to look for
            limit: at most this many notes
        """
        self.searches.append(query)
        return f"{self.owner}'s notes on {query} (at most {limit}, search {len(self.searches)})"

    @tool
    async def count(self) -> str:
        """How many searches ran."""
        return str(len(self.searches))

    def helper(self) -> str:  # not marked: not a tool
        return "no"

    @tool
    def _secret(self) -> str:
        """Private: never offered."""
        return "hidden"


# ---- @tool on methods ---------------------------------------------------------------


def test_tool_on_a_method_marks_it_and_keeps_it_a_method() -> None:
    assert not isinstance(Notes.__dict__["search"], Tool)
    assert getattr(Notes.search, "_tool_marker", False) is True  # the design's mark
    assert Notes("bob").search("cats", 2) == "bob's notes on cats (at most 2, search 1)"


def test_tool_on_a_standalone_function_still_makes_a_tool() -> None:
    @tool
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    assert isinstance(ping, Tool)
    assert ping.name == "ping"
    assert ping("example.org") == "example.org"  # still callable as the function


def test_tool_over_staticmethod_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"@tool goes under @staticmethod, not over it \(on ping\)"):

        class Wrong:
            @tool
            @staticmethod
            def ping() -> str:
                return "pong"


# ---- registration -------------------------------------------------------------------


def test_an_instance_offers_its_public_marked_methods_under_the_class_name() -> None:
    tools = named(offline([Notes()]))
    assert list(tools) == ["Notes_search", "Notes_count"]


def test_tool_prefix_names_the_tools() -> None:
    class Files:
        tool_prefix = "fm"

        @tool
        def read_file(self, path: str) -> str:
            """Read a file."""
            return path

        @tool
        def write_file(self, path: str, content: str) -> str:
            """Write a file."""
            return path

    assert list(named(offline([Files()]))) == ["fm_read_file", "fm_write_file"]


def test_a_class_is_made_with_no_arguments() -> None:
    tools = named(offline([Notes]))
    assert list(tools) == ["Notes_search", "Notes_count"]


def test_a_class_that_needs_arguments_says_to_pass_an_instance() -> None:
    class NeedsKey:
        def __init__(self, key: str) -> None:
            self.key = key

        @tool
        def call(self, x: str) -> str:
            """Call."""
            return x

    with pytest.raises(
        TypeError, match=r"^tool class NeedsKey cannot be made with no arguments .*pass an instance"
    ):
        offline([NeedsKey])


def test_a_class_without_tool_methods_is_an_error() -> None:
    class Plain:
        def helper(self) -> str:
            return "x"

    with pytest.raises(TypeError, match=r"^tool class Plain has no @tool method"):
        offline([Plain])


def test_an_object_that_is_neither_says_what_tools_takes() -> None:
    class Plain:
        pass

    with pytest.raises(TypeError, match="a tool must be a Tool, a dict, a function or a tool class"):
        offline([Plain()])


def test_static_class_and_inherited_methods_are_tools() -> None:
    class Base:
        tool_prefix = "u"

        @tool
        def base_op(self) -> str:
            """From the base class."""
            return "base"

    class Utils(Base):
        @staticmethod
        @tool
        def add(a: int, b: int) -> str:
            """Add two numbers.

            Args:
                a: the first
                b: the second
            """
            return str(a + b)

        @classmethod
        @tool
        def build(cls, item: str) -> str:
            """Build an item."""
            return f"{cls.__name__}:{item}"

    tools = named(offline([Utils()]))
    assert list(tools) == ["u_base_op", "u_add", "u_build"]
    assert tools["u_add"].description == "Add two numbers."
    assert "cls" not in tools["u_build"].to_openai_schema()["function"]["parameters"]["properties"]


async def test_static_and_class_methods_execute() -> None:
    class Utils:
        tool_prefix = "u"

        @staticmethod
        @tool
        def add(a: int, b: int) -> str:
            """Add."""
            return str(a + b)

        @classmethod
        @tool
        def build(cls, item: str) -> str:
            """Build."""
            return f"{cls.__name__}:{item}"

    tools = named(offline([Utils]))
    assert await tools["u_add"].execute({"a": 3, "b": 7}) == "10"
    assert await tools["u_build"].execute({"item": "widget"}) == "Utils:widget"


def test_the_schema_has_no_self_and_takes_the_docstring() -> None:
    schema = named(offline([Notes()]))["Notes_search"].to_openai_schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "Notes_search"
    assert function["description"] == "Search the notes."
    params = function["parameters"]
    assert list(params["properties"]) == ["query", "limit"]
    assert params["required"] == ["query"]
    assert params["properties"]["query"]["description"] == "words to look for"
    assert params["properties"]["limit"]["type"] == "integer"


def test_tool_options_on_a_method_are_kept() -> None:
    class Shelf:
        @tool(read_only=True, description="Look at the shelf.", name="look")
        def peek(self) -> str:
            return "books"

    (only,) = offline([Shelf()]).custom_tools
    assert (only.name, only.description, only.is_read_only) == ("Shelf_look", "Look at the shelf.", True)


async def test_tools_of_one_object_share_its_state() -> None:
    notes = Notes()
    tools = named(offline([notes]))
    assert await tools["Notes_search"].execute({"query": "a"}) == "ann's notes on a (at most 3, search 1)"
    assert (
        await tools["Notes_search"].execute({"query": "b", "limit": "5"})
        == "ann's notes on b (at most 5, search 2)"
    )
    assert notes.searches == ["a", "b"]
    assert tools["Notes_count"].is_async is True  # type: ignore[attr-defined]
    assert await tools["Notes_count"].execute({}) == "2"


# ---- names ---------------------------------------------------------------------------


def test_two_tools_with_one_name_are_an_error_naming_both() -> None:
    @tool
    def Notes_search(query: str) -> str:  # noqa: N802
        """Shadow."""
        return query

    with pytest.raises(
        TypeError, match=r"^two tools are named 'Notes_search': .*Notes\.search and .*Notes_search"
    ):
        offline([Notes(), Notes_search])
    with pytest.raises(TypeError, match="two tools are named 'Notes_search'"):
        offline([Notes(), Notes()])


def test_add_tools_checks_names_against_the_tools_given_before() -> None:
    agent = offline([Notes()])
    with pytest.raises(TypeError, match="two tools are named 'Notes_search'"):
        agent.add_tools([Notes])


def test_a_class_tool_with_a_built_in_name_is_an_error_naming_both() -> None:
    class Todo:
        tool_prefix = "todo"

        @tool
        def write(self, text: str) -> str:
            """Write."""
            return text

    with pytest.raises(
        TypeError, match=r"tool class Todo: its tool 'todo_write' has the name of the built-in tool TodoWrite"
    ):
        offline([Todo()])


def test_a_prefix_providers_refuse_is_an_error() -> None:
    class Web:
        tool_prefix = "web search"

        @tool
        def find(self, q: str) -> str:
            """Find."""
            return q

    with pytest.raises(
        TypeError, match=r"tool class Web: tool name 'web search_find' is not one providers accept"
    ):
        offline([Web()])


# ---- the design's Tool interface on etcode's tools ------------------------------------


def test_to_openai_schema_and_attributes_of_a_function_tool() -> None:
    @tool
    def search(query: str, max_results: int = 5, verbose: bool = False, ratio: float = 1.0) -> str:
        """Search the web.

        Args:
            query: the words
        """
        return query

    schema = search.to_openai_schema()
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "search"
    assert schema["function"]["description"] == "Search the web."
    params = schema["function"]["parameters"]
    assert params is search.parameters or params == search.parameters
    types = {name: prop["type"] for name, prop in params["properties"].items()}
    assert types == {"query": "string", "max_results": "integer", "verbose": "boolean", "ratio": "number"}
    assert params["required"] == ["query"]
    assert search.function.__name__ == "search"
    assert search.is_async is False


def test_to_openai_schema_of_a_dict_tool_is_its_schema() -> None:
    def add(a: int) -> int:
        return a

    parameters = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    (made,) = offline(
        [{"name": "add", "description": "Add.", "parameters": parameters, "function": add}]
    ).custom_tools
    assert made.to_openai_schema() == {
        "type": "function",
        "function": {"name": "add", "description": "Add.", "parameters": parameters},
    }


async def test_execute_runs_sync_and_async_functions_with_coerced_arguments() -> None:
    @tool
    def add(a: int, b: int) -> str:
        """Add."""
        return str(a + b)

    @tool
    async def aadd(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool
    def flags(on: bool, items: list[int]) -> str:
        """Flags."""
        return json.dumps([on, items])

    assert await add.execute({"a": 1, "b": 2}) == "3"
    assert await add.execute({"a": "265", "b": 0}) == "265"
    assert await aadd.execute({"a": 1, "b": 2}) == "3"
    assert aadd.is_async is True
    assert await flags.execute({"on": "yes", "items": [1, "2"]}) == "[true, [1, 2]]"


async def test_execute_returns_a_failure_as_text() -> None:
    @tool
    def bad(x: str) -> str:
        """Fails."""
        raise ValueError("no such thing")

    assert await bad.execute({"x": "t"}) == "bad failed: ValueError: no such thing"
    assert (await bad.execute({"y": 1})).startswith("Invalid arguments for bad: x: Field required")


# ---- a real run ----------------------------------------------------------------------


def test_the_model_calls_a_method_of_the_object_given(llm: FakeLLM, project: Path) -> None:
    notes = Notes(owner="zoe")
    llm.script(
        Reply(calls=[Call("Notes_search", {"query": "cats", "limit": 2})]),
        Reply(calls=[Call("Notes_count", {})]),
        Reply(text="found them"),
    )
    result = agent_for(llm, project, tools=[notes]).run_sync("find my notes on cats")
    assert result.text == "found them"
    assert notes.searches == ["cats"]
    offered = [t["function"]["name"] for t in llm.requests[0].body["tools"]]
    assert offered[:2] == ["Notes_search", "Notes_count"]
    assert "_secret" not in str(offered) and "helper" not in str(offered)
    search_schema = llm.requests[0].body["tools"][0]["function"]["parameters"]
    assert "self" not in search_schema["properties"]
    sent = json.dumps(llm.requests[1].body["messages"][-1])
    assert "zoe's notes on cats (at most 2, search 1)" in sent
    last = llm.requests[2].body["messages"][-1]
    assert (last["role"], last["content"]) == ("tool", "1")  # the search ran on the same object


# ---- the design's examples/exa_search_class_tools.py, re-created ----------------------


class SearchServer:
    """A search API on 127.0.0.1 that checks the key it is sent (the example's Exa)."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.queries: list[tuple[str, str]] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.queries.append((self.headers.get("x-api-key", ""), body["query"]))
                results = [{"title": f"About {body['query']}", "url": "http://example.test/1"}]
                payload = json.dumps({"results": results[: body["numResults"]]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/search"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=30)


class WebTools:
    """The example's tool class: configuration given to the constructor, shared by its tools."""

    tool_prefix = "exa"

    def __init__(self, api_key: str = "", api_url: str = "", request_timeout: int = 30) -> None:
        self.api_key = api_key
        self.api_url = api_url
        self.timeout = request_timeout

    @tool
    def search(self, query: str, num_results: int = 5) -> str:
        """Search the web.

        Args:
            query: what to search for
            num_results: how many results, 5 by default
        """
        import urllib.request

        if not self.api_key:
            return "error: no API key"
        request = urllib.request.Request(
            self.api_url,
            data=json.dumps({"query": query, "numResults": num_results}).encode(),
            headers={"Content-Type": "application/json", "x-api-key": self.api_key},
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            results = json.loads(response.read())["results"]
        return "\n".join(f"[{i}] {r['title']} {r['url']}" for i, r in enumerate(results, 1))

    @tool
    async def fetch_webpage(self, url: str, max_length: int = 8000) -> str:
        """Fetch a page as Markdown.

        Args:
            url: the page's address
            max_length: at most this many characters
        """
        return f"# page {url}"[:max_length]


async def test_the_class_tools_example_runs(llm: FakeLLM, project: Path) -> None:
    from etcode import EventType

    search_api = SearchServer()
    try:
        web_tools = WebTools(api_key="exa-key", api_url=search_api.url)
        llm.script(
            Reply(calls=[Call("exa_search", {"query": "tide tables", "num_results": 1})]),
            Reply(calls=[Call("exa_fetch_webpage", {"url": "http://example.test/1"})]),
            Reply(text="High tide is at noon [1]."),
        )
        agent = Agent(
            name="Search assistant",
            model="test-model",
            api_key="k",
            base_url=llm.openai_base_url,
            tools=[web_tools],
            system_prompt="You find and cite information.",
            thinking_level="off",
            emit_reasoning_events=False,
            directory=project,
            store=False,
            builtin_tools=False,
        )
        events = [event async for event in agent.arun_stream("When is high tide?")]
    finally:
        search_api.close()
    assert search_api.queries == [("exa-key", "tide tables")]
    actions = [e.data["tool"] for e in events if e.type is EventType.ACTION]
    observations = [(e.data["tool"], e.data["result"]) for e in events if e.type is EventType.OBSERVATION]
    assert actions == ["exa_search", "exa_fetch_webpage"]
    assert observations == [
        ("exa_search", "[1] About tide tables http://example.test/1"),
        ("exa_fetch_webpage", "# page http://example.test/1"),
    ]
    assert events[-1].type is EventType.LOOP_END
    assert events[-1].data["content"] == "High tide is at noon [1]."
