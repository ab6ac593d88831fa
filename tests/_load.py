"""Load a Python file that is not an importable module (the extension's build scripts, a copy of a
package module) as a module of its own."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

_names = itertools.count()


def load_file(path: Path) -> ModuleType:
    name = f"_loaded_{path.stem}_{next(_names)}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # pydantic models resolve their annotations through it
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod
