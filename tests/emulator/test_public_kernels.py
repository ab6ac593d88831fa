"""Public kernels new to the model (issue #32): tests/data/public-kernels/ (README there), 33
kernels of 5 projects the emulator was never tuned on, compiled by the real nvcc.

Every global and shared access of every kernel is followed by the walked warp's executed lanes
or labeled (`test_lanes._accesses_labeled`), at the launch each program's host code makes; and
the memory shapes and counts below are facts read from the kernels' source by hand, not from the
model: a transpose's column access touches a 32 B sector per lane, an unpadded 32 x 32 tile of
doubles read down a column is served in 32 wavefronts, an n-body loop runs n trips of 17 FP32
operations and a reciprocal square root.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.analysis.context import AnalysisContext
from kernelscope.analysis.emulator.decode import M_GLOBAL, M_SHARED
from kernelscope.analysis.emulator.model import prepare
from kernelscope.analysis.frontend.program import base_name
from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.options import AnalysisOptions, LaunchHint

from _build import PUBLIC, build_example, real_flags
from test_lanes import _accesses_labeled

SOURCES = sorted(PUBLIC.rglob("*.cu"))

#: the launches the programs' own host code makes, where their source does not fold to one (an
#: argument from the command line, a size from a library call): the values each program's usage
#: line or default names
LAUNCHES = {
    # transpose-cuda.cu: `<# iterations> <matrix order>`, dimGrid(order/tile_dim, order/tile_dim),
    # dimBlock(tile_dim, block_rows); the block-strided variant launches 16 x 16 blocks
    "transposeNaive": LaunchHint(grid=(128, 128, 1), block=(32, 8, 1), values={"order": 4096}),
    "transposeCoalesced": LaunchHint(grid=(128, 128, 1), block=(32, 8, 1), values={"order": 4096}),
    "transposeNoBankConflict": LaunchHint(grid=(128, 128, 1), block=(32, 8, 1), values={"order": 4096}),
    "transposeBlockStrided": LaunchHint(grid=(256, 256, 1), block=(16, 16, 1), values={"order": 4096}),
    # nstream-cuda.cu: `<# iterations> <vector length>`, blocks of 256 over the length
    "nstream": LaunchHint(grid=4096, block=256, values={"n": 1 << 20}),
    "nstream2": LaunchHint(grid=4096, block=256, values={"n": 1 << 20}),
    # bank-conflicts.cu and memory-coalescing.cu launch one warp; their benchmark.py sweeps the offsets
    "kernel": LaunchHint(grid=1, block=32, values={"offset": 1, "startOffset": 1, "moveOffset": 32}),
    # spinlockReduction.cu's main: cBlocks = 1500, cThreads = 512, 8 B of shared memory a thread
    "SumValues_1": LaunchHint(grid=1500, block=512, dynamic_smem=4096, values={"N": 1 << 24}),
}


@pytest.fixture(scope="module")
def target():
    cat = load_arch_specs()
    arch = cat.arch("sm_90")
    return arch, cat.default_device(arch)


def _program(rel: str, toolchain):
    src = PUBLIC / rel
    return build_example(src, toolchain, flags=real_flags(src))


def _prepared(program, target, name: str, hint: LaunchHint | None = None, instance: str = ""):
    k = next(k for k in program.kernels if base_name(k.name) == name and instance in k.name)
    opts = AnalysisOptions(launch_hints={name: hint} if hint else {})
    return prepare(AnalysisContext.of(*target, opts, program.source, program), k)


def _line(path: Path, text: str, after: str = "") -> int:
    lines = path.read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if after in t) if after else 0
    return next(i for i, t in enumerate(lines[start:], start + 1) if text in t)


def _accesses(prep, line: int, store: bool | None = None, space: int | None = None):
    d = prep.decoded
    return [d.shape[s] for s in range(len(d))
            if d.mem[s] in (M_GLOBAL, M_SHARED) and d.instr[s].line == line and d.instr[s].opcode not in ("CCTL",)
            and (store is None or d.is_store[s] == store) and (space is None or d.mem[s] == space)]


def _sectors(shape) -> float:
    return shape.requests * 4  # requests are 128 B units of 32 B sectors


def test_the_set_is_new_public_code_with_its_provenance():
    """>= 20 kernels of >= 5 projects, each project with its licence and a README row naming its
    repository and commit, none of them already in the repository's other data."""
    readme = (PUBLIC / "README.md").read_text()
    projects = sorted(p.name for p in PUBLIC.iterdir() if p.is_dir())
    assert len(projects) >= 5
    root = PUBLIC.parents[2]
    # no project of the model's test and calibration data (tests/data/real, benchmarks/accuracy)
    elsewhere = "".join(p.read_text() for p in (root / "tests" / "data" / "real" / "README.md",
                                                root / "benchmarks" / "accuracy" / "README.md"))
    # and no file of the launch-inputs benchmark: it took other programs of the CUDA Handbook in the
    # same wave (issue 31), none of these
    programs = root / "benchmarks" / "programs"
    for p in projects:
        row = next(r for r in readme.splitlines() if r.startswith(f"| `{p}/`"))
        repo = row.split("](https://github.com/")[1].split(")")[0]
        assert len(row.split("`")[3]) == 40, row  # the commit
        assert repo not in elsewhere, repo
        assert not [f for f in (PUBLIC / p).rglob("*.cu") if (programs / p / f.relative_to(PUBLIC / p)).exists()], p
        assert any(f.name.upper().startswith(("LICENSE", "COPYING")) for f in (PUBLIC / p).iterdir()) or \
            all("Redistribution and use" in f.read_text() for f in (PUBLIC / p).rglob("*.cu")), p
    flags = json.loads((PUBLIC / "build_flags.json").read_text())
    assert all((PUBLIC / f).is_file() for f in flags if f != "comment")


