"""The command line as a user meets it (issue #17): real nvcc, real reports, the real entry point."""

from __future__ import annotations

import html
import json
import os
import pty
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NAIVE_GEMM = REPO / "tests" / "data" / "lsp" / "naive_gemm.cu"
GTX1660S = REPO / "tests" / "data" / "ncu-reports" / "gtx1660s-naive-gemm.ncu-rep"

# Two kernels, declared a first then b (the cubin lists b first); `b` has no launch in the file.
TWO_KERNELS = """\
__global__ void first_kernel(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 2.0f;
}

__global__ void second_kernel(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + 1.0f;
}

void run(float *x) { first_kernel<<<8, 128>>>(x, 1024); }
"""


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelscope.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("two")
    (d / "two.cu").write_text(TWO_KERNELS)
    return d / "two.cu"


def test_version():
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"kernelscope {version('kernelscope')}"


def test_flags_value_starting_with_a_dash_and_kernels_in_source_order(two):
    proc = cli("analyze", str(two), "--quick", "--flags", "-O3")
    assert proc.returncode == 0, proc.stderr
    kernels = re.findall(r"^kernel (\w+)", proc.stdout, re.M)
    assert kernels == ["first_kernel", "second_kernel"]


def test_a_defaulted_launch_says_assumed(two):
    out = cli("analyze", str(two), "--quick").stdout
    first, second = out.split("kernel second_kernel")
    launch_first = next(ln for ln in first.splitlines() if ln.strip().startswith("launch"))
    launch_second = next(ln for ln in second.splitlines() if ln.strip().startswith("launch"))
    assert "[launch site]" in launch_first and "assumed" not in launch_first
    assert "[assumed: no launch of `second_kernel`" in launch_second
    # the default's values are named too (issue #14: the JSON's `assumptions` said so, the text did not),
    # and how to give them is said there, once per kernel (issue 31)
    assert re.search(r"^  assumed +.*block = \(\d+, 1, 1\).*kernelscope: grid=", second, re.M)
    assert second.count("kernelscope: grid=") == 1
    # and before any number, right under the file's line: the report is not certain, and the command
    # that makes it so (issue 31 item 1)
    line2 = out.splitlines()[1]
    assert line2.startswith("ASSUMED LAUNCH: second_kernel (grid, block, dynamic shared memory): ") \
        and "first_kernel" not in line2
    assert f"kernelscope analyze {two} --capture" in line2


def test_progress_only_on_a_terminal(two):
    piped = cli("analyze", str(two), "--quick")
    assert "\r" not in piped.stderr
    # the same run with stderr on a pseudo-terminal shows stages; --quiet silences them
    seen = {}
    for extra in ((), ("--quiet",)):
        leader, follower = pty.openpty()
        proc = subprocess.run([sys.executable, "-m", "kernelscope.cli", "analyze", str(two), "--quick", *extra],
                              stdout=subprocess.PIPE, stderr=follower, text=True, timeout=600)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        os.close(leader)
        assert proc.returncode == 0
        seen[extra] = b"".join(chunks).decode(errors="replace")
    assert "two.cu: compile" in seen[()] and "model first_kernel" in seen[()]
    assert "compile" not in seen[("--quiet",)]


def test_a_directory_analyses_every_cu_with_a_summary(two, tmp_path):
    (tmp_path / "a.cu").write_text(TWO_KERNELS)
    (tmp_path / "broken.cu").write_text("__global__ void k( {\n")
    (tmp_path / "notes.txt").write_text("not CUDA")
    proc = cli("analyze", str(tmp_path), "--quick", "--no-emulate")
    assert proc.returncode == 1  # one file does not compile
    summary = proc.stdout[proc.stdout.index("summary: 2 files"):]
    assert "a.cu: 2 kernels" in summary and "broken.cu: does not compile" in summary
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = cli("analyze", str(empty))
    assert proc.returncode == 2 and "is a directory with no .cu files" in proc.stderr


