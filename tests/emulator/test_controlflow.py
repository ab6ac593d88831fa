"""Control flow as the hardware runs it (issue 20 item 1): CALL.REL.NOINC loop exits, subroutine
calls that return, and guards whose fall-through side is an early-out path.

Kernels in tests/emulator/kernels/, compiled by the real nvcc; branch targets are nvdisasm's own
(`Instruction.branch_target`, from the label it prints).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.frontend.cfg import EdgeKind
from kernelscope.analysis.emulator.decode import B_EXIT, B_JUMP, K_BRA, K_CALL, decode
from kernelscope.analysis.emulator.model import emulate_detailed
from kernelscope.analysis.frontend.isa import call_is_jump
from kernelscope.analysis.options import AnalysisOptions

from _build import build_example

KERNELS = Path(__file__).parent / "kernels"
M = N = K = 1024  # the launch in gemm_register_blocked.cu's main()


def _target(name: str):
    cat = load_arch_specs()
    arch = cat.arch(name)
    return arch, cat.default_device(arch)


@pytest.fixture(scope="module")
def gemm_sm80(toolchain):
    return build_example(KERNELS / "gemm_register_blocked.cu", toolchain, arch="sm_80")


@pytest.fixture(scope="module")
def gemm_sm90(toolchain):
    return build_example(KERNELS / "gemm_register_blocked.cu", toolchain, arch="sm_90")


def test_call_rel_noinc_to_a_local_label_is_a_loop_exit_edge(gemm_sm80):
    (k,) = gemm_sm80.kernels
    ins = k.sass.instructions
    calls = [x for x in ins if x.opcode == "CALL"]
    assert calls and all(call_is_jump(x) and x.predicate for x in calls), [x.text for x in calls]
    cfg = k.cfg
    pc_to_index = {x.pc: x.index for x in ins}
    for c in calls:
        src, dst = cfg.block_of[c.index], cfg.block_of[pc_to_index[c.branch_target]]
        edges = {(e.dst, e.kind) for e in cfg.edges if e.src == src}
        assert (dst, EdgeKind.TAKEN) in edges  # nvdisasm's target, taken
        assert (src + 1, EdgeKind.FALLTHROUGH) in edges  # predicated: falls through to the back branch
    # the K loop is found, and the call leaves it
    assert any(cfg.block_of[c.index] in L.body and cfg.block_of[pc_to_index[c.branch_target]] not in L.body
               for c in calls for L in cfg.loops)
    img = decode([(k.sass.mangled_name, ins)], None, {})
    slots = [s for s in range(len(img.kind)) if img.instr[s].opcode == "CALL"]
    assert all(img.kind[s] == K_BRA and img.branch_role[s] == B_EXIT for s in slots)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_register_blocked_gemm_executes_every_flop(arch, toolchain, request):
    prog = request.getfixturevalue(f"gemm_{arch.replace('_', '')}")
    (k,) = prog.kernels
    emu = emulate_detailed(AnalysisContext.of(*_target(arch), AnalysisOptions(), program=prog), k)
    flops = emu.profile.flops.get("fp32", 0.0)
    # 2·M·N·K FFMA FLOPs; the epilogue adds none (a store per output)
    assert 0.99 <= flops / (2 * M * N * K) <= 1.02, flops


def test_early_out_guard_is_skipped_to_reach_the_loop(gemm_sm90):
    # sm_90: `@P0 BRA <loop>` over a `K <= 0` path that stores zeros and jumps to the end. Falling
    # through (guards pass) would emulate the empty case: 0 FLOPs.
    (k,) = gemm_sm90.kernels
    ins = k.sass.instructions
    img = decode([(k.sass.mangled_name, ins)], None, {})
    first_loop = min(L.header for L in img.loops)
    guards = [s for s in range(first_loop) if img.kind[s] == K_BRA and img.instr[s].predicate]
    assert guards and img.target[guards[0]] <= first_loop
    assert img.branch_role[guards[0]] == B_JUMP


def test_subroutine_call_returns(toolchain):
    prog = build_example(KERNELS / "divide.cu", toolchain)
    (k,) = prog.kernels
    ins = k.sass.instructions
    (call,) = [x for x in ins if x.opcode == "CALL"]
    assert not call_is_jump(call)  # the division slow path: a `$__internal_...` subroutine
    assert any(x.opcode == "RET" for x in ins)
    img = decode([(k.sass.mangled_name, ins)], None, {})
    s = next(s for s in range(len(img.kind)) if img.instr[s].opcode == "CALL")
    assert img.kind[s] == K_CALL and img.instr[img.target[s]].pc == call.branch_target


def test_debug_build_runs_its_callees(toolchain, examples_dir, tmp_path):
    # `-G` keeps every device function as its own SASS function, reached by CALL.ABS.NOINC
    import math

    from kernelscope.analysis.frontend import isa
    from kernelscope.analysis.frontend.compile import compile_cuda
    from kernelscope.analysis.emulator.model import EmulationSettings
    from kernelscope.analysis.frontend.program import build_program
    from kernelscope.analysis.frontend.sass import disassemble
    from kernelscope.analysis.frontend.source import parse_source

    src = examples_dir / "noinline_call.cu"
    res = compile_cuda(src, arch="sm_90", user_flags=["-G"], toolchain=toolchain, workdir=tmp_path)
    assert res.success, [m.message for m in res.errors]
    prog = build_program(disassemble(res.cubin_path, toolchain.nvdisasm), parse_source(src.read_text()), str(src), {})
    (k,) = prog.kernels
    callee = next(f for f in prog.functions if f.mangled == "_Z11smooth_stepfff")
    emu = emulate_detailed(AnalysisContext.of(*_target("sm_90"), AnalysisOptions(), program=prog), k, settings=EmulationSettings(sample_loops=False))
    ran = {p.function for p in emu.profile.pcs if p.executed}
    assert {"_Z11smooth_stepfff", "fminf", "fmaxf"} <= ran
    # the kernel itself has no FP32 arithmetic under -G: every FLOP is the callee's, once per iteration
    assert sum(isa.flops(x) for x in k.sass.instructions) == 0
    (trips,) = emu.loop_trips
    threads = emu.profile.launch.blocks * emu.profile.launch.threads_per_block
    expected = sum(isa.flops(x) for x in callee.sass.instructions) * trips * threads
    assert math.isclose(emu.profile.flops["fp32"], expected, rel_tol=0.02)


def _prepared(toolchain, tmp_path, name: str | Path, flags=()):
    """(source model, program, prepared launch) of the one kernel in tests/emulator/kernels/`name`
    (or the file `name`), compiled for sm_90 by the real nvcc."""
    from kernelscope.analysis.frontend.compile import compile_cuda
    from kernelscope.analysis.frontend.program import build_program
    from kernelscope.analysis.frontend.sass import disassemble
    from kernelscope.analysis.frontend.source import parse_source
    from kernelscope.analysis.emulator.model import prepare

    src = name if isinstance(name, Path) else KERNELS / name
    res = compile_cuda(src, arch="sm_90", user_flags=list(flags), toolchain=toolchain, workdir=tmp_path)
    assert res.success, [m.message for m in res.errors]
    source = parse_source(src.read_text())
    prog = build_program(disassemble(res.cubin_path, toolchain.nvdisasm), source, str(src), {})
    (k,) = prog.kernels
    return source, prog, prepare(AnalysisContext.of(*_target("sm_90"), AnalysisOptions(), source, prog), k)


@pytest.mark.parametrize("flags", [(), ("-G",)], ids=["release", "debug"])
def test_math_slow_paths_are_not_run(toolchain, tmp_path, flags):
    """The slow paths of division, sqrt, rsqrt, reciprocal and sin are calls behind a guard that
    only rare operands fail: the model takes the fast path, says so, and assumes nothing about
    the loops inside them; pow()'s main path is a call that always runs. Under -G the early
    `return` is a branch over a jump to the exit: the guard passes there too."""
    from kernelscope.analysis.frontend.isa import math_slow_path
    from kernelscope.analysis.emulator.decode import reachable
    from kernelscope.analysis.emulator.model import EmulationSettings

    source, prog, prep = _prepared(toolchain, tmp_path, "math_slow_paths.cu", flags)
    k, target, img = prep.kernel, _target("sm_90"), prep.decoded
    calls = [s for s in range(len(img.kind)) if img.kind[s] == K_CALL]
    slow = {s: math_slow_path(img.instr[s]) for s in calls if math_slow_path(img.instr[s])}
    names = set(slow.values())
    assert {"__cuda_sm3x_div_rn_noftz_f32_slowpath", "__cuda_sm20_div_rn_f64_full",
            "__internal_trig_reduction_slowpathd"} <= names
    live = reachable(img)
    assert not live & set(slow), [img.instr[s].text for s in slow if s in live]
    assert any("pow" in img.instr[s].text for s in calls if s in live)  # pow(), or -G's call of it
    (note,) = [a for a in prep.assumptions if a.name == "math_slow_path"]
    assert all(n in note.detail for n in names)
    # the trigonometric reduction's loop runs for no warp: no trip count is assumed for it
    assert not [a for a in prep.assumptions if a.name.startswith("trip_count")]

    from kernelscope.analysis.advisor.static_facts import kernel_facts
    calls_named = [f.cause for f in kernel_facts(prog, k, target[0]).facts if f.kind == "noinline_call"]
    assert not [c for c in calls_named if c in names]  # the user wrote no such call

    emu = emulate_detailed(AnalysisContext.of(*target, AnalysisOptions(), source, program=prog), k, settings=EmulationSettings(sample_loops=False))
    ran = {p.function for p in emu.profile.pcs if p.executed}
    assert not {f for f in ran if any(n in f for n in names)}
    assert any("pow" in f for f in ran) or not flags  # release: pow's path is in the kernel's section
    assert emu.profile.flops.get("fp64", 0) > 0  # the work ran, not `if (i >= n) return;` alone


@pytest.mark.parametrize("bits, slow", [(0x3F800000, False), (0, True)], ids=["one", "zero"])
def test_a_slow_path_the_launchs_operand_takes_is_run_and_not_said_skipped(toolchain, tmp_path, bits, slow):
    """sqrtf's slow path takes zero, denormal, negative and special operands. An operand the launch
    gives (1.0f: the fast path; 0.0f: the slow one) decides the guard in the lanes' walk, and the
    `math_slow_path` assumption names only a slow path that is still skipped: until 2026-11-28 it
    said "not taken" of a call the model ran."""
    from kernelscope.analysis.frontend.isa import math_slow_path
    from kernelscope.analysis.emulator.decode import reachable

    src = tmp_path / "root.cu"
    src.write_text(f"""// kernelscope: grid=64 block=256 bits={bits}