def test_every_public_access_is_followed_or_labeled(toolchain, target):
    """Each global and shared access of the 33 kernels, at the launches their programs make
    (`LAUNCHES`; the others at the launch their source folds to), is followed or labeled."""
    seen, kernels, followed = 0, 0, 0
    for src in SOURCES:
        program = build_example(src, toolchain, flags=real_flags(src))
        for k in program.kernels:
            name = base_name(k.name)
            opts = AnalysisOptions(launch_hints={name: LAUNCHES[name]} if name in LAUNCHES else {})
            prep = prepare(AnalysisContext.of(*target, opts, program.source, program), k)
            seen += _accesses_labeled(prep, f"{src.relative_to(PUBLIC)} {k.name}")
            followed += len(prep.lanes.followed)
            kernels += 1
    assert kernels >= 20 and seen > 1000
    assert followed > 0.8 * seen  # labeled is the exception: the lanes compute most addresses


def test_transposes_of_doubles(toolchain, target):
    """transpose-cuda.cu with order 4096: a row of 32 doubles is 256 B, 8 sectors; the naive
    kernel's `B[x*order + (y+j)]` puts each lane in another row, a sector each; the tiled kernels
    read their tile down a column: 32 x 32 doubles put a column in one bank pair (32 wavefronts),
    the padded 32 x 33 tile spreads it over 16 pairs (2 wavefronts, the least 256 B take)."""
    program = _program("parres-kernels/Cxx11/transpose-cuda.cu", toolchain)
    path = PUBLIC / "parres-kernels" / "Cxx11" / "transpose-cuda.cu"
    naive = _prepared(program, target, "transposeNaive", LAUNCHES["transposeNaive"], "<false>")
    line = _line(path, "B[x*order + (y+j)] += A[(y+j)*order + x];")
    shapes = _accesses(naive, line)
    rows = [s for s in shapes if _sectors(s) == 8]
    columns = [s for s in shapes if _sectors(s) == 32]
    assert len(rows) >= 1 and len(columns) >= 2 and len(rows) + len(columns) == len(shapes), \
        [(_sectors(s), s.pattern) for s in shapes]
    assert all(s.pattern == "uncoalesced" for s in columns)
    for name, wavefronts in (("transposeCoalesced", 32), ("transposeNoBankConflict", 2)):
        prep = _prepared(program, target, name, LAUNCHES[name], "<false>")
        read = _accesses(prep, _line(path, "B[(y+j)*order + x] += tile[threadIdx.x][threadIdx.y + j];", name),
                         store=False, space=M_SHARED)
        write = _accesses(prep, _line(path, "tile[threadIdx.y+j][threadIdx.x] = A[(y+j)*order + x];", name),
                          store=True, space=M_SHARED)
        assert read and {s.wavefronts for s in read} == {wavefronts}, (name, [s.wavefronts for s in read])
        assert write and {s.wavefronts for s in write} == {2}, (name, [s.wavefronts for s in write])
        stores = _accesses(prep, _line(path, "B[(y+j)*order + x] += tile[threadIdx.x][threadIdx.y + j];", name),
                           store=True, space=M_GLOBAL)
        assert stores and {_sectors(s) for s in stores} == {8}  # the tiles' point: rows again


