"""The per-lane integer datapath (issue #32): memory shapes from the lanes' executed addresses,
on real nvcc output of tests/emulator/kernels/lane_values.cu and over the repository's corpus."""

from __future__ import annotations

from math import comb
from pathlib import Path

import numpy as np
import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.decode import M_GLOBAL, M_SHARED
from kernelscope.analysis.emulator.memory import MAX_BANK_LOAD
from kernelscope.analysis.emulator.model import EmulationError, EmulationSettings, prepare
from kernelscope.analysis.frontend.program import base_name
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions, LaunchHint

from _build import CORPUS, build_example, real_flags

KERNELS = Path(__file__).parent / "kernels" / "lane_values.cu"


@pytest.fixture(scope="module")
def target():
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    return arch, cat.default_device(arch)


@pytest.fixture(scope="module")
def program(toolchain):
    return build_example(KERNELS, toolchain)


def _prepared(program, target, name: str, hint: LaunchHint, lanes: bool = True):
    k = next(k for k in program.kernels if base_name(k.name) == name)
    opts = AnalysisOptions(launch_hints={name: hint})
    return prepare(AnalysisContext.of(*target, opts, program.source, program), k, settings=EmulationSettings(execute_lanes=lanes))


def _accesses(prep, line: int, store: bool | None = None):
    d = prep.decoded
    return [d.shape[s] for s in range(len(d)) if d.mem[s] in (M_GLOBAL, M_SHARED) and d.instr[s].line == line
            and (store is None or d.is_store[s] == store)]


def _sectors(shape) -> float:
    return shape.requests * 4  # requests are 128 B units of 32 B sectors


def _line(text: str, kernel: str = "") -> int:
    """The line of `text` (the first one after `kernel`'s definition)."""
    lines = KERNELS.read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if f"void {kernel}(" in t) if kernel else 0
    return next(i for i, t in enumerate(lines[start:], start + 1) if text in t)


def test_textbook_sgemm_loads_of_a_are_uncoalesced_and_of_b_coalesced(program, target):
    prep = _prepared(program, target, "sgemm_textbook",
                     LaunchHint(grid=(32, 32, 1), block=(32, 32, 1), values={"M": 1024, "N": 1024, "K": 1024}))
    line = _line("tmp += A[x * K + i]")
    loads = _accesses(prep, line)
    d = prep.decoded
    # each load's lanes: A's are K floats apart (a sector each), B's one address (a broadcast)
    a_like = [s for s in loads if _sectors(s) >= 31]
    b_like = [s for s in loads if _sectors(s) <= 1]
    assert a_like and b_like and len(a_like) + len(b_like) == len(loads), [(_sectors(s), s.pattern) for s in loads]
    assert all(s.pattern == "uncoalesced" for s in a_like)
    # the store C[x * N + y] is as uncoalesced as A
    store = _accesses(prep, _line("C[x * N + y] = alpha"), store=True)
    assert store and all(_sectors(s) >= 31 for s in store)
    assert not any(a.name == "data_dependent" for a in prep.assumptions)
    # K not given: not data but a launch value to give; the lanes name it for the access (the
    # affine analysis alone only counted "accesses the analysis cannot follow")
    hint = LaunchHint(grid=(32, 32, 1), block=(32, 32, 1), values={"M": 1024, "N": 1024})
    after = _prepared(program, target, "sgemm_textbook", hint)
    named = next(a.detail for a in after.assumptions if a.name == "launch_values")
    assert f"LDG at line {line}: kernel argument `K` is not known" in named
    assert not any(a.name == "data_dependent" for a in after.assumptions)
    assert len(d) == len(after.decoded)


@pytest.mark.parametrize("arch", ["sm_86", "sm_100", "sm_120"])
def test_launch_dimensions_are_read_where_the_arch_keeps_them(toolchain, arch):
    """blockDim and gridDim sit at the constant bank's start up to sm_90 and at 0x360 / 0x370 from
    sm_100 (the arch file's `constant_bank`): the walk reads them there, so the textbook SGEMM's
    `y = blockIdx.y * blockDim.y + threadIdx.y` guard is decided and its loads followed on every
    arch (on sm_100 and sm_120 the guard was unknown: the walk kept blockDim at 0x0)."""
    cat = load_arch_specs()
    a = cat.arch(arch)
    program = build_example(KERNELS, toolchain, arch=arch)
    prep = _prepared(program, (a, cat.default_device(a)), "sgemm_textbook",
                     LaunchHint(grid=(32, 32, 1), block=(32, 32, 1), values={"M": 1024, "N": 1024, "K": 1024}))
    assert not prep.lanes.unknown_branches, prep.lanes.unknown_branches
    loads = _accesses(prep, _line("tmp += A[x * K + i]"))
    assert loads and all(_sectors(s) >= 31 or _sectors(s) <= 1 for s in loads), [s.pattern for s in loads]


