"""A workspace with hostile files beside the source, through the real server (issue #30 point 3;
docs/reliability.md): opening a header makes the server search the workspace's `.cu` files for its
includer; a FIFO among them hung every analysis, a symlink to /dev/zero grew memory without bound,
a symlink loop was an internal error. They are skipped and the header is analysed in its includer's unit."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

INCLUSION = Path(__file__).resolve().parents[1] / "inputs" / "inclusion"

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(),
                                reason="FIFOs and /dev/zero are POSIX")


async def test_a_header_beside_a_fifo_a_dev_zero_link_and_a_loop_is_analysed_in_its_includers_unit(lsp, workspace):
    ws = workspace / "inclusion"
    shutil.copytree(INCLUSION, ws)
    os.mkfifo(workspace / "fifo.cu")
    (workspace / "zero.cu").symlink_to("/dev/zero")
    (ws / "a.cu").symlink_to("b.cu")
    (ws / "b.cu").symlink_to("a.cu")
    async with lsp(init_options={"workspaceTrusted": True}) as s:  # its own cache folder (configuration.md, "Security")
        done = await s.open("inclusion/kernels.cuh")
        assert done["compiled"] is True and "error" not in done, done
        assert any("analysed in the translation unit of" in d.message and "main.cu" in d.message
                   for d in s.diagnostics("inclusion/kernels.cuh"))
        # and the server still answers
        assert (await s.stats())["openDocuments"] == 1
