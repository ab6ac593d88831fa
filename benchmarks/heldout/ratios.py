"""What every held-out check prints last: predicted ÷ measured over its kernels, as one line."""

from __future__ import annotations

import math
from collections.abc import Sequence


def summary(ratios: Sequence[float]) -> str:
    """"10 kernels: geomean error 1.21x, 9 within 2x, 8 within 1.3x" (error: max(r, 1/r))."""
    logs = [abs(math.log(r)) for r in ratios]
    return (f"{len(logs)} kernels: geomean error {math.exp(sum(logs) / len(logs)):.2f}x, "
            f"{sum(x <= math.log(2) for x in logs)} within 2x, {sum(x <= math.log(1.3) for x in logs)} within 1.3x")


class Table:
    """A check's printed comparison: one line per kernel as it comes, the summary at the end."""

    def __init__(self, width: int, measured: str) -> None:
        self.width, self.ratios = width, []
        print(f"{'kernel':{width}} {measured:>10} {'predicted':>10} {'ratio':>6}  grid x block (source)")

    def add(self, name: str, measured_ms: float, kernel, launch_input: str) -> None:
        """`kernel`: a `KernelReport` with a prediction; `launch_input`: the launch value whose
        source (launch site, default, ...) the line names."""
        predicted_ms = kernel.predicted_duration_s * 1e3
        ratio = predicted_ms / measured_ms
        self.ratios.append(ratio)
        source = next((a.source for a in kernel.assumptions if a.name == launch_input), "?")
        print(f"{name:{self.width}} {measured_ms:8.3f}ms {predicted_ms:8.3f}ms {ratio:6.2f}  "
              f"{kernel.launch.grid} x {kernel.launch.block} ({source})")

    def skip(self, name: str, why: str) -> None:
        print(f"{name:{self.width}} not compared: {why}")

    def close(self) -> int:
        """Prints the summary; the check's exit status."""
        if self.ratios:
            print(summary(self.ratios))
        return 0