def test_transpose_stores_uncoalesced_copy_coalesced(program, target):
    hint = LaunchHint(grid=(64, 64, 1), block=(32, 8, 1), values={"n": 2048})
    line = _line("out[y * n + x] = in[y * n + x]")
    copy = _prepared(program, target, "copy_rows", hint)
    (cstore,) = _accesses(copy, line, store=True)
    assert _sectors(cstore) == 4 and cstore.pattern == "coalesced"
    tr = _prepared(program, target, "transpose_naive", hint)
    (tstore,) = _accesses(tr, _line("out[x * n + y] = in[y * n + x]"), store=True)
    (tload,) = _accesses(tr, _line("out[x * n + y] = in[y * n + x]"), store=False)
    assert _sectors(tstore) == 32 and tstore.pattern == "uncoalesced" and tstore.wavefronts == 32
    assert _sectors(tload) == 4


@pytest.mark.parametrize("stride,sectors", [(1, 4), (2, 8), (4, 16), (8, 32), (32, 32)])
def test_strided_store(program, target, stride, sectors):
    prep = _prepared(program, target, "strided_store", LaunchHint(grid=256, block=256, values={"stride": stride}))
    (store,) = _accesses(prep, _line("out[i * stride] = in[i]"), store=True)
    assert _sectors(store) == sectors


def test_strided_store_without_its_stride_is_labeled(program, target):
    k = next(k for k in program.kernels if base_name(k.name) == "strided_store")
    prep = prepare(AnalysisContext.of(*target, AnalysisOptions(launch_hints={"strided_store": LaunchHint(grid=256, block=256)}), program.source, program), k)
    line = _line("out[i * stride] = in[i]")
    named = next(a for a in prep.assumptions if a.name == "launch_values")
    assert f"STG at line {line}: kernel argument `stride` is not known" in named.detail
    assert next(a for a in prep.assumptions if a.name == "coalescing").value == "coalesced"
    (store,) = _accesses(prep, line, store=True)
    assert store.pattern == "unknown"  # not data-dependent: the model waits for the stride


def test_shared_column_bank_conflicts_with_and_without_padding(program, target):
    hint = LaunchHint(grid=1, block=(32, 32, 1))
    text = "out[threadIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y]"
    unpadded = [s for s in _accesses(_prepared(program, target, "column_unpadded", hint),
                                     _line(text, "column_unpadded"))
                if s.requests == 0.0]  # the LDS (shared accesses send nothing to L2)
    padded = [s for s in _accesses(_prepared(program, target, "column_padded", hint), _line(text, "column_padded"))
              if s.requests == 0.0]
    assert [s.wavefronts for s in unpadded] == [32.0] and unpadded[0].pattern == "bank_conflict"
    assert [s.wavefronts for s in padded] == [1.0] and padded[0].pattern == "coalesced"


def test_gather_is_labeled_data_dependent(program, target):
    prep = _prepared(program, target, "gather", LaunchHint(grid=256, block=256, values={"n": 65536}))
    line = _line("out[i] = x[idx[i]]")
    shapes = _accesses(prep, line)
    dd = [s for s in shapes if s.pattern == "data_dependent"]
    assert len(dd) == 1 and _sectors(dd[0]) == 32  # one sector per active lane
    assert all(s.pattern == "coalesced" for s in shapes if s is not dd[0])  # idx[i] and out[i]
    a = next(a for a in prep.assumptions if a.name == "data_dependent")
    assert f"line {line}" in a.detail and "the value loaded by LDG" in a.detail


def test_64_bit_index_arithmetic_is_followed(program, target):
    prep = _prepared(program, target, "wide_index",
                     LaunchHint(grid=(4, 1 << 20, 1), block=256, values={"pitch": 1 << 33}))
    line = _line("out[row * pitch + col * 2] = in[row * pitch + col]")
    (load,) = _accesses(prep, line, store=False)
    (store,) = _accesses(prep, line, store=True)
    assert _sectors(load) == 4 and load.pattern == "coalesced"
    assert _sectors(store) == 8 and store.pattern == "strided"
    assert not any(a.name in ("data_dependent", "coalescing") for a in prep.assumptions)