__global__ void root(float *out, int bits) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = sqrtf(__int_as_float(bits));
}}
""")
    _, _, prep = _prepared(toolchain, tmp_path, src)
    img = prep.decoded
    calls = {s for s in range(len(img.kind)) if img.kind[s] == K_CALL and math_slow_path(img.instr[s])}
    assert calls
    assert bool(calls & reachable(img)) is slow
    notes = [a for a in prep.assumptions if a.name == "math_slow_path"]
    assert [a.value for a in prep.assumptions if a.name == "bits"] == [str(bits)]
    assert (notes == []) is slow
    assert all("sqrt" in a.detail for a in notes)


def test_the_float_trig_reduction_for_huge_arguments_is_not_run(toolchain, tmp_path):
    """sinf/cosf/tanf carry their Payne-Hanek reduction inline, behind a compare of |x| with
    105615 (not a call): the branch around it is taken, as around a slow-path call, and said so;
    its double-precision product and local table are never run. Until 2026-11-28 the branch fell
    through like any undecidable one: every iteration ran the reduction, and a register-only loop
    came out lg-throttle bound with "tile through shared memory" as its top advice (eunomia-bpf's
    basic-cuda-tutorial). The data branch `x > 0.5f` keeps the default rule."""
    from kernelscope.analysis.frontend.isa import trig_reduction_guard
    from kernelscope.analysis.emulator.decode import B_NOT_TAKEN, M_NONE, reachable, skips_trig_reduction
    from kernelscope.analysis.emulator.model import EmulationSettings

    source, prog, prep = _prepared(toolchain, tmp_path, "float_trig.cu")
    k, target, img = prep.kernel, _target("sm_90"), prep.decoded
    guards = [s for s in range(len(img.kind)) if trig_reduction_guard(img.instr[s]) is not None]
    assert len(guards) >= 2  # one per argument reduced: v (sinf and cosf share it) and 0.25 v (tanf)
    skipping = [s for s in range(len(img.kind)) if img.kind[s] == K_BRA and skips_trig_reduction(img, s)]
    assert skipping and all(img.branch_role[s] == B_JUMP for s in skipping)
    live = reachable(img)
    # the reduction's work: its product by pi/2 in double (DMUL, I2F.F64) and, where ptxas keeps
    # 2/pi's bits in a local array (nvcc 13.0; 13.5 keeps them in registers), its local accesses
    reduction = [s for s in range(len(img.kind)) if img.instr[s].opcode == "DMUL" or (
        img.instr[s].memory_space == "local" and img.instr[s].annotation != "SpillRefill")]
    assert reduction and not live & set(reduction)  # in the code, never run
    # the data branch (FSETP against 0.5) is undecided and falls through to the loop, as before
    data = [s for s in range(len(img.kind)) if img.kind[s] == K_BRA and s in live and img.instr[s].predicate
            and not skips_trig_reduction(img, s) and img.target[s] > s and img.branch_role[s] == B_NOT_TAKEN]
    assert data
    (note,) = [a for a in prep.assumptions if a.name == "math_slow_path"]
    assert "Payne-Hanek" in note.detail and "105615" in note.detail

    emu = emulate_detailed(AnalysisContext.of(*target, AnalysisOptions(), source, program=prog), k,
                           settings=EmulationSettings(sample_loops=False))
    by_pc = {p.pc: p for p in emu.profile.pcs}
    assert not [s for s in reduction if by_pc.get(img.instr[s].pc) and by_pc[img.instr[s].pc].executed]
    assert emu.profile.flops.get("fp32", 0) > 0 and img.mem.count(M_NONE) < len(img.mem)
