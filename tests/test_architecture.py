"""The rooms' import rules (AGENTS.md), read from the source: a core module imports no
front end, and nothing below the composition root imports it or the public ``Agent``
at run time (``if TYPE_CHECKING:`` imports are types only and allowed)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "etcode"
#: The rooms below the composition root (``wiring``) and the public API.
CORE = (
    "contract",
    "engine",
    "security",
    "session",
    "tools",
    "provider",
    "prompt",
    "config",
    "permission",
    "agent",
    "mcp",
    "workflow",
    "util",
    "doctor",
)
FRONT_ENDS = ("etcode.ui", "etcode.cli", "etcode.acp")
ABOVE_CORE = ("etcode.api", "etcode.wiring", "etcode.testing")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(source: str) -> set[str]:
    """Modules a file imports when it runs: at the top, inside functions, anywhere but
    under ``if TYPE_CHECKING:``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def _offences(forbidden: tuple[str, ...]) -> list[str]:
    offences = []
    for room in CORE:
        for path in sorted((PACKAGE / room).rglob("*.py")):
            for module in sorted(runtime_imports(path.read_text(encoding="utf-8"))):
                if module == "etcode" or any(module == f or module.startswith(f + ".") for f in forbidden):
                    offences.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    return offences


def test_the_reader_sees_through_functions_but_not_type_checking_blocks() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from etcode.api import Agent\n"
        "def f():\n    from etcode.wiring.runtime import Runtime\n"
        "import etcode.ui.plain\n"
    )
    assert runtime_imports(source) >= {"etcode.wiring.runtime", "etcode.ui.plain"}
    assert not any(name.startswith("etcode.api") for name in runtime_imports(source))


def test_the_core_imports_no_front_end() -> None:
    assert _offences(FRONT_ENDS) == []


def test_nothing_below_the_composition_root_imports_it_or_the_public_agent() -> None:
    assert _offences(ABOVE_CORE) == []


def test_every_core_room_is_checked() -> None:
    assert all((PACKAGE / room).is_dir() for room in CORE)