def test_bank_load_table_is_the_balls_into_bins_expectation():
    def at_most(n: int, m: int, bins: int = 32) -> float:
        ways = [1] + [0] * n
        for _ in range(bins):
            nxt = [0] * (n + 1)
            for j, w in enumerate(ways):
                for c in range(0, min(m, n - j) + 1):
                    nxt[j + c] += w * comb(n - j, c)
            ways = nxt
        return ways[n] / bins ** n

    for n, expected in MAX_BANK_LOAD.items():
        assert sum(1 - at_most(n, m) for m in range(n)) == pytest.approx(expected, abs=1e-6)


def _accesses_labeled(prep, name: str) -> int:
    """Assert that each global and shared access of `prep` is followed by the walked warp,
    labeled data-dependent with a reason, labeled with the kernel argument it needs, or not
    reached by that warp (then it keeps the address analysis's shape, and is named when that is
    unknown too); return how many there were."""
    d, lanes = prep.decoded, prep.lanes
    notes = {a.name: a.detail for a in prep.assumptions}
    seen = 0
    for s in range(len(d)):
        if d.mem[s] not in (M_GLOBAL, M_SHARED) or d.instr[s].memory_space not in ("global", "shared", "generic"):
            continue
        if d.instr[s].opcode in ("CCTL", "CCTLL"):
            continue  # a cache invalidation (`__threadfence`'s CCTL.IVALL): no address, no access
        seen += 1
        where = f"{name} pc {d.instr[s].pc:#x} {d.instr[s].text}"
        if s in lanes.followed:
            assert d.shape[s].pattern not in ("unknown", "data_dependent"), where
        elif s in lanes.data_dependent:
            assert lanes.data_dependent[s] and d.shape[s].pattern == "data_dependent", where
        elif s in lanes.from_launch:
            assert lanes.from_launch[s] in notes["launch_values"] or "more" in notes["launch_values"], where
        else:
            assert s in lanes.unreached, where
            if d.shape[s].pattern == "unknown":
                assert d.instr[s].opcode in notes["lanes_unreached"], where
    return seen


def test_every_corpus_access_is_followed_or_labeled(toolchain, target):
    """Every global and shared access of every corpus kernel (examples and the tests' kernels,
    tests/data/real included) is followed or labeled (`_accesses_labeled`)."""
    arch, dev = target
    seen = 0
    for src in CORPUS:
        program = build_example(src, toolchain, flags=real_flags(src))
        for k in program.kernels:
            try:
                prep = prepare(AnalysisContext.of(arch, dev, AnalysisOptions(), program.source, program), k)
            except EmulationError:
                continue
            seen += _accesses_labeled(prep, f"{src.name} {k.name}")
    assert seen > 500


def test_trip_count_from_the_loops_own_condition(program, target):
    """`numTiles = max((K + 63) >> 6, 1)` does not fold from the source: the walk executes the
    loop's compare with the launch's K (1000 -> 16 tiles) where the affine model ran 64."""
    hint = LaunchHint(grid=64, block=256, values={"K": 1000})
    before = _prepared(program, target, "tiles_loop", hint, lanes=False)
    after = _prepared(program, target, "tiles_loop", hint)
    assert [L.trip for L in before.decoded.loops] == [64]
    assert [L.trip for L in after.decoded.loops] == [16]
    a = next(a for a in after.assumptions if a.name.startswith("trip_count"))
    assert a.value == "16" and a.source == "settings" and a.detail.startswith("executed")



def test_trip_count_computed_in_double_precision(program, target):
    """`ceil((double)n / 512)` is I2F.F64, DMUL and F2I.F64.CEIL: executed, the loop runs the
    launch's 100 chunks for n = 51,000 (99.6 rounded up), where the default ran 64 and its exit
    and the guards on the count were guesses."""
    hint = LaunchHint(grid=64, block=512, values={"n": 51_000})
    before = _prepared(program, target, "chunks_ceil", hint, lanes=False)
    after = _prepared(program, target, "chunks_ceil", hint)
    assert [L.trip for L in before.decoded.loops] == [64]
    assert [L.trip for L in after.decoded.loops] == [100]
    a = next(a for a in after.assumptions if a.name.startswith("trip_count"))
    assert a.value == "100" and a.detail.startswith("executed")
    assert not any(a.name == "control_flow" for a in after.assumptions)


