"""The rooms' import rules (AGENTS.md), read from the source with ``ast``.

- Floors (``FLOORS``, lowest first): a module imports only modules of its own room or of a
  lower floor, counting ``if TYPE_CHECKING:`` and function-level imports. A room is the
  second part of a dotted name (``etcode.config.loader`` is in ``config``; ``etcode.api`` is
  its own room; ``etcode`` itself, the package's lazy exports, is the top floor, of which a
  room may import only ``__version__``).
- Persistence (``session``) never imports the loop itself (``engine.loop``) nor the workflow.
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
#: The rooms, lowest floor first: each imports only its own room and those before it.
FLOORS = (
    "util",
    "instance",
    "security",
    "provider",
    "contract",
    "permission",
    "config",
    "prompt",
    "agent",
    "tools",
    "mcp",
    "engine",
    "extensions",
    "session",
    "workflow",
    "trust",
    "doctor",
    "wiring",
    "testing",
    "conversation",
    "api",
    "ui",
    "acp",
    "cli",
    "__main__",
    "etcode",
)
#: What the top floor (the package's ``__init__``) lends every room.
PACKAGE_NAMES = frozenset({"__version__"})


@dataclass(frozen=True)
class Floor:
    """What a room may import (``only``: nothing else of etcode) or must not (``never``)."""

    only: tuple[str, ...] = ()
    never: tuple[str, ...] = ()

    def allows(self, module: str) -> bool:
        if self.only and not _within(module, self.only):
            return False
        return not _within(module, self.never)


#: Rules within the floors, ``TYPE_CHECKING`` imports included.
RULES = {
    "session": Floor(never=("etcode.engine.loop", "etcode.workflow")),
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


def room_of(module: str) -> str:
    """``etcode.config.loader`` → ``config``; ``etcode.api`` → ``api``; ``etcode`` → ``etcode``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def floor_offences(package: Path, floors: tuple[str, ...] = FLOORS) -> list[str]:
    """Each import, anywhere in a module, of a room above the module's own
    (``file:line imports module (room X is above room Y)``)."""
    known = modules(package)
    rank = {room: floor for floor, room in enumerate(floors)}
    found = []
    for name, path in known.items():
        statements = import_statements(
            path.read_text(encoding="utf-8"), module=name, package=path.name == "__init__.py"
        )
        for line, imported, names in statements:
            if imported == package.name and names and set(names) <= PACKAGE_NAMES:
                continue
            targets = [f"{imported}.{n}" if f"{imported}.{n}" in known else imported for n in names] or [
                imported
            ]
            for target in dict.fromkeys(_resolve(t, known) for t in targets):
                if target is None or target == name:
                    continue
                mine, theirs = room_of(name), room_of(target)
                where = f"{path.relative_to(package.parent)}:{line} imports {target}"
                if mine not in rank or theirs not in rank:
                    found.append(f"{where} (room {mine if mine not in rank else theirs} is not in FLOORS)")
                elif rank[theirs] > rank[mine]:
                    found.append(f"{where} (room {theirs} is above room {mine})")
    return sorted(found)


def rule_offences(package: Path, room: str, floor: Floor) -> list[str]:
    """Each import by one of ``room``'s modules that its rule does not allow."""
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


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / next(iter(files)).split("/")[0]


def test_every_module_imports_only_its_own_room_or_lower_floors() -> None:
    offences = floor_offences(PACKAGE)
    assert not offences, "\n".join(offences)


def test_every_room_is_on_a_floor() -> None:
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    rooms |= {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    assert rooms - set(FLOORS) == set()
    assert set(FLOORS) - {"etcode"} == rooms  # and no floor names a room that is gone


def test_the_floor_check_sees_type_checking_and_function_imports(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "etcode/__init__.py": "__version__ = '1'\ndef __getattr__(name):\n    from etcode.api import Agent\n",
            "etcode/api.py": "",
            "etcode/util/__init__.py": "",
            "etcode/util/errors.py": "",
            "etcode/agent/__init__.py": "",
            "etcode/agent/registry.py": "from etcode.config import loader\n",
            "etcode/config/__init__.py": "",
            "etcode/config/loader.py": "from typing import TYPE_CHECKING\n"
            "from etcode import __version__\n"
            "import etcode.util.errors\n"
            "if TYPE_CHECKING:\n    from etcode.agent.registry import Agent\n"
            "def f():\n    from etcode import api\n",
        },
    )
    floors = ("util", "config", "agent", "api", "etcode")
    assert floor_offences(package, floors) == [
        "etcode/config/loader.py:5 imports etcode.agent.registry (room agent is above room config)",
        "etcode/config/loader.py:7 imports etcode.api (room api is above room config)",
    ]
    assert floor_offences(package, ("util", "config", "api", "etcode")) == [
        "etcode/agent/registry.py:1 imports etcode.config.loader (room agent is not in FLOORS)",
        "etcode/config/loader.py:5 imports etcode.agent.registry (room agent is not in FLOORS)",
        "etcode/config/loader.py:7 imports etcode.api (room api is above room config)",
    ]


@pytest.mark.parametrize("room", sorted(RULES))
def test_each_rule_holds(room: str) -> None:
    assert rule_offences(PACKAGE, room, RULES[room]) == []


#: For each rule, an import it must refuse, hidden where a reader could miss it.
FORBIDDEN_SAMPLES = {
    "session": ("etcode/engine/loop.py", "def f():\n    from etcode.engine.loop import AgentLoop\n"),
}


@pytest.mark.parametrize("room", sorted(RULES))
def test_each_rule_catches_a_hidden_import(tmp_path: Path, room: str) -> None:
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
    assert rule_offences(package, room, RULES[room]) == [f"etcode/{room}/module.py:4 imports {imported}"]


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
