"""The package's import structure, read from the source (ast): lower layers never import higher ones, nothing on
the query path imports evaluation code, no folder is a drawer of more than 12 modules, and module-level imports
form no cycle — nor do any imports, deferred ones included, between modules of the package or of training/."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "components"

# a module may import its own layer and the layers below it
LAYERS = [
    {"components.core"},
    {"components.stores", "components.readers", "components.retrievers", "components.rankers", "components.routers",
     "components.expanders", "components.joiners"},
    {"components.app"},
    {"components.serving", "components.evaluation"},
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("components.")}


def _layer(module: str) -> int | None:
    for i, layer in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in layer):
            return i
    return None


def test_no_import_from_a_lower_layer_to_a_higher_one():
    bad = []
    for name, path in _modules().items():
        mine = _layer(name)
        for imp in _imports(path, top_level_only=False):
            theirs = _layer(imp)
            if mine is not None and theirs is not None and theirs > mine:
                bad.append(f"{name} imports {imp}")
    assert not bad, bad


def test_the_query_path_never_imports_evaluation():
    bad = [f"{name} imports {imp}" for name, path in _modules().items() if not name.startswith("components.evaluation")
           for imp in _imports(path, top_level_only=False) if imp.startswith("components.evaluation")]
    assert not bad, bad


def test_no_folder_holds_more_than_twelve_modules():
    crowded = {str(d.relative_to(ROOT)): n for d in [PKG, *PKG.rglob("*")] if d.is_dir() and d.name != "__pycache__"
               and (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > 12}
    assert not crowded, crowded


def test_module_level_imports_have_no_cycle():
    modules = _modules()
    graph = {name: {m for m in _imports(path, top_level_only=True) if m in modules and m != name}
             for name, path in modules.items()}
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack[stack.index(nxt):], nxt]))
            if nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a path that starts and ends at the same module, or None."""
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt, [*stack, nxt])
                if found:
                    return found
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def test_no_two_modules_import_each_other_even_inside_functions():
    """Each idea on one floor: a deferred import inside a function is still a dependency (convert.py once imported
    the loaders, which import convert.py)."""
    modules = _modules()
    graph = {name: {m for m in _imports(path, top_level_only=False) if m in modules and m != name}
             for name, path in modules.items()}
    assert _cycle(graph) is None, "import cycle: " + " -> ".join(_cycle(graph) or [])


def test_the_training_scripts_import_each_other_without_a_cycle():
    scripts = {p.stem: p for p in (ROOT / "training").glob("*.py")}
    graph = {}
    for name, path in scripts.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in scripts and m != name}
    assert _cycle(graph) is None, "import cycle: " + " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
