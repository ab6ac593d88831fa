"""SASS parsing checked against real nvcc/nvdisasm output and independent reads of it.

The independent reads are `cuobjdump -sass` (opcodes, PCs, encodings) and `nvdisasm -g`
(line table without inlining), parsed here with their own small regexes.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import pytest

from kernelscope.analysis.frontend import isa
from kernelscope.analysis.process import run_tool
from kernelscope.analysis.frontend.sass import decode_control, defs_and_uses, demangle, disassemble, parse_nvdisasm, split_operands
from kernelscope.analysis.frontend.instructions import SassModule

DATA = Path(__file__).resolve().parents[1] / "data"


def cuda_bin() -> Path:
    try:
        import nvidia
    except ImportError:
        pytest.skip("pip CUDA toolchain not installed")
    for root in nvidia.__path__:
        b = Path(root) / "cu13" / "bin"
        if (b / "nvcc").exists() and (b / "nvdisasm").exists():
            return b
    pytest.skip("nvcc/nvdisasm wheels not installed")


def compile_cubin(src: str, out_dir: Path, name: str, *extra: str, arch: str = "sm_90") -> Path:
    bindir = cuda_bin()
    cu = out_dir / f"{name}.cu"
    cu.write_text(src)
    cubin = out_dir / f"{name}.cubin"
    env = {"PATH": f"{bindir}:/usr/bin:/bin"}
    res = run_tool([str(bindir / "nvcc"), f"-arch={arch}", "-lineinfo", "-cubin", *extra, "-o", str(cubin), str(cu)],
                   env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    return cubin


def build(src: str, out_dir: Path, name: str, *extra: str, arch: str = "sm_90") -> tuple[Path, SassModule]:
    cubin = compile_cubin(src, out_dir, name, *extra, arch=arch)
    return cubin, disassemble(cubin, cuda_bin() / "nvdisasm")


KERNELS = r"""
__device__ __forceinline__ float helper(float x, float y) {
    return x * y + 1.0f;
}
__global__ void saxpy(const float* __restrict__ a, float* b, int n, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0;
        for (int j = 0; j < n; ++j) {
            s += helper(a[j], a[i]);
        }
        b[i] = s + (float)(i / d);
        double dd = (double)b[i] * 2.0;
        ((double2*)b)[i] = make_double2(dd, dd + 1.0);
    }
}
__device__ float ext(float x) { return x * x; }
"""


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("sass")
    cubin, mod = build(KERNELS, d, "k", "-rdc=true")
    return d, cubin, mod


def _cuobjdump_sass(cubin: Path) -> dict[str, list[tuple[int, str, int]]]:
    """function -> [(pc, instruction text, high encoding word)] from `cuobjdump -sass`."""
    out = run_tool([str(cuda_bin() / "cuobjdump"), "-sass", str(cubin)], timeout=60).stdout
    fns: dict[str, list[tuple[int, str, int]]] = {}
    cur = None
    lines = out.splitlines()
    for k, ln in enumerate(lines):
        if (m := re.search(r"Function : (\S+)", ln)):
            cur = fns.setdefault(m[1], [])
        elif cur is not None and (m := re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\*", ln)):
            hi = int(re.search(r"0x[0-9a-f]{16}", lines[k + 1])[0], 16)
            cur.append((int(m[1], 16), m[2].rstrip(" ;"), hi))
    return fns


def _nvdisasm_lines(cubin: Path) -> dict[str, dict[int, int]]:
    """function -> pc -> line, from `nvdisasm -g` (innermost line, no inline info)."""
    out = run_tool([str(cuda_bin() / "nvdisasm"), "-g", "-c", str(cubin)], timeout=60).stdout
    fns: dict[str, dict[int, int]] = {}
    cur, line = None, None
    for ln in out.splitlines():
        if (m := re.match(r"//-+ \.text\.(\S+)", ln)):
            cur, line = fns.setdefault(m[1], {}), None
        elif (m := re.search(r'//## File ".*", line (\d+)', ln)):
            line = int(m[1])
        elif cur is not None and (m := re.match(r"\s*/\*([0-9a-f]{4,})\*/", ln)):
            cur[int(m[1], 16)] = line
    return fns


def test_instructions_match_cuobjdump(built):
    _, cubin, mod = built
    ref = _cuobjdump_sass(cubin)
    assert {f.mangled_name for f in mod.functions} == set(ref)
    for f in mod.functions:
        want = ref[f.mangled_name]
        assert len(f.instructions) == len(want)
        for ins, (pc, text, hi) in zip(f.instructions, want):
            assert ins.pc == pc
            words = text.split()
            pred = words[0][1:] if words[0].startswith("@") else None
            mnemonic = words[1] if pred else words[0]
            assert ins.full_opcode == mnemonic
            assert ins.predicate == (None if pred in ("PT", None) else pred)
            assert ins.control == decode_control(hi)


def test_lines_match_nvdisasm_g(built):
    _, cubin, mod = built
    ref = _nvdisasm_lines(cubin)
    for f in mod.functions:
        for ins in f.instructions:
            assert ins.line == ref[f.mangled_name][ins.pc], ins.text


def test_inline_chain_of_forceinline_helper(built):
    _, _, mod = built
    src = KERNELS.splitlines()
    helper_line = next(i for i, s in enumerate(src, 1) if "return x * y" in s)
    call_line = next(i for i, s in enumerate(src, 1) if "s += helper" in s)
    fn = mod.function("_Z5saxpyPKfPfii")
    inlined = [x for x in fn.instructions if x.line == helper_line]
    assert inlined and any(x.opcode == "FFMA" for x in inlined)
    for x in inlined:
        assert [loc.line for loc in x.inline_chain] == [call_line]
        assert x.inline_chain[0].file.endswith("k.cu")
    assert all(not x.inline_chain for x in fn.instructions if x.line == call_line)


def test_load_write_barrier_is_waited_on_by_consumer(built):
    _, _, mod = built
    checked = 0
    for fn in mod.functions:
        ins = fn.instructions
        for k, ld in enumerate(ins):
            if ld.opcode != "LDG":
                continue
            assert ld.control.write_barrier is not None
            consumer = next((x for x in ins[k + 1:] if set(x.uses) & set(ld.defs)), None)
            if consumer is None:
                continue
            # The wait may sit on the consumer or on an instruction between the two.
            waits = {b for x in ins[k + 1:consumer.index + 1] for b in x.control.waits_on}
            assert ld.control.write_barrier in waits
            checked += 1
    assert checked >= 2


def test_wide_registers_and_predicates(built):
    _, _, mod = built
    fn = mod.function("_Z5saxpyPKfPfii")
    st128 = next(x for x in fn.instructions if x.full_opcode == "STG.E.128")
    data = st128.operands[1]
    n = int(data[1:])
    assert set(st128.uses) >= {f"R{n + k}" for k in range(4)}
    dfma = [x for x in fn.instructions if x.opcode in ("DADD", "DMUL", "DFMA")]
    assert dfma
    for x in dfma:
        d = int(x.operands[0][1:])
        assert x.defs == (f"R{d}", f"R{d + 1}")
    setp = next(x for x in fn.instructions if x.opcode == "ISETP")
    assert setp.defs[0].startswith("P") and "PT" not in setp.defs
    guarded = next(x for x in fn.instructions if x.predicate is not None)
    assert guarded.predicate.lstrip("!") in guarded.uses
    for x in fn.instructions:
        assert not {"RZ", "URZ", "PT", "UPT"} & (set(x.defs) | set(x.uses))
        if x.opcode in ("STG", "STS", "STL", "BAR", "BRA", "EXIT", "RED"):
            assert not x.defs


def test_kernels_devices_and_demangling(built):
    _, _, mod = built
    assert mod.arch == "sm_90"
    k = mod.function("_Z5saxpyPKfPfii")
    assert k.is_kernel and k.name == "saxpy(float const*, float*, int, int)"
    ext = mod.function("_Z3extf")
    assert ext is not None and not ext.is_kernel and ext.name == "ext(float)"
    assert demangle(["$_Z1kv$_Z3fooi", "notmangled"]) in (
        {"$_Z1kv$_Z3fooi": "foo(int)", "notmangled": "notmangled"},
        {"$_Z1kv$_Z3fooi": "_Z3fooi", "notmangled": "notmangled"})  # without c++filt


def test_branch_targets_and_memory_spaces(built):
    _, _, mod = built
    fn = mod.function("_Z5saxpyPKfPfii")
    pcs = {x.pc for x in fn.instructions}
    bras = [x for x in fn.instructions if x.opcode == "BRA"]
    assert bras and all(x.branch_target in pcs for x in bras)
    spaces = {x.opcode: x.memory_space for x in fn.instructions}
    assert spaces["LDG"] == "global" and spaces["STG"] == "global" and spaces["LDC"] == "constant"


# ---- pure parser on a captured listing (tests/data/nvdisasm_sm90.*, from nvdisasm 13.5) ----

@pytest.fixture(scope="module")
def captured() -> SassModule:
    return parse_nvdisasm((DATA / "nvdisasm_sm90.txt").read_text())


def test_captured_listing(captured):
    sh = captured.function("_Z2shPf")
    assert sh.is_kernel and len(sh.instructions) == 40
    s2r, imad = sh.instructions[1], sh.instructions[7]
    assert (s2r.opcode, s2r.control.write_barrier) == ("S2R", 0)
    assert imad.full_opcode == "IMAD.WIDE.U32" and imad.control.waits_on == (0,)
    assert imad.defs == ("R2", "R3") and imad.uses == ("R9", "R2", "R3")
    ldg = sh.instructions[8]
    assert ldg.uses == ("UR8", "UR9", "R2", "R3") and ldg.defs == ("R0",)
    atom = sh.at_pc(0x140)
    assert atom.opcode == "ATOMG" and atom.defs == ("R5",) and "R11" in atom.uses
    assert [loc.line for loc in atom.inline_chain] == [23] and atom.location.file.endswith("sm_20_atomic_functions.hpp")
    assert sh.at_pc(0x130).opcode == "BAR" and isa.is_sync(sh.at_pc(0x130))
    uiadd = sh.at_pc(0xB0)
    assert uiadd.defs == ("UR6", "UP0")
    saxpy = captured.function("_Z5saxpyPKfPfii")
    call = next(x for x in saxpy.instructions if x.opcode == "CALL")
    assert [s.pc for s in saxpy.subroutines] == [call.branch_target] == [0xC70]
    assert saxpy.at_pc(0xC90).opcode == "RET" and saxpy.at_pc(0xC90).branch_target is None


def test_text_listing_agrees_with_nvdisasm_json(captured):
    # nvdisasm's JSON mode (captured from the same cubin) is an independent reading of each
    # instruction: the text listing alone must give the same opcode, operands, guard and line.
    doc = json.loads((DATA / "nvdisasm_sm90.json").read_text())
    meta = doc[2]
    files = [posixpath.normpath(posixpath.join(meta["directories"][f["dir-idx"]], f["file"])) for f in meta["files"]]
    assert [f["function-name"] for f in doc[1]] == [f.mangled_name for f in captured.functions]
    for f in doc[1]:
        ours = captured.function(f["function-name"]).instructions
        assert len(ours) == len(f["sass-instructions"])
        line = None
        for x, r in zip(ours, f["sass-instructions"]):
            if x.pc in {s.pc for s in captured.function(f["function-name"]).subroutines}:
                line = None  # an appended subroutine does not inherit its caller's last line
            if "source-line" in r:
                line = (files[r["source-file-id"]], r["source-line"])
            theirs = split_operands(r.get("operands", ""))
            if x.operands and x.operands[-1].startswith("`("):  # a label in text; JSON: its address or symbol
                target = theirs[-1]
                if re.fullmatch(r"0x[0-9a-f]+", target):
                    assert x.branch_target == int(target, 16), x.text
                else:
                    assert x.operands[-1] == f"`({target})", x.text
                theirs = (*theirs[:-1], x.operands[-1])
            assert x.full_opcode == r["opcode"] and x.operands == theirs, x.text
            assert x.predicate == (r["predicate"].lstrip("@") if "predicate" in r else None), x.text
            got = (x.location.file, x.location.line) if x.location else None
            assert got == line, (hex(x.pc), x.text)


def test_known_control_word():
    cc = decode_control(0x002FD8000F8E0200)
    assert 1 in cc.waits_on and cc.stall == 12 and cc.write_barrier is None and cc.read_barrier is None
    ldg = decode_control(0x000EA2000C1E1900)
    assert ldg.write_barrier == 2 and ldg.stall == 1


def test_split_operands_and_defs_uses():
    assert split_operands("R0,desc[UR8][R2.64+0x10],c[0x0][0x210]") == ("R0", "desc[UR8][R2.64+0x10]",
                                                                        "c[0x0][0x210]")
    assert split_operands("R20,32@lo((f + 0x140))") == ("R20", "32@lo((f + 0x140))")
    assert defs_and_uses("STG", ("E", "64"), ("desc[UR4][R2.64]", "R6"), None) == (
        (), ("UR4", "UR5", "R2", "R3", "R6", "R7"))
    assert defs_and_uses("LDG", ("E", "128"), ("R8", "[R2.64]"), "!P1") == (
        ("R8", "R9", "R10", "R11"), ("P1", "R2", "R3"))
    assert defs_and_uses("F2F", ("F64", "F32"), ("R4", "R7"), None) == (("R4", "R5"), ("R7",))
    assert defs_and_uses("F2F", ("F32", "F64"), ("R4", "R6"), None) == (("R4",), ("R6", "R7"))
    assert defs_and_uses("FSETP", ("GEU", "AND"), ("P0", "PT", "|R3|", "-R4.reuse", "!P1"), None) == (
        ("P0",), ("R3", "R4", "P1"))
    assert defs_and_uses("LOP3", ("LUT",), ("P0", "RZ", "R0", "0x7f", "RZ", "0xc0", "!PT"), None) == (("P0",), ("R0",))
    assert defs_and_uses("SHFL", ("BFLY",), ("PT", "R3", "R2", "0x10", "0x1f"), None) == (("R3",), ("R2",))
    assert defs_and_uses("IADD3", (), ("R4", "P0", "P1", "R2", "R3", "RZ"), None) == (("R4", "P0", "P1"), ("R2", "R3"))
    assert defs_and_uses("HMMA", ("16816", "F32"), ("R20", "R4", "R16", "RZ"), None)[0] == ("R20", "R21", "R22", "R23")


def test_a_uniform_base_beside_a_64_bit_register_is_read_as_a_pair(tmp_path):
    """sm_75 addresses a global through `[R2.64+UR6]`: R2:R3 the offset, UR6:UR7 the pointer
    a `ULDC.64` loaded. The instruction reads UR7 too, as the walk computes the address
    (emulator.walk._address_terms); until 2026-11-29 its uses stopped at UR6."""
    src = """__global__ void add_wide(const float* a, const float* b, float* c, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
    _, mod = build(src, tmp_path, "wide", arch="sm_75")
    pairs = [(x, m) for fn in mod.functions for x in fn.instructions for op in x.operands
             if (m := re.search(r"\[R\d+\.64\+UR(\d+)\]", op))]
    assert pairs, "no [Rn.64+URm] operand in the sm_75 build"
    assert all({f"UR{m[1]}", f"UR{int(m[1]) + 1}"} <= set(x.uses) for x, m in pairs), \
        [(x.text, x.uses) for x, m in pairs]


def test_parses_a_5000_instruction_listing(captured):
    """24 copies of saxpy's section, renamed: every instruction parsed, with its control bits. How fast
    this is is measured by benchmarks/parse.py (no test asserts a time)."""
    text = (DATA / "nvdisasm_sm90.txt").read_text()
    sec = text[text.index("//--------------------- .text._Z5saxpyPKfPfii"):text.index("//--------------------- SYMBOLS")]
    big_text = "\t.target\tsm_90\n" + "".join(sec.replace("_Z5saxpyPKfPfii", f"_Z5big{k}v") for k in range(24))
    mod = parse_nvdisasm(big_text)
    one = next(f for f in captured.functions if f.name == "_Z5saxpyPKfPfii")
    assert [f.name for f in mod.functions] == [f"_Z5big{k}v" for k in range(24)]
    assert sum(len(f.instructions) for f in mod.functions) == 24 * len(one.instructions) >= 5000
    assert all(x.control is not None for f in mod.functions for x in f.instructions)
