"""`pip install .` (the README's first command, not the editable install the tests use) ships every
package and every data file the code reads at run time. A fresh clone's `kernelscope analyze` failed
with "No module named 'kernelscope.analysis.capture'" because pyproject.toml's explicit package list
missed a new sub-package; the editable install of the test environment hid it."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the listing is the same on 3.10

REPO = Path(__file__).resolve().parents[2]


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folders(config: dict) -> dict[str, Path]:
    """Each declared top-level package and its folder (package-dir maps kernelscope.X to X/)."""
    return {name: REPO / folder for name, folder in config["package-dir"].items()}


def _package_of(folder: Path, roots: dict[str, Path]) -> str:
    for name, root in roots.items():
        if folder == root or root in folder.parents:
            return ".".join([name, *folder.relative_to(root).parts])
    raise AssertionError(folder)


def test_every_package_folder_is_installed():
    config = _setuptools()
    roots = _folders(config)
    on_disk = {_package_of(init.parent, roots) for root in roots.values() for init in root.rglob("__init__.py")}
    assert on_disk - set(config["packages"]) == set(), "add these to [tool.setuptools] packages"


def test_every_data_file_is_installed():
    """Files other than Python sources (arch specs, the capture runtime's C++, the CUPTI shim) are
    read from the installed package, so each must match a package-data glob of its package."""
    config = _setuptools()
    roots = _folders(config)
    globs = config["package-data"]
    missing = []
    for root in roots.values():
        for f in root.rglob("*"):
            if not f.is_file() or f.suffix in {".py", ".pyc"} or "__pycache__" in f.parts:
                continue
            # the owning package is the nearest folder up with an __init__.py
            pkg = next(p for p in f.parents if (p / "__init__.py").is_file())
            rel = f.relative_to(pkg).as_posix()
            if not any(fnmatch.fnmatch(rel, g) for g in globs.get(_package_of(pkg, roots), [])):
                missing.append(f.relative_to(REPO).as_posix())
    assert missing == [], "add these to [tool.setuptools.package-data]"


def test_the_docs_the_editor_links_to_are_installed():
    """The hover links "GPA Eq. 2" to advisor.md (analysis/reports/docs.py); a wheel carries the docs
    as data files, where docs.py looks for them when there is no checkout around the package."""
    from kernelscope.analysis.reports import docs

    data = _setuptools()["data-files"]
    (dest,) = [d for d, globs in data.items() if any(fnmatch.fnmatch("docs/advisor.md", g) for g in globs)]
    assert Path(dest) == docs.INSTALLED
