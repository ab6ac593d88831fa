"""What one analysis used to pay twice, and no longer does, with the same result (issue 35): the
second stage starts from the quick stage's prepared launch, the full result's advice reuses the
quick result's blame, and a line's loop is looked up in an index. And what grows with a kernel is
charged to the file's budget as it grows, so a large kernel's second stage is cut, and says so.
Real nvcc output, real analyses."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from emulator._build import build_example

from kernelscope.analysis.advisor import blame as blame_module
from kernelscope.analysis.emulator import model, walk
from kernelscope.analysis.frontend.source import parse_source
from kernelscope.analysis.options import AnalysisBudget, AnalysisOptions

from .test_speculation import same_release  # noqa: F401 - a fixture: NVRTC of nvcc's release

REPO = Path(__file__).resolve().parents[2]

THREE = """
__global__ void scale(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void shift(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
__global__ void total(const float *x, float *s, int n) {
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    atomicAdd(s, acc);
}
int main() {
    float *x = nullptr, *s = nullptr;
    scale<<<64, 256>>>(x, 16384);
    shift<<<64, 256>>>(x, 16384);
    total<<<1, 256>>>(x, s, 16384);
    return 0;
}
"""


def _without_times(result) -> dict:
    """The result as `analyze --json` prints it, less what varies from run to run (benchmarks/same_json.py)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("timings", "time", "seconds")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(json.loads(result.model_dump_json()))


def test_the_second_stage_and_the_full_advice_reuse_the_quick_stages_work(toolchain, tmp_path, monkeypatch):
    from kernelscope.analysis.pipeline import analyze

    src = tmp_path / "three.cu"
    src.write_text(THREE)
    opts = AnalysisOptions(budget=AnalysisBudget(run_ahead=False, processes=1))
    whole = analyze(src, opts, toolchain=toolchain)
    assert all(k.bottleneck for k in whole.kernels)  # every kernel got its second stage

    # prepare's memo holding one launch: the second stage no longer finds the quick stage's there
    monkeypatch.setattr(model, "_PREPARED_SIZE", 1)
    model._PREPARED.clear()
    walk._MEMO.clear()
    own, blamed = [], []
    prepare, make_blame = model._prepare, blame_module._blame
    monkeypatch.setattr(model, "_prepare", lambda *a, **k: (own.append(k["launch"]) if k["launch"] is None else None,
                                                           prepare(*a, **k))[1])
    monkeypatch.setattr(blame_module, "_blame", lambda *a: (blamed.append(a[0].mangled), make_blame(*a))[1])
    again = analyze(src, opts, toolchain=toolchain)
    assert len(own) == 3  # each kernel's own launch prepared once, by the quick stage
    assert sorted(blamed) == sorted(k.mangled for k in whole.kernels)  # quick and full advice: one blame each
    assert _without_times(again) == _without_times(whole)


def test_outside_an_analysis_blame_is_made_anew(toolchain, tmp_path):
    from kernelscope.analysis.pipeline import analyze

    src = tmp_path / "three.cu"
    src.write_text(THREE)
    r = analyze(src, AnalysisOptions(budget=AnalysisBudget(run_ahead=False)), toolchain=toolchain, depth="quick")
    assert r.profile is not None
    # the memo lives only inside `memoised()`: the same inputs give an equal, separately made result
    kernel_profile = r.profile.kernels[0]
    fn = next(f for f in build_example(src, toolchain).kernels if f.mangled == kernel_profile.kernel)
    a, b = blame_module.blame(fn, kernel_profile), blame_module.blame(fn, kernel_profile)
    assert a == b and a is not b
    with blame_module.memoised():
        c = blame_module.blame(fn, kernel_profile)
        assert blame_module.blame(fn, kernel_profile) is c and c == a


def test_a_lines_loop_from_the_index_is_the_innermost_a_scan_finds():
    text = (REPO / "tests" / "emulator" / "kernels" / "bounded_shapes.cu").read_text()
    source = parse_source(text)
    assert any(lp.depth >= 2 for lp in source.loops)  # nested loops, so innermost is a real choice
    for line in range(1, len(text.splitlines()) + 2):
        inside = [lp for lp in source.loops if lp.span.contains_line(line)]
        scanned = max(inside, key=lambda lp: (lp.depth, lp.span.start_byte), default=None)
        assert source.loop_at(line) is scanned


SHAPES = REPO / "benchmarks" / "shapes"


def _budget_cut(result):
    (k,) = result.kernels
    cuts = [a for a in k.assumptions if a.name == "budget"]
    return k, cuts


def _what_if_launches(monkeypatch) -> list:
    """The launches the second stage prepares for its what-if points (a block size or a grid other than
    the kernel's), as `prepare` is asked for them in this process (`AnalysisBudget(processes=1)`)."""
    launches, make = [], model.prepare

    def counted(ctx, kernel, *, launch=None, **kw):
        if launch is not None:
            launches.append(launch)
        return make(ctx, kernel, launch=launch, **kw)

    monkeypatch.setattr(model, "prepare", counted)
    return launches


def test_the_what_if_models_the_points_the_advice_reads_and_the_advice_is_the_whole_sweeps(toolchain,
                                                                                           monkeypatch):
    """Of the what-if's block sizes and grids (each a launch prepared and run), the second stage models
    those an optimizer reads for the kernel (`Optimizer.what_if_reads`): block32's larger block
    (thread_increase), small_grid's grid scaling (block_increase), no block size or grid for a kernel
    whose launch no such optimizer matches. The result, advice and estimates included, is the one the
    whole sweeps give."""
    from kernelscope.analysis import stages
    from kernelscope.analysis.pipeline import analyze

    options = AnalysisOptions(budget=AnalysisBudget(run_ahead=False, processes=1))
    for source, reads in ((REPO / "tests/actions/kernels/block32.cu", "thread_increase"),
                          (REPO / "examples/small_grid.cu", "block_increase"),
                          (REPO / "examples/sgemm_naive.cu", None)):
        launches = _what_if_launches(monkeypatch)
        result = analyze(source, options, toolchain=toolchain)
        read = list(launches)
        with monkeypatch.context() as m:
            m.setattr(stages, "what_if_reads", lambda *a: None)  # None: every point of both sweeps
            launches.clear()
            whole = analyze(source, options, toolchain=toolchain)
        assert _without_times(result) == _without_times(whole), source.name
        assert len(read) < len(launches), (source.name, read, launches)
        if reads is None:
            assert read == []
        else:
            (item,) = [a for a in result.advice if a.optimizer == reads]
            assert item.estimate.formula.startswith("emulator what-if")  # the ratio the point read gives


def test_a_kernel_whose_launches_are_dear_to_prepare_prepares_none_its_advice_does_not_read(toolchain,
                                                                                            monkeypatch):
    """octree_walk's device recursion walks ~2,300 steps per launch, and each block size and grid of
    the what-if sweep would prepare its own launch (issue 35): charged by those steps, the whole sweeps
    did not fit the file's budget, which cut block sizes and a grid. Its advice reads none of them (its
    launch fills the GPU, and registers, not the block size, limit its occupancy), so none is prepared,
    and its whole study, the sensitivity and the 9-point SM-count trajectory, fits uncut."""
    from kernelscope.analysis.pipeline import analyze

    launches = _what_if_launches(monkeypatch)
    r = analyze(SHAPES / "octree_walk.cu", AnalysisOptions(budget=AnalysisBudget(run_ahead=False, processes=1)),
                toolchain=toolchain)
    k, cuts = _budget_cut(r)
    assert cuts == [] and launches == []
    assert k.bottleneck  # its sensitivity study ran
    (roof,) = r.rooflines
    assert len(roof.trajectory) == 9


def test_a_large_kernels_advice_and_walks_leave_its_second_stage_less_and_it_says_what(toolchain):
    """shuffle_softmax (736 SASS instructions): its advice's backward slices (~590,000 steps) and
    its launch's walks (~3,600 steps each) are charged as they grow, so its second stage is cut
    where a small kernel's never is (tests/emulator/test_budget.py), and the cut is named. Past
    the second stage's reserve (one nvcc time) what is left pays for a smaller sensitivity study
    and no what-if; the sensitivity still runs."""
    from kernelscope.analysis.pipeline import analyze

    r = analyze(SHAPES / "shuffle_softmax.cu", AnalysisOptions(budget=AnalysisBudget(run_ahead=False)),
                toolchain=toolchain)
    k, (cut,) = _budget_cut(r)
    assert cut.value == "second stage reduced"
    assert re.match(r"sensitivity runs of [\d,]+ warp-instructions instead of 12,000; .*no what-if \(block sizes, "
                    r"SM-count trajectory\): the whole study needs about", cut.detail), cut.detail
    assert k.bottleneck  # its sensitivity study ran


def test_a_stopped_second_stage_says_why_of_the_plans_cuts_and_then_that_it_stopped(toolchain):
    """A budget assumption names the plan's cuts, then why they were made (what the whole study
    needs, what was left), then a stop: the why explains the cuts, never the stop. shuffle_softmax's
    plan cuts its study (above); a wall-clock budget spent before its first second-stage run
    stops the rest."""
    from kernelscope.analysis.pipeline import analyze

    planned = analyze(SHAPES / "shuffle_softmax.cu", AnalysisOptions(budget=AnalysisBudget(run_ahead=False)),
                      toolchain=toolchain)
    stopped = analyze(SHAPES / "shuffle_softmax.cu",
                      AnalysisOptions(budget=AnalysisBudget(run_ahead=False, seconds=1e-6)), toolchain=toolchain)
    (_, (cut,)), (k, (stop,)) = _budget_cut(planned), _budget_cut(stopped)
    assert re.fullmatch(r"[^:]+: the whole study needs about [\d,]+ warp-instructions \([\d,]+ of them preparing "
                        r"the what-if launches\) and [\d,]+ were left for this kernel \(AnalysisOptions\.budget\)",
                        cut.detail), cut.detail
    # the same plan (the stop is wall-clock, the plan is not), then the stop after its why
    assert stop.detail == (cut.detail.removesuffix(" (AnalysisOptions.budget)")
                           + "; stopped: the wall-clock budget of 1e-06 s was spent (AnalysisOptions.budget)")
    assert k.bottleneck is None  # no sensitivity run was made


def test_a_quick_stage_run_ahead_brings_its_slices_charge_with_it(same_release, tmp_path, monkeypatch):
    """The quick stage run ahead of nvcc (tests/pipeline/test_speculation.py) advised on its own
    thread, outside the analysis's blame memo: the steps of its slices come with it
    (`QuickStage.sliced`), so the budget charges them without blaming again, which was work thrown
    away where no kernel then gets a second stage. The charge is the one the analysis makes alone:
    what each kernel was left (the budget assumption's figures) is the same with and without it."""
    from kernelscope.analysis.pipeline import analyze

    source = tmp_path / "saxpy.cu"
    source.write_bytes((REPO / "tests/data/lsp/saxpy.cu").read_bytes())
    main, blamed = threading.current_thread(), []
    make_blame = blame_module._blame
    monkeypatch.setattr(blame_module, "_blame",
                        lambda *a: (blamed.append(threading.current_thread() is main), make_blame(*a))[1])

    def run(ahead: bool):
        blamed.clear()
        # a budget (0.15x nvcc's time) that leaves both kernels their quick runs and no second stage
        r = analyze(source, AnalysisOptions(budget=AnalysisBudget(run_ahead=ahead, processes=1, nvcc_multiple=0.15)),
                    toolchain=same_release)
        return r, blamed.count(True)

    (ahead, here_ahead), (alone, here_alone) = run(True), run(False)
    assert "model_ahead" in ahead.timings and "model_ahead" not in alone.timings
    assert len(ahead.kernels) == 2 and all(k.bottleneck is None for k in ahead.kernels)
    left = [a.detail for k in ahead.kernels for a in k.assumptions if a.name == "budget" and "were left" in a.detail]
    assert len(left) == 2 and all("no second stage" in d for d in left)
    assert _without_times(ahead) == _without_times(alone)  # the same charges: the same figures
    assert here_alone == 2 and here_ahead == 0  # alone: its quick advice's blame; ahead: none made again


def test_the_full_results_advice_time_counts_the_quick_results_advice_too(toolchain, tmp_path):
    """`timings["advise"]` is what advising cost the analysis: the quick result's advice (shown first)
    and the full result's. Until 2026-11-28 the full one overwrote it, and a file whose second
    stage reused the quick advice showed milliseconds for an advice that had taken seconds."""
    from kernelscope.analysis.pipeline import analyze

    src = tmp_path / "three.cu"
    src.write_text(THREE)
    partial = []
    # a budget that leaves no kernel a second stage: the full result's advice is the quick one's, reused
    full = analyze(src, AnalysisOptions(budget=AnalysisBudget(run_ahead=False, processes=1, nvcc_multiple=0.15)),
                   toolchain=toolchain, on_partial=partial.append)
    (quick,) = partial
    assert quick.depth == "quick" and full.depth == "full"
    assert full.advice == quick.advice
    assert full.timings["advise"] >= quick.timings["advise"] > 0
