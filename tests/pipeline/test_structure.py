"""Issue 36: the engine's wiring stays as simple as its stages. No module of analysis/ imports one
that imports it back (every import counts: at the top, inside a function, or for type checking
only), and no function of analysis/ takes more than 10 parameters (the context carries the rest)."""

from __future__ import annotations

import ast
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parents[2] / "analysis"


def _modules() -> dict[str, Path]:
    """Dotted name under analysis/ (`emulator.model`, `frontend` for its __init__) -> file."""
    out = {}
    for f in sorted(ANALYSIS.rglob("*.py")):
        parts = f.relative_to(ANALYSIS).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _imports(name: str, f: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of analysis/ that `name` imports (a name inside a module counts as that module)."""
    package = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}".lstrip(".") for a in node.names] + [base]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kernelscope.analysis"):
            base = node.module.removeprefix("kernelscope.analysis").lstrip(".")
            targets = [f"{base}.{a.name}".lstrip(".") for a in node.names] + [base]
        elif isinstance(node, ast.Import):
            targets = [a.name.removeprefix("kernelscope.analysis.") for a in node.names
                       if a.name.startswith("kernelscope.analysis.")]
        # `from .x import y`: the submodule x.y where there is one, else the module x
        named = [t for t in targets[:-1] if t in modules] if isinstance(node, ast.ImportFrom) else targets
        out |= set(named or [t for t in targets[-1:] if t in modules])
    return out - {name, ""}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_of_the_engine_imports_one_that_imports_it_back():
    modules = _modules()
    graph = {name: _imports(name, f, modules) for name, f in modules.items()}
    # the reader sees real edges: the driver imports the stages, the stages the frontend
    assert {"stages", "speculation"} <= graph["pipeline"] and "frontend.compile" in graph["pipeline"]
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _parameters(f: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """A function's parameters, a method's `self` or `cls` left out; `*args` and `**kwargs` count one each."""
    a = f.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def test_no_function_of_the_engine_takes_more_than_ten_parameters():
    wide = []
    for name, f in _modules().items():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(_parameters(node)) > 10:
                wide.append(f"{name}.{node.name}: {len(_parameters(node))}")
    assert wide == []
