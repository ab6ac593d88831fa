"""Whether this machine has an NVIDIA GPU, for the GPU-only tests' skip reasons."""

from __future__ import annotations

import shutil
import subprocess


def gpu_absent() -> str | None:
    """Why there is no usable GPU here, or None when `nvidia-smi -L` lists one."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "nvidia-smi not found: no NVIDIA driver/GPU on this machine"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi failed: {e}"
    return None if out.returncode == 0 and "GPU" in out.stdout else "nvidia-smi lists no GPU"