def test_unrolled_loop_counting_its_remainder_up_to_zero(program, target):
    """ptxas's main loop of a loop unrolled by four counts up to zero by four and leaves on
    `ISETP.NE`: 25 trips for 100 chunks (the count is the double-precision one above, which the
    source does not fold), solved exactly (a search for the first iteration the compare fails
    found only powers of two, and left the default 64 / 4 = 16)."""
    hint = LaunchHint(grid=64, block=512, values={"n": 51_000})
    before = _prepared(program, target, "chunks_unrolled", hint, lanes=False)
    after = _prepared(program, target, "chunks_unrolled", hint)
    assert before.decoded.loops[0].trip == 16
    assert after.decoded.loops[0].trip == 25
    trips = [a for a in after.assumptions if a.name.startswith("trip_count")]
    assert [(a.value, a.detail.startswith("executed")) for a in trips] == [("25", True)]


def test_double_fma_rounds_once():
    """DFMA's product is not rounded before the addition: (1 + 2^-30)(1 - 2^-30) - 1 is -2^-60,
    where a rounded product (1.0) would give 0."""
    from kernelscope.analysis.emulator import lanes
    from synthetic import ins

    ws = lanes.WarpState(lanes.Launch(block=(32, 1, 1), grid=(1, 1, 1), ctaid=(0, 0, 0), warp=0), [])
    everyone = np.ones(lanes.WARP, bool)
    for reg, value in (("R2", 1 + 2.0 ** -30), ("R4", 1 - 2.0 ** -30), ("R6", -1.0)):
        bits = int(np.array(value).view(np.uint64))
        ws.write(reg, lanes.known(bits & 0xFFFFFFFF), everyone)
        ws.write(f"R{int(reg[1:]) + 1}", lanes.known(bits >> 32), everyone)
    lanes.execute(ws, ins(0, "DFMA", ("R8", "R9"), ("R2", "R3", "R4", "R5", "R6", "R7"),
                          operands=("R8", "R2", "R4", "R6")), everyone)
    lo, hi = ws.reg("R8"), ws.reg("R9")
    assert lo.worst == hi.worst == lanes.KNOWN
    result = ((hi.v.astype(np.uint64) << np.uint64(32)) | lo.v.astype(np.uint64)).view(np.float64)
    assert (result == -(2.0 ** -60)).all()

def test_branch_split_on_an_argument_runs_the_launchs_side(program, target):
    """ptxas splits the row loop into an unrolled main loop and remainder loops guarded by
    `nx % 4`; with nx = 4096 given, the walk's lanes skip the remainders and so does the engine."""
    hint = LaunchHint(grid=64, block=256, values={"nx": 4096})
    before = _prepared(program, target, "row_sum", hint, lanes=False)
    after = _prepared(program, target, "row_sum", hint)
    trips = lambda p: [a for a in p.assumptions if a.name.startswith("trip_count")]  # noqa: E731
    assert len(trips(before)) > 1 and len(trips(after)) == 1
    from kernelscope.analysis.emulator.decode import reachable
    live = reachable(after.decoded)
    assert [L.header in live for L in after.decoded.loops] == [True] + [False] * (len(after.decoded.loops) - 1)


