"""Abstract kernel emulation (SAAKE): a modeled stall profile, bottleneck sensitivity and what-ifs.

units (hardware) -> decode (instructions as int arrays) -> engine (Algorithm 1) -> listeners
(reports); launch and memory resolve what the binary does not say; model holds the public API.
"""

from .model import (Emulation, EmulationError, EmulationSettings, Prediction, SensitivityReport, WhatIfReport,
                    emulate, emulate_detailed, sensitivity, what_if)

__all__ = ["emulate", "emulate_detailed", "sensitivity", "what_if", "Emulation", "EmulationError",
           "EmulationSettings", "Prediction", "SensitivityReport", "WhatIfReport"]
