"""How far the modeled time is from real GPUs: the figure `benchmarks/accuracy/run.py` measured.

A modeled duration means little without its error, and the error must come from a measurement,
never be assumed. `benchmarks/accuracy/run.py --record` writes `data/model_error.json` from its
run over kernels with published measured times (docs/accuracy.md): the geomean error factor and
the share within 2×, overall and on the test split no parameter was tuned on, with the commit and
date of the run. Editors show it beside every predicted duration.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, ValidationError

FILE = "model_error.json"


class SplitError(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernels: int
    geomean: float  # exp(mean |ln(predicted / measured)|): a typical error factor
    within_2x: float  # share of kernels predicted within a factor 2


class ModelError(BaseModel):
    """One run of the accuracy benchmark."""

    model_config = ConfigDict(frozen=True)

    overall: SplitError
    test: SplitError  # the held-out series (docs/accuracy.md, "Split")
    gpus: int
    commit: str
    date: str  # ISO date of the run

    def note(self) -> str:
        """"typical error 1.5× against 47 published measurements on 6 GPUs, 1.7× on the 13 held out
        from tuning": what a reader of a predicted time needs to weigh it."""
        # the held-out series beside the whole set: a figure on kernels the model was tuned against
        # is not evidence on its own (a reader's kernel is held out from everything)
        return (f"typical error {self.overall.geomean:.1f}× against {self.overall.kernels} published "
                f"measurements on {self.gpus} GPUs, {self.test.geomean:.1f}× on the {self.test.kernels} "
                "held out from tuning (docs/accuracy.md)")


@lru_cache(maxsize=1)
def model_error() -> ModelError | None:
    """The recorded figure, or None when none was recorded (or the file is unreadable)."""
    try:
        raw = resources.files("kernelscope.analysis").joinpath("data", FILE).read_text()
        return ModelError.model_validate(json.loads(raw))
    except (FileNotFoundError, OSError, ValueError, ValidationError):
        return None


__all__ = ["ModelError", "SplitError", "model_error", "FILE"]
