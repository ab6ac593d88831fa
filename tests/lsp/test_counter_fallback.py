"""Profile Now where the GPU's counters are refused: the real server, a stand-in `ncu` that prints a refusal a
user captured (tests/measure/fixtures/ncu-output) and exits 1, then the real fallback chain
(analysis/measure/fallback.py). Without a GPU CUPTI samples nothing, so the model is what is shown: one message
with every fix and CUPTI's reason, a reply that says which profile ran, and the [modeled] diagnostics kept."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lsprotocol import types

from conftest import TIMEOUT, _plain  # tests/lsp/conftest.py (rootdir-relative import, as pytest loads it)

REFUSAL = Path(__file__).resolve().parents[1] / "measure" / "fixtures" / "ncu-output" / "errnvgpuctrperm-deepgemm-46.txt"


async def test_refused_counters_profile_now_says_which_profile_ran_and_keeps_the_model(lsp, tmp_path):
    ncu = tmp_path / "ncu"
    ncu.write_text(f'#!/bin/sh\ncase "$1" in --help|--version) exit 0;; esac\ncat "{REFUSAL}"\nexit 1\n')
    ncu.chmod(0o755)
    settings = {"profile": {"command": [sys.executable, "-c", "print('the program')"], "ncuPath": str(ncu),
                            "timeoutS": 120}}
    async with lsp(settings) as s:
        await s.open("saxpy.cu")
        n = len(s.client.messages)
        reply = _plain(await asyncio.wait_for(s.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="kernelscope.profileNow", arguments=[s.uri("saxpy.cu")])), TIMEOUT))
        assert reply["ok"] is False and reply["errorType"] == "CounterPermissionError" and reply["ran"] == "modeled"
        assert reply["profile"].startswith("modeled (ncu: The profiler may not read the GPU's performance counters")
        assert reply["profile"].endswith("; CUPTI PC sampling: The CUPTI shim wrote no output)"), reply
        (msg,) = [m.message for m in s.client.messages[n:]]
        assert msg.startswith("kernelscope: profiling saxpy.cu: The profiler may not read")
        assert msg.count("NVreg_RestrictProfilingToAdminUsers=0") == 1  # every fix, once
        assert "kernelscope shows the modeled profile (CUPTI PC sampling: The CUPTI shim wrote no output)." in msg
        assert {d.message.split("]")[0] + "]" for d in s.diagnostics("saxpy.cu") if d.source == "kernelscope"} \
            == {"[modeled]"}
