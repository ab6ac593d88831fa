"""Issue 36: the front ends call the engine through one front door (analysis/application.py) and the
presenters (analysis/reports/); the server's features hold no module state and use no private
part of the server; a stage never calls the pipeline that runs it."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _python_files(*folders: str) -> list[Path]:
    return [f for d in folders for f in sorted((REPO / d).rglob("*.py")) if "__pycache__" not in f.parts]


def _imported_analysis_modules(f: Path) -> set[str]:
    """The modules of kernelscope.analysis that `f` imports (a name that is a submodule counts as one)."""
    out = set()
    for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("kernelscope.analysis.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernelscope.analysis"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if _is_module(sub) else node.module)
    return out


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a name inside a module, not a package's submodule
        return False


def test_the_command_line_and_the_server_import_at_most_four_analysis_modules():
    used = set().union(*(_imported_analysis_modules(f) for f in _python_files("cli", "server")))
    assert used == {"kernelscope.analysis.application", "kernelscope.analysis.reports",
                    "kernelscope.analysis.reports.markdown", "kernelscope.analysis.reports.docs"}, used


def test_server_features_hold_no_module_state_and_no_private_calls():
    for f in _python_files("server/features"):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in tree.body:  # module level: constants in capitals, functions, classes, imports
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    assert isinstance(t, ast.Name) and (t.id.isupper() or t.id == "__all__" or t.id == "log"), \
                        f"{f.name}: module-level state {ast.unparse(t)}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = ast.unparse(node.value)
                assert owner == "self", f"{f.name}: {owner}.{node.attr} reaches into another object's private part"


def test_verification_never_imports_the_pipeline():
    tree = ast.parse((REPO / "analysis" / "advisor" / "verify.py").read_text(encoding="utf-8"))
    names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not any(n and n.split(".")[-1] in ("pipeline", "stages", "application") for n in names), names


def test_importing_the_server_loads_no_later_stage():
    """The stages after the compile (pipeline.load_late_stages) load when the server starts serving
    (app.main), not as a side effect of importing it."""
    code = ("import sys, kernelscope.server.app, kernelscope.server.scheduler; "
            "print(sorted(m for m in sys.modules if m.endswith(('.stages', '.frontend.disassembly'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.strip() == "[]", out


def test_one_command_loads_the_arch_catalog_once(tmp_path, monkeypatch, capsys, examples_dir, toolchain):
    """`analyze --capture --html` with a user's arch file: the report's device, capture, the analysis
    and the HTML chart all take the catalog the command loaded, so the user's file is read once. The
    device only that file names proves each step used it (the chart is drawn for it)."""
    import json
    import tomllib

    from kernelscope.analysis.machine import arch
    from kernelscope.cli import main

    h100 = tomllib.loads(arch.BUILTIN_FILE.read_text(encoding="utf-8"))["device"]["h100-sxm"]
    user = tmp_path / "arch.json"
    user.write_text(json.dumps({"schema_version": 1,
                                "device": {"test-gpu": {**h100, "name": "Test GPU", "aliases": []}}}))
    real_read, reads = arch._read, []

    def counted(path):  # the real reader, counted
        reads.append(Path(path))
        return real_read(path)

    monkeypatch.setattr(arch, "_read", counted)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    page = tmp_path / "report.html"
    code = main(["analyze", str(examples_dir / "small_grid.cu"), "--json", "--capture", "--arch-file", str(user),
                 "--device", "Test GPU", "--html", str(page)])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["device"] == "Test GPU"
    (kernel,) = result["kernels"]
    assert {a["name"] for a in kernel["assumptions"] if a["source"] == "captured"} >= {"grid", "block"}
    assert "on Test GPU" in page.read_text(encoding="utf-8")  # the chart, from the user's catalog
    assert reads.count(user) == 1, reads