@pytest.mark.parametrize("offset", [1, 2, 4, 32])
def test_bank_conflicts_follow_the_offset_argument(toolchain, target, offset):
    """bank-conflicts.cu: `sharedMem[threadId * offset]` of 4 B words, 32 banks: `offset` lanes
    share a bank, so each access takes `offset` wavefronts (for offset <= 32); `index += 32`
    keeps the banks from one iteration to the next."""
    program = _program("hardware-effects-gpu/bank-conflicts/bank-conflicts.cu", toolchain)
    prep = _prepared(program, target, "kernel", LaunchHint(grid=1, block=32, values={"offset": offset}))
    path = PUBLIC / "hardware-effects-gpu" / "bank-conflicts" / "bank-conflicts.cu"
    shapes = _accesses(prep, _line(path, "sharedMem[index] += index * i;"))
    assert shapes and {s.wavefronts for s in shapes} == {float(offset)}, [s.wavefronts for s in shapes]
    assert {s.pattern for s in shapes} == ({"coalesced"} if offset == 1 else {"bank_conflict"})


@pytest.mark.parametrize("start,sectors", [(1, 4), (2, 8), (8, 32)])
def test_coalescing_follows_the_start_offset_argument(toolchain, target, start, sectors):
    """memory-coalescing.cu: `memory[threadId * startOffset]` of 4 B words: 32 lanes `startOffset`
    words apart touch 4 * startOffset sectors (a sector each from 8 words apart); a move of 32
    words keeps each iteration's lanes 128 B aligned."""
    program = _program("hardware-effects-gpu/memory-coalescing/memory-coalescing.cu", toolchain)
    prep = _prepared(program, target, "kernel",
                     LaunchHint(grid=1, block=32, values={"startOffset": start, "moveOffset": 32}))
    path = PUBLIC / "hardware-effects-gpu" / "memory-coalescing" / "memory-coalescing.cu"
    shapes = _accesses(prep, _line(path, "memory[index] += index * i;"))
    assert shapes and {_sectors(s) for s in shapes} == {sectors}, [_sectors(s) for s in shapes]
    assert all(s in prep.lanes.followed for s in range(len(prep.decoded)) if prep.decoded.shape[s] in shapes)


def test_csr_rows_are_followed_and_the_gather_is_data_dependent(toolchain, target):
    """spmv.cu: a warp per row (threads_per_row 32), `rows[i]` and `rows[i+1]` one address per
    warp; `values[j]` and `cols[j]` start at the loaded `rows[i]` and step by lane, so their
    strides are exact (4 sectors) on an unknown base; `x + cols[j]` is a gather of loaded
    columns: data-dependent, and the reason names the load."""
    program = _program("kernel-tuner/examples/cuda/spmv.cu", toolchain)
    prep = _prepared(program, target, "spmv_kernel",
                     LaunchHint(grid=4096, block=64, values={"nrows": 8192}))
    path = PUBLIC / "kernel-tuner" / "examples" / "cuda" / "spmv.cu"
    d, lanes = prep.decoded, prep.lanes
    bounds = _accesses(prep, _line(path, "int start = rows[i]+tx;")) + \
        _accesses(prep, _line(path, "int end = rows[i+1];"))
    assert bounds and all(_sectors(s) == 1 for s in bounds)
    body = [s for s in range(len(d)) if d.mem[s] == M_GLOBAL and d.instr[s].line == _line(
        path, "local_y += values[j] * LDG(x + cols[j]);")]
    assert body and all(s in lanes.followed and s in lanes.relative and _sectors(d.shape[s]) == 4 for s in body)
    assert lanes.data_dependent and all(d.shape[s].pattern == "data_dependent" for s in lanes.data_dependent)
    assert all("the value loaded by LDG" in why for why in lanes.data_dependent.values())
    note = next(a for a in prep.assumptions if a.name == "data_dependent")
    assert note.source == "default" and f"{len(lanes.data_dependent)} accesses" == note.value