def test_every_accuracy_kernel_access_is_followed_or_labeled(toolchain):
    """The same (`_accesses_labeled`) over benchmarks/accuracy's kernels, each at its published
    launch (the cases of benchmarks/accuracy/run.py), compiled for the GPU it was measured on."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "accuracy"))
    from run import CASES, arch_of  # the benchmark's own cases: one definition of each launch

    cat = load_arch_specs()
    seen, done = 0, set()
    for case in CASES:
        if case.analysis_key() in done:
            continue
        done.add(case.analysis_key())
        arch = cat.arch(arch_of(case.device))
        device = cat.device(case.device)
        program = build_example(case.source, toolchain, arch=arch.name)
        hint = LaunchHint(grid=case.grid, block=case.block, dynamic_smem=case.dynamic_smem or None,
                          values=case.values, trip_count=case.trip)
        opts = AnalysisOptions(launch_hints={case.kernel: hint})
        for k in program.kernels:
            if base_name(k.name) != case.kernel:
                continue
            prep = prepare(AnalysisContext.of(arch, device, opts, program.source, program), k)
            seen += _accesses_labeled(prep, f"{case.source.name} {k.name}")
    assert seen > 300


@pytest.mark.parametrize("arch", ["sm_75", "sm_86", "sm_90", "sm_120"])
def test_predicates_packed_into_a_register_keep_deciding_the_guards(toolchain, arch):
    """Eight guards live across a loop are more than the seven predicate registers: ptxas packs
    them with P2R and tests the bits again inside the loop. Executed, each guarded load runs in
    the lanes its guard lets through (8, 12, 16, ... of 32: 1-3 sectors); a packed bit read as
    unknown left the loads' addresses unknown, one sector per lane (fp32 V05 vec of the accuracy
    set ran a dead boundary loop the same way, at its default trip count)."""
    cat = load_arch_specs()
    a = cat.arch(arch)
    program = build_example(KERNELS, toolchain, arch=arch)
    guards = [32, 12, 8, 16, 24, 32, 4, 20]
    hint = LaunchHint(grid=1, block=32, values={"n": 8, **{f"a{j}": g for j, g in enumerate(guards)}})
    prep = _prepared(program, (a, cat.default_device(a)), "guarded_sum", hint)
    d = prep.decoded
    assert any(i.opcode == "P2R" for i in d.instr)
    loads = [d.shape[s] for s in range(len(d)) if d.mem[s] == M_GLOBAL and not d.is_store[s]]
    sectors = sorted({round(_sectors(s), 3) for s in loads})
    assert sectors == [1.0, 2.0, 3.0, 4.0], sectors
    assert not any(x.name in ("data_dependent", "control_flow") for x in prep.assumptions)


@pytest.mark.parametrize("arch", ["sm_86", "sm_90"])
def test_a_guard_on_a_warp_vote_is_decided(toolchain, arch):
    """`VOTE.ALL P1, P0` writes P1 and reads P0: the decoder had both as destinations, so the
    walk took the compare setting P0 for dead code, stepped over it, and the vote's guard was
    unknown (cuda-samples' VoteAnyKernel3 the same)."""
    cat = load_arch_specs()
    a = cat.arch(arch)
    program = build_example(Path(__file__).parent / "kernels" / "vote_guard.cu", toolchain, arch=arch)
    k = program.kernels[0]
    votes = [x for x in k.sass.instructions if x.opcode == "VOTE"]
    assert votes and all(len(x.defs) == len(x.operands) - 1 and x.uses for x in votes), votes
    hint = LaunchHint(grid=1, block=96, values={"limit": 48})
    prep = prepare(AnalysisContext.of(a, cat.default_device(a), AnalysisOptions(launch_hints={"vote_guard": hint}),
                                      program.source, program), k)
    assert not prep.lanes.unknown_branches, prep.lanes.unknown_branches


def test_r2p_unpacks_what_p2r_packed():
    """P2R packs P0..P6 under its mask into a byte of a register, keeping the other bits; R2P
    sets the predicates under its mask from that byte (`.B1` names the second)."""
    from kernelscope.analysis.emulator import lanes
    from synthetic import ins

    ws = lanes.WarpState(lanes.Launch(block=(32, 1, 1), grid=(1, 1, 1), ctaid=(0, 0, 0), warp=0), [])
    everyone = np.ones(lanes.WARP, bool)
    lane = np.arange(lanes.WARP)
    for i in range(7):
        ws.write_pred(f"P{i}", (lane >> i) % 2 == 1, everyone.copy(), everyone)
    ws.write("R4", lanes.known(0xFFFF_FFFF), everyone)
    lanes.execute(ws, ins(0, "P2R", ("R2",), ("P0", "P1", "P2", "P3", "P4", "P5", "P6", "R4"), mods=("B1",),
                          operands=("R2", "PR", "R4", "0x7f")), everyone)
    r2 = ws.reg("R2")
    assert r2.worst == lanes.KNOWN
    assert (r2.v == (0xFFFF_80FF | (lane << 8))).all()  # bits 8-14 the predicates, the rest R4's
    for i in range(7):
        ws.write_pred(f"P{i}", np.zeros(lanes.WARP, bool), everyone.copy(), everyone)
    lanes.execute(ws, ins(1, "R2P", ("P0", "P1", "P2", "P3", "P4", "P5", "P6"), ("R2",),
                          operands=("PR", "R2.B1", "0x55")), everyone)
    for i in range(7):
        v, k = ws.pred(f"P{i}")
        assert k.all()
        want = (lane >> i) % 2 == 1 if 0x55 >> i & 1 else np.zeros(lanes.WARP, bool)
        assert (v == want).all(), i


def test_a_guard_bit_in_a_register_never_written_is_decided():
    """ptxas keeps guards live across a loop as bits of a register the kernel never wrote,
    clearing a bit, setting it under the guard and testing only that bit (Lei Mao's V05 on sm_86,
    these three instructions with R64). The unwritten register reads as 0, so the tested bit is
    the guard; it was unknown ("R64 is read before the walk wrote it") and so were the guarded
    epilogue's branches."""
    from kernelscope.analysis.emulator import lanes
    from synthetic import ins

    ws = lanes.WarpState(lanes.Launch(block=(32, 1, 1), grid=(1, 1, 1), ctaid=(0, 0, 0), warp=0), [])
    everyone = np.ones(lanes.WARP, bool)
    guard = np.arange(lanes.WARP) % 3 == 0
    ws.write_pred("P3", guard, everyone.copy(), everyone)
    lanes.execute(ws, ins(0, "LOP3", ("R64",), ("R64",), mods=("LUT",),
                          operands=("R64", "R64", "0xffffffdf", "RZ", "0xc0", "!PT")), everyone)
    lanes.execute(ws, ins(1, "LOP3", ("R64",), ("R64",), pred="P3", mods=("LUT",),
                          operands=("R64", "R64", "0x20", "RZ", "0xfc", "!PT")), everyone)
    lanes.execute(ws, ins(2, "LOP3", ("P2",), ("R64",), mods=("LUT",),
                          operands=("P2", "RZ", "R64", "0x20", "RZ", "0xc0", "!PT")), everyone)
    v, k = ws.pred("P2")
    assert k.all() and (v == guard).all()


def test_trip_count_from_a_double_division(program, target):
    """`ceil((double)n / 3.0)` divides by a value that is not a power of two: MUFU.RCP64H seeds
    the reciprocal, DFMA's Newton steps refine it, and a range check chooses between the result
    and a call to the slow path. Executed, the loop runs the launch's 334 chunks for n = 1,000
    and the check is decided (the seed was not executed before: the default 64, the branch a guess)."""
    hint = LaunchHint(grid=64, block=256, values={"n": 1000})
    after = _prepared(program, target, "chunks_thirds", hint)
    assert any("RCP64H" in i.full_opcode for i in after.decoded.instr)
    trips = [a for a in after.assumptions if a.name.startswith("trip_count")]
    assert trips and all(a.source != "default" for a in trips), [(a.value, a.detail) for a in trips]
    # ptxas unrolls the loop by four: 83 trips of the main loop (and a remainder of at most 3)
    assert trips[0].value in ("83", "334") and trips[0].detail.startswith("executed"), trips[0]
    assert not any(a.name == "control_flow" for a in after.assumptions), \
        [a.detail for a in after.assumptions if a.name == "control_flow"]
    # the division's slow path is skipped by that decided check: a computed fact, not a default
    (slow,) = [a for a in after.assumptions if a.name == "math_slow_path"]
    assert slow.source != "default" and "executed" in slow.detail and "assumed" not in slow.detail, slow


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name, values, wavefronts", [("ldsm_x1", {"stride": 8}, 1.0), ("ldsm_x2", {}, 2.0),
                                                      ("ldsm_x1", {"stride": 32}, 4.0), ("ldsm_x4", {}, 4.0)])
def test_ldmatrix_rows(toolchain, arch, name, values, wavefronts):
    """ldmatrix reads one 16 B row per address from lanes 0..8N-1 only (ldmatrix_rows.cu): the
    other lanes' addresses, which point into the same banks, make no conflict; rows 64 B apart do."""
    cat = load_arch_specs()
    a = cat.arch(arch)
    prog = build_example(Path(__file__).parent / "kernels" / "ldmatrix_rows.cu", toolchain, arch=arch)
    prep = _prepared(prog, (a, cat.default_device(a)), name, LaunchHint(grid=1, block=32, values=values))
    d = prep.decoded
    (slot,) = [s for s in range(len(d)) if d.instr[s].opcode == "LDSM"]
    assert slot in prep.lanes.followed
    assert d.shape[slot].wavefronts == wavefronts, d.shape[slot]
