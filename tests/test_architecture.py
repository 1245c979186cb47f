"""The rooms' import rules (AGENTS.md), read from the source with ``ast``.

Floors, lowest first: util → provider → security → contract → permission → tools → engine →
session (persistence) → workflow → wiring → api/testing → front ends (ui, cli, acp).

- A core module imports no front end, and nothing below the composition root imports it or
  the public ``Agent`` at run time (there an ``if TYPE_CHECKING:`` import is types only).
- The contract imports only provider, util and security; the security room only util and
  provider; the engine neither persistence nor wiring; persistence nothing above it. These
  count ``TYPE_CHECKING`` imports too.
- No import circle among etcode's modules, counting ``TYPE_CHECKING`` and function-level
  imports (a package's ``__init__`` is its own module).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

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


@dataclass(frozen=True)
class Floor:
    """What a room may import (``only``: nothing else of etcode) or must not (``never``)."""

    only: tuple[str, ...] = ()
    never: tuple[str, ...] = ()

    def allows(self, module: str) -> bool:
        if self.only and not _within(module, self.only):
            return False
        return not _within(module, self.never)


#: The floors' rules, ``TYPE_CHECKING`` imports included.
FLOORS = {
    "contract": Floor(only=("etcode.contract", "etcode.provider", "etcode.util", "etcode.security")),
    "security": Floor(only=("etcode.security", "etcode.util", "etcode.provider")),
    "engine": Floor(never=("etcode.session", *ABOVE_CORE, *FRONT_ENDS)),
    "session": Floor(never=("etcode.engine.loop", "etcode.workflow", *ABOVE_CORE, *FRONT_ENDS)),
}


def _within(module: str, rooms: tuple[str, ...]) -> bool:
    return any(module == room or module.startswith(room + ".") for room in rooms)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_statements(
    source: str, *, module: str = "", package: bool = False, type_checking: bool = True
) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """``(line, module, names)`` for each import anywhere in a file, inside functions too:
    ``import a.b`` gives ``a.b`` and no names, ``from a import b, c`` gives ``a`` and
    ``(b, c)``. Relative imports are resolved against ``module`` (a package's own name
    when ``package``). ``type_checking=False`` skips what ``if TYPE_CHECKING:`` holds."""

    def visit(node: ast.AST) -> Iterator[tuple[int, str, tuple[str, ...]]]:
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if package else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            yield node.lineno, base, tuple(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            yield from visit(child)

    yield from visit(ast.parse(source))


def runtime_imports(source: str) -> set[str]:
    """Modules a file imports when it runs: at the top, inside functions, anywhere but
    under ``if TYPE_CHECKING:``."""
    found: set[str] = set()
    for _, module, names in import_statements(source, type_checking=False):
        found.add(module)
        found.update(f"{module}.{name}" for name in names)
    return found


def modules(package: Path) -> dict[str, Path]:
    """Every module of a package by its dotted name (a package's ``__init__`` by the package's)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def import_graph(package: Path, *, type_checking: bool = True) -> dict[str, dict[str, int]]:
    """Each module's imports of the package's own modules, with the line of the first:
    ``from a import b`` imports the submodule ``a.b`` when there is one, else ``a``."""
    known = modules(package)
    graph: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges: dict[str, int] = {}
        statements = import_statements(
            path.read_text(encoding="utf-8"),
            module=name,
            package=path.name == "__init__.py",
            type_checking=type_checking,
        )
        for line, imported, names in statements:
            targets = [f"{imported}.{n}" if f"{imported}.{n}" in known else imported for n in names] or [
                imported
            ]
            for target in targets:
                resolved = _resolve(target, known)
                if resolved and resolved != name:
                    edges.setdefault(resolved, line)
        graph[name] = edges
    return graph