def test_sarif_paths_are_relative_to_the_working_directory(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text((REPO / "examples" / "stencil_double_const.cu").read_text())
    proc = cli("analyze", "src/k.cu", "--quick", "--sarif", "out.sarif", "--html", "out.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = json.loads((tmp_path / "out.sarif").read_text())["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    locs = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert locs and all(loc == {"uri": "src/k.cu", "uriBaseId": "%SRCROOT%"} for loc in locs)
    jsonschema = pytest.importorskip("jsonschema")
    schema = REPO / "tests" / "data" / "sarif" / "sarif-2.1.0-rtm.5.json"
    jsonschema.validate(json.loads((tmp_path / "out.sarif").read_text()), json.loads(schema.read_text()))
    # the HTML lists the advice in the text report's order
    text_ids = re.findall(r"^    ([0-9a-f]{12})  line", proc.stdout, re.M)
    html = (tmp_path / "out.html").read_text()
    titles = re.findall(r"<div class=advice><b>(.*?)</b>", html)
    text_titles = [re.search(rf"{i}  line \d+: (.*?) \(", proc.stdout).group(1) for i in text_ids]
    assert titles[:len(text_titles)] == text_titles and len(text_titles) >= 2


def test_profile_report_shows_its_own_device_launch_and_duration():
    """The GTX 1660 SUPER report: the measured 4789.8 us, its 32x32 launch (not the source's 16x16)
    and the GTX 1660 SUPER's specs, each labelled, with the model's prediction beside them."""
    proc = cli("analyze", str(NAIVE_GEMM), "--quick", "--profile", str(GTX1660S))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.splitlines()[0].endswith(f"(sm_75, GTX 1660 SUPER, {out.splitlines()[0].split(', ', 2)[2]}")
    assert "launch      grid (32, 32, 1), block (32, 32, 1), 0 B dynamic shared  [measured]" in out
    assert "of 1024 threads" in out and "on 22 SMs" in out  # occupancy from the measured block
    assert "measured    4789.8 us  [measured on NVIDIA GeForce GTX 1660 SUPER]" in out
    predicted = re.search(r"predicted ([\d.]+) us \[modeled, GTX 1660 SUPER, ([\d.]+)x the measurement\]", out)
    assert predicted and abs(float(predicted.group(1)) / 4789.8 - float(predicted.group(2))) < 0.01
    assert "static issue cost (no profile)" not in out and "the report has no line information" in out
    assert "[measured]\n" not in out.split("measured    ")[1].split("\n")[1]  # the model line is not "measured"


def test_profile_command_arguments_and_missing_ncu(tmp_path):
    (tmp_path / "k.cu").write_text(TWO_KERNELS)
    bad = cli("profile", str(tmp_path / "k.cu"), "--remote", "rsh:host", "--", "/bin/true")
    assert bad.returncode == 2 and "expected ssh:HOST or srun:ARGS" in bad.stderr
    # A project file naming a profile command is never run from the CLI: the program comes
    # only from the command line (the editor runs such a command only in a trusted workspace).
    (tmp_path / ".kernelscope.toml").write_text(f'[profile]\ncommand = "touch {tmp_path / "ran"}"\n')
    proc = cli("profile", "k.cu", "--ncu", str(tmp_path / "no-ncu"), "--", "/bin/true", "--size", "4", cwd=tmp_path)
    assert proc.returncode == 2 and "no-ncu" in proc.stderr and "Nsight Compute" in proc.stderr
    # a terminal user is told about --ncu (not "the settings") and what works without a GPU
    assert "--ncu PATH" in proc.stderr and "settings" not in proc.stderr
    assert "kernelscope analyze FILE.cu --profile REPORT.ncu-rep" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "ran").exists()


def test_profile_without_a_program_needs_a_main(tmp_path):
    (tmp_path / "k.cu").write_text(TWO_KERNELS)  # no main(): it cannot be built alone
    proc = cli("profile", str(tmp_path / "k.cu"), "--ncu", str(tmp_path / "no-ncu"))
    assert proc.returncode == 2 and "does not build as a program on its own" in proc.stderr
    assert "kernelscope profile gemm.cu -- ./build/app" in proc.stderr


def test_profile_remote_needs_the_program(tmp_path):
    (tmp_path / "k.cu").write_text(TWO_KERNELS)
    proc = cli("profile", str(tmp_path / "k.cu"), "--remote", "ssh:gpu01")
    assert proc.returncode == 2 and "with --remote, give the program after `--`" in proc.stderr
    # `--` belongs to `profile` only
    proc = cli("analyze", str(tmp_path / "k.cu"), "--", "./app")
    assert proc.returncode == 2 and "runs none" in proc.stderr


def test_a_report_from_a_gpu_outside_the_catalogue_says_which_specs_stand_in():
    from kernelscope.analysis.machine.arch import ArchSpecError, load_arch_specs

    report = REPO / "tests" / "data" / "ncu-reports" / "rtx3080-monte-carlo-pi.ncu-rep"
    proc = cli("analyze", str(REPO / "tests" / "data" / "lsp" / "saxpy.cu"), "--quick", "--no-emulate",
               "--profile", str(report))
    assert proc.returncode == 0, proc.stderr
    catalog = load_arch_specs()
    try:
        expected = catalog.device("GeForce RTX 3080").name  # if a later catalogue lists it, it is used
    except ArchSpecError:
        expected = catalog.default_device("sm_86").name
        assert f"the model uses the {expected}'s specs (sm_86)" in proc.stderr
    assert f"(sm_86, {expected}, " in proc.stdout.splitlines()[0]


def test_html_draws_the_roofline_when_no_kernel_has_arithmetic(tmp_path):
    """strided_copy only moves memory: the HTML report left its chart out altogether; it draws the
    ceilings, and the kernel's DRAM bandwidth against the DRAM ceiling below the plot, since its
    intensity is 0 (issue #17, item 4)."""
    proc = cli("analyze", str(REPO / "examples" / "strided_access.cu"), "--quick", "--html", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text()
    assert html.count("<svg") == 1 and 'class="kernel-point"' not in html
    bar = re.search(r'<g class="bandwidth-bar" data-kernel="strided_copy[^"]*" data-level="dram"[^>]*>(.*?)</g>', html, re.S)
    assert bar and re.search(r"\d+ % of 3\.35 TB/s", re.sub(r"<[^>]+>", "", bar.group(1)))
    assert "No operations, so intensity 0" in html


def test_the_legend_names_a_level_with_points_but_no_slope(tmp_path):
    """A memory level the device's specs give no bandwidth for has points but no slope; the legend
    says so rather than leaving a point beside no line of its colour."""
    from kernelscope.analysis.machine.arch import MemoryLevel, load_arch_specs

    proc = cli("analyze", str(REPO / "examples" / "sgemm_naive.cu"), "--quick", "--html", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text()
    pointed = set(re.findall(r'class="kernel-point" data-kernel="[^"]*" data-level="(\w+)"', html))
    catalog = load_arch_specs()
    device = catalog.device("H100 SXM")
    assert pointed
    legend = re.sub(r"<[^>]+>", " ", html.split('class="legend"')[1].split("</g>")[0])
    for level in pointed:
        label = {"dram": "DRAM", "l2": "L2", "l1": "L1", "shared": "Shared"}[level]
        assert (f"{label} intensity (no slope)" in legend) == (catalog.bandwidth(device, MemoryLevel(level)) is None)


def test_html_and_text_say_the_same_occupancy(tmp_path):
    """The HTML report dropped 'theoretical' and how the grid fills the device (small_grid.cu's 4
    blocks fill 4 of 132 SMs however high the per-SM occupancy is)."""
    proc = cli("analyze", str(REPO / "examples" / "small_grid.cu"), "--quick", "--html", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    text = re.search(r"^  occupancy   (.*)$", proc.stdout, re.M).group(1)
    assert "theoretical" in text and "fill 4 of 132 SMs" in text
    assert f"<tr><th>occupancy</th><td>{html.escape(text)}</td>" in (tmp_path / "r.html").read_text()
