"""Errors of the measured-profile backends; each says what happened and what to do about it.

The editor shows `str(error)` as it is, so every message names the cause and a fix,
never a Python traceback.
"""

from __future__ import annotations


class MeasurementError(Exception):
    """Collecting or importing a measured profile failed."""

    #: a short, actionable hint; kept separate so the editor can show it as a code action
    hint: str = ""

    def __init__(self, message: str, *, hint: str = "", output: str = ""):
        self.message = message
        self.hint = hint or type(self).hint
        self.output = output  # the tool's own output (tail), for a "show details" view
        super().__init__(f"{message}. {self.hint}" if self.hint else message)


class ReportError(MeasurementError):
    """A .ncu-rep is missing, is not a report, or is corrupt."""


class StaleReportError(MeasurementError):
    """The report was captured from a different version of the source than the one open now."""

    hint = "Profile again after the change, or open the source revision the report was captured from"


class NoGpuError(MeasurementError):
    hint = ("Run on a machine with an NVIDIA GPU and driver (check `nvidia-smi`), or profile remotely "
            "with a ssh/srun wrapper (docs/measured.md)")


#: what the user sees while the counters are refused; the fallback chain (fallback.py) says what it ran instead
MEANWHILE = "Until then kernelscope shows the modeled profile."


class CounterPermissionError(MeasurementError):
    """The driver refused the GPU's performance counters (ERR_NVGPUCTRPERM, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES).

    The fixes, from NVIDIA's page on the error (https://developer.nvidia.com/ERR_NVGPUCTRPERM): an
    admin sets the driver option for everyone; or the profiler runs as root or with CAP_SYS_ADMIN
    (CAP_PERFMON from driver R565); in a container the host must allow it or the container must be
    started with --cap-add=SYS_ADMIN. The counters are the driver's, so nothing inside a job or a
    container can turn them on by itself (huggingface/hub-docs#2714).
    """

    hint = ("An admin enables the counters for every user with the driver option "
            "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` (/etc/modprobe.d, then reload the driver or "
            "reboot); or run the profiler as root or with CAP_SYS_ADMIN (CAP_PERFMON from driver R565). In a "
            "container the host must allow it, or the container must be started with --cap-add=SYS_ADMIN; on a "
            "cluster, ask the admins which partitions have the counters enabled. " + MEANWHILE +
            " See https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    #: the same fixes, the container's first: the profiler ran through a container runtime
    container_hint = ("The profiler ran in a container ({runtime}): the container must be started with "
                      "--cap-add=SYS_ADMIN (or CAP_PERFMON from driver R565), or the host's admin must enable the "
                      "counters for every user with the driver option "
                      "`options nvidia NVreg_RestrictProfilingToAdminUsers=0`; nothing inside the container can "
                      "change it. " + MEANWHILE + " See https://developer.nvidia.com/ERR_NVGPUCTRPERM")


class KernelNotFoundError(MeasurementError):
    hint = ("Check the kernel-name regex against the names the program launches (ncu matches the function "
            "name, e.g. `regex:gemm`), and the launch skip/count; a program that launches kernels only in "
            "child processes needs --target-processes all")


class ProgramCrashError(MeasurementError):
    hint = "Run the program without the profiler first; fix the crash (compute-sanitizer helps), then profile"


class ProfileTimeoutError(MeasurementError):
    hint = ("Raise the timeout, profile fewer launches (-c 1, a narrower kernel regex) or fewer sections; "
            "kernels that wait on each other can hang under kernel replay (use --replay-mode application)")

    def __init__(self, message: str, *, hint: str = "", output: str = "", partial_report=None):
        super().__init__(message, hint=hint, output=output)
        self.partial_report = partial_report  # a Path to what ncu had written when it was stopped


class RemoteError(MeasurementError):
    hint = ("Check that `ssh <host> true` (or the srun/batch wrapper) works non-interactively, with keys and "
            "no password prompt, and that the path mapping names directories that exist on the remote side")


class ToolNotFoundError(MeasurementError):
    hint = "Install Nsight Compute (it ships with the CUDA toolkit) or set the ncu path in the settings"
