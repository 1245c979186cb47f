"""The built-in tools are offered from a generated catalog and imported on first use.

The catalog (etcode/tools/builtin_catalog.json) must say exactly what the tools themselves
say, a LazyTool must behave as the tool it stands for, and a run that calls no tool must
not import the tool modules.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from etcode.tools.base import ToolError
from etcode.tools.builtin_catalog import BUILTIN_CLASSES, CATALOG_FILE, generate, load_class, render
from etcode.tools.lazy import LazyTool
from etcode.tools.registry import builtin_tools
from tests.cli_helpers import write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tool_support import make_ctx

TOOL_MODULES = sorted(path.partition(":")[0] for path in BUILTIN_CLASSES)


def test_the_catalog_says_what_the_tools_say() -> None:
    assert CATALOG_FILE.read_text(encoding="utf-8") == render(generate()), (
        "etcode/tools/builtin_catalog.json is stale: run `python -m etcode.tools.builtin_catalog`"
    )


@pytest.mark.parametrize("path", BUILTIN_CLASSES)
def test_a_lazy_tool_is_the_tool_it_stands_for(path: str) -> None:
    real = load_class(path)()
    (lazy,) = [tool for tool in builtin_tools() if tool.name == real.name]
    assert isinstance(lazy, LazyTool)
    assert lazy.schema() == real.schema()
    assert (lazy.description, lazy.is_read_only, lazy.checks_permission) == (
        real.description,
        real.is_read_only,
        real.checks_permission,
    )
    assert lazy.Params is type(real).Params
    with pytest.raises(ToolError, match=f"Invalid arguments for {real.name}"):
        lazy.parse({"no_such_argument": 1})


async def test_a_lazy_tool_runs_and_summarises_as_the_real_one(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    (read_file,) = [tool for tool in builtin_tools() if tool.name == "ReadFile"]
    arguments = {"file_path": "notes.txt"}
    ctx = make_ctx(tmp_path)
    result = await read_file.run(read_file.parse(arguments), ctx)
    assert result.output.splitlines()[:2] == ["     1\tone", "     2\ttwo"]
    assert read_file.params_summary(arguments) == "notes.txt"
    assert read_file.result_summary(arguments, result) == "Read 2 lines"


def test_a_lazy_tool_imports_its_module_on_first_use() -> None:
    code = (
        "import sys\n"
        "from etcode.tools.registry import builtin_tools\n"
        "tools = {t.name: t for t in builtin_tools()}\n"
        "schemas = [t.schema() for t in tools.values()]\n"
        f"print(sorted(m for m in {TOOL_MODULES!r} if m in sys.modules))\n"
        "tools['Edit'].parse({'file_path': 'a', 'old_string': 'x', 'new_string': 'y'})\n"
        f"print(sorted(m for m in {TOOL_MODULES!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "['etcode.tools.edit']"]


def test_a_run_imports_only_the_tools_it_calls(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "notes.txt").write_text("the number is 42\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="It is 42."),
    )
    # etcode's own entry point, telling at exit which tool modules it imported
    code = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: print('imported:', sorted(m for m in {TOOL_MODULES!r} if m in sys.modules),"
        " file=sys.stderr))\n"
        "sys.argv = ['etcode', 'run', 'what number?']\n"
        "runpy.run_module('etcode', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.endswith("It is 42.\n")
    assert "● ReadFile (notes.txt)" in proc.stderr
    assert "imported: ['etcode.tools.read_file']" in proc.stderr
    tool_names = [t["function"]["name"] for t in llm.requests[0].body["tools"]]
    assert tool_names[:3] == ["ReadFile", "ReadManyFiles", "ListFiles"]  # all offered all the same
