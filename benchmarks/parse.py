"""Parser cost: the SASS listing parser and the CUDA source model.  Run: python benchmarks/parse.py

The editor re-parses on every save, so both must cost little next to the compile. Each is timed
as CPU time (the machine is shared), best of 5, with the collector off, and printed against a
baseline measured in the same run: one `re.finditer` pass over the same text, the least any
parser that looks at every line must do.

1. `parse_nvdisasm` on a 5,000+ instruction listing (24 renamed copies of saxpy's section of the
   captured sm_90 listing in tests/data) — target < 100 ms ([core]).
2. `parse_source` on 1,000 lines of the examples — target well under 50 ms.
"""

from __future__ import annotations

import gc
import math
import os
import re
import time
from pathlib import Path

from kernelscope.analysis.frontend.sass import parse_nvdisasm
from kernelscope.analysis.frontend.source import parse_source

REPO = Path(__file__).resolve().parent.parent
_ANY_LINE = re.compile(r"^\s*(\S+)(.*)$", re.M)


def cpu_ms(fn, n: int = 5) -> float:
    best = math.inf
    for _ in range(n):
        gc.collect()
        gc.disable()
        try:
            t = time.process_time()
            fn()
            best = min(best, time.process_time() - t)
        finally:
            gc.enable()
    return best * 1000


def baseline(text: str) -> None:
    for m in _ANY_LINE.finditer(text):
        m.group(2)


def sass_listing() -> str:
    text = (REPO / "tests" / "data" / "nvdisasm_sm90.txt").read_text()
    sec = text[text.index("//--------------------- .text._Z5saxpyPKfPfii"):text.index("//--------------------- SYMBOLS")]
    return "\t.target\tsm_90\n" + "".join(sec.replace("_Z5saxpyPKfPfii", f"_Z5big{k}v") for k in range(24))


def source_text() -> str:
    examples = REPO / "examples"
    text = "\n".join((examples / n).read_text() for n in sorted(os.listdir(examples)) if n.endswith(".cu"))
    while text.count("\n") < 1000:
        text += "\n" + text
    return "\n".join(text.splitlines()[:1000])


def main() -> None:
    listing = sass_listing()
    count = sum(len(f.instructions) for f in parse_nvdisasm(listing).functions)
    source = source_text()
    print(f"{'what':<34} {'ms':>8} {'baseline ms':>12} {'ratio':>7}  target")
    for what, fn, text, target in (
        (f"parse_nvdisasm, {count} instructions", lambda: parse_nvdisasm(listing), listing, "< 100 ms"),
        ("parse_source, 1,000 lines", lambda: parse_source(source), source, "< 50 ms"),
    ):
        ms, base = cpu_ms(fn), cpu_ms(lambda: baseline(text))
        print(f"{what:<34} {ms:8.1f} {base:12.2f} {ms / max(base, 1e-6):7.1f}x  {target}")


if __name__ == "__main__":
    main()