@pytest.mark.parametrize("file", ["nbody-orig.cu", "nbody-soa.cu", "nbody-block.cu", "nbody-unroll.cu"])
def test_nbody_loop_runs_n_trips_of_broadcasts(toolchain, target, file):
    """mini-nbody: every thread reads body j in the same iteration, so each load of the j loop
    is one address (a broadcast, one sector); the loop's trips come from executing `j < n` with
    the program's n (30000, its default without arguments)."""
    program = _program(f"mini-nbody/cuda/{file}", toolchain)
    prep = _prepared(program, target, "bodyForce")
    path = PUBLIC / "mini-nbody" / "cuda" / file
    lines = path.read_text().splitlines()
    loop_lines = {i for i, t in enumerate(lines, 1) if "p[j]" in t or "spos[j]" in t or "p[tile * BLOCK_SIZE + j]" in t}
    d = prep.decoded
    inner = [d.shape[s] for s in range(len(d)) if d.mem[s] == M_GLOBAL and d.instr[s].line in loop_lines
             and not d.is_store[s] and "[j]" in lines[d.instr[s].line - 1]]
    if file in ("nbody-orig.cu", "nbody-soa.cu"):
        assert inner and all(_sectors(s) == 1 and s.pattern == "broadcast" for s in inner), \
            [(_sectors(s), s.pattern) for s in inner]
    trips = {a.name: a.value for a in prep.assumptions if a.name.startswith("trip_count")}
    assert trips and all("64" != v for v in trips.values()), trips  # not the default


def test_atomics_broadcast_and_coalesced(toolchain, target):
    """atomic32.cu: `atomicAdd(&out[threadIdx.x], *pIn)`: `*pIn` one address for the warp (one
    sector); the atomic's 32 consecutive words, 4 sectors."""
    program = _program("cudahandbook/atomics/atomic32.cu", toolchain)
    prep = _prepared(program, target, "AddTo32", LaunchHint(grid=1, block=32))
    path = PUBLIC / "cudahandbook" / "atomics" / "atomic32.cu"
    line = _line(path, "(void) atomicAdd( &out[threadIdx.x], *pIn );")
    d = prep.decoded
    slots = [s for s in range(len(d)) if d.instr[s].line == line and d.mem[s] in (M_GLOBAL,)]
    assert [_sectors(d.shape[s]) for s in slots] == [1]  # the load of *pIn
    atomics = [s for s in range(len(d)) if d.instr[s].opcode.startswith(("RED", "ATOM"))]
    assert atomics and all(_sectors(d.shape[s]) == 4 for s in atomics)