def _reachable(graph: dict[str, dict[str, int]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return seen


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import circles: groups of modules each of which reaches every other one."""
    reach = {module: _reachable(graph, module) for module in graph}
    groups = {
        frozenset({module, *(other for other in reach[module] if module in reach[other])})
        for module in graph
        if module in reach[module]
    }
    return sorted(sorted(group) for group in groups)


def describe(graph: dict[str, dict[str, int]], found: list[list[str]]) -> str:
    """The circles with the imports that close them (``importer:line → imported``)."""
    lines = [f"{len(found)} import circle(s):"]
    for group in found:
        lines.append("  " + " ".join(group))
        for module in group:
            lines.extend(
                f"    {module}:{line} → {target}"
                for target, line in sorted(graph[module].items())
                if target in group
            )
    return "\n".join(lines)


def floor_offences(package: Path, room: str, floor: Floor) -> list[str]:
    """Each import by one of ``room``'s modules that its floor does not allow."""
    graph = import_graph(package)
    known = modules(package)
    prefix = f"{package.name}.{room}"
    return [
        f"{known[module].relative_to(package.parent)}:{line} imports {target}"
        for module in sorted(graph)
        if _within(module, (prefix,))
        for target, line in sorted(graph[module].items())
        if not floor.allows(target)
    ]


def _offences(forbidden: tuple[str, ...]) -> list[str]:
    offences = []
    for room in CORE:
        for path in sorted((PACKAGE / room).rglob("*.py")):
            for module in sorted(runtime_imports(path.read_text(encoding="utf-8"))):
                if module == "etcode" or any(module == f or module.startswith(f + ".") for f in forbidden):
                    offences.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    return offences


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / next(iter(files)).split("/")[0]


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
    assert all((PACKAGE / room).is_dir() for room in FLOORS)


@pytest.mark.parametrize("room", sorted(FLOORS))
def test_each_floor_imports_only_what_it_may(room: str) -> None:
    assert floor_offences(PACKAGE, room, FLOORS[room]) == []


#: For each floor, an import it must refuse, hidden where a reader could miss it.
FORBIDDEN_SAMPLES = {
    "contract": ("etcode/engine/loop.py", "if TYPE_CHECKING:\n    from etcode.engine.loop import Loop\n"),
    "security": ("etcode/tools/bash.py", "def f():\n    from etcode.tools import bash\n"),
    "engine": ("etcode/session/store.py", "if TYPE_CHECKING:\n    import etcode.session.store\n"),
    "session": ("etcode/wiring/runtime.py", "def f():\n    from etcode.wiring.runtime import Runtime\n"),
}


@pytest.mark.parametrize("room", sorted(FLOORS))
def test_each_floor_rule_catches_a_hidden_import(tmp_path: Path, room: str) -> None:
    target, body = FORBIDDEN_SAMPLES[room]
    package = _write(
        tmp_path,
        {
            "etcode/__init__.py": "",
            f"etcode/{room}/__init__.py": "",
            target: "",
            "etcode/util/errors.py": "",
            f"etcode/{room}/module.py": "from typing import TYPE_CHECKING\nimport etcode.util.errors\n"
            + body,
        },
    )
    imported = target.removesuffix(".py").replace("/", ".")
    assert floor_offences(package, room, FLOORS[room]) == [f"etcode/{room}/module.py:4 imports {imported}"]


def test_the_circle_finder_counts_type_checking_function_and_submodule_imports(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.d import VALUE\n",
            "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
            "pkg/b.py": "def f():\n    from pkg import c\n",
            "pkg/c.py": "import pkg.a\n",
            "pkg/d.py": "from pkg.a import A\nVALUE = 1\n",
            "pkg/e.py": "from pkg import VALUE\n",
            "pkg/inner/__init__.py": "from . import f\n",
            "pkg/inner/f.py": "from ..inner import g\n",
            "pkg/inner/g.py": "from pkg import inner\n",
        },
    )
    graph = import_graph(package)
    assert graph["pkg.b"] == {"pkg.c": 2}
    assert graph["pkg.e"] == {"pkg": 1}
    found = circles(graph)
    assert found == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.inner", "pkg.inner.f", "pkg.inner.g"]]
    assert "pkg.a:3 → pkg.b" in describe(graph, found)
    assert circles(import_graph(package, type_checking=False)) == [
        ["pkg.inner", "pkg.inner.f", "pkg.inner.g"]
    ]


def test_no_import_circle() -> None:
    graph = import_graph(PACKAGE)
    found = circles(graph)
    assert not found, describe(graph, found)