def test_json_counts_are_the_executed_runs(toolchain):
    """The JSON's per-thread FLOPs and bytes are the emulated run's totals per thread of its
    launch: per thread x threads is the profile's total, and the roofline's point is made of
    the same numbers. nbody-soa.cu at its default n = 30000 runs its j loop n times per thread,
    17 FP32 operations each by its source (FMA = 2) plus the reciprocal square root's range
    scaling (two multiplications under a predicate a denormal distance sets, counted as issued);
    the update of v adds 6."""
    from kernelscope.analysis.pipeline import analyze

    folder = PUBLIC / "mini-nbody"
    # the launch of main() without arguments: nBodies = 30000, (30000 + 255) / 256 blocks of 256
    n = 30000
    opts = AnalysisOptions(flags=real_flags(folder / "cuda" / "nbody-soa.cu"),
                           launch_hints={"bodyForce": LaunchHint(grid=118, block=256, values={"n": n})})
    result = json.loads(analyze(folder / "cuda" / "nbody-soa.cu", opts, depth="quick",
                                toolchain=toolchain).model_dump_json())
    (kernel,) = result["kernels"]
    (profile,) = [p for p in result["profile"]["kernels"] if p["kernel"] == kernel["mangled"]]
    launch = profile["launch"]
    threads = launch["grid"][0] * launch["grid"][1] * launch["grid"][2] * \
        launch["block"][0] * launch["block"][1] * launch["block"][2]
    for counts, totals in ((kernel["flops_per_thread"], profile["flops"]), (kernel["bytes_per_thread"], profile["bytes"])):
        assert counts and counts.keys() == totals.keys()
        for key, total in totals.items():
            assert counts[key] * threads == pytest.approx(total, rel=1e-12), key
    assert 17 * n <= kernel["flops_per_thread"]["fp32"] <= 19 * n + 6
    (roof,) = [r for r in result["rooflines"] if r["kernel"] == kernel["mangled"]]
    assert roof["precision"] == "fp32" and roof["points"]
    for point in roof["points"]:
        per_byte = kernel["flops_per_thread"]["fp32"] / kernel["bytes_per_thread"][point["level"]]
        assert point["intensity"] == pytest.approx(per_byte, rel=1e-9)
        assert point["performance"] * profile["duration_s"] == pytest.approx(profile["flops"]["fp32"], rel=1e-9)


@pytest.mark.parametrize("kernel", ["cn_pnpoly", "cn_pnpoly_naive"])
def test_a_float_deciding_a_branch_is_labeled(toolchain, target, kernel):
    """pnpoly.cu: the edges' slope `(vk.x-vj.x) / (vk.y-vj.y)` is a float division, whose range
    check (FCHK) branches to its slow path on the values of the `__constant__` vertices: the walk
    cannot decide those branches, and says that a floating-point value decides each."""
    program = _program("kernel-tuner/examples/cuda/pnpoly.cu", toolchain)
    prep = _prepared(program, target, kernel, LaunchHint(grid=4096, block=256, values={"n": 1 << 20}))
    path = PUBLIC / "kernel-tuner" / "examples" / "cuda" / "pnpoly.cu"
    division = _line(path, "float slope = (vk.x-vj.x) / (vk.y-vj.y);", f"void {kernel}(")
    branches = prep.lanes.unknown_branches
    assert branches and all("a floating-point value decides it" in why for why in branches.values()), branches
    assert any(f"(FCHK at line {division})" in why for why in branches.values())


#: the row/column split of a 1-D thread index by a kernel argument, as tutorials write a transpose
#: (integer division by a runtime value: I2F.U32.RP, MUFU.RCP, F2I.TRUNC and IMAD corrections)
DIVIDED_TRANSPOSE = """
__global__ void transpose_1d(const float *A, float *B, int n)
{
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    int row = tid / n;
    int col = tid % n;
    if (row < n && col < n)
        B[col * n + row] = A[row * n + col];
}
"""


@pytest.mark.parametrize("n", [96, 1000, 4099])
def test_division_by_an_argument_is_executed(toolchain, target, tmp_path, n):
    """`row = tid / n; col = tid % n` with n given: the quotient and remainder are exact in every
    lane (the reciprocal's MUFU.RCP executed), so `A[row * n + col]` is `A[tid]`, 4 sectors, and
    `B[col * n + row]` puts each lane in another row, 32 sectors; neither is labeled."""
    src = tmp_path / "transpose_1d.cu"
    src.write_text(DIVIDED_TRANSPOSE)
    program = build_example(src, toolchain)
    prep = _prepared(program, target, "transpose_1d", LaunchHint(grid=4096, block=256, values={"n": n}))
    line = _line(src, "B[col * n + row] = A[row * n + col];")
    (load,) = _accesses(prep, line, store=False)
    (store,) = _accesses(prep, line, store=True)
    assert (_sectors(load), load.pattern) == (4, "coalesced")
    assert (_sectors(store), store.pattern) == (32, "uncoalesced")
    assert not prep.lanes.data_dependent
