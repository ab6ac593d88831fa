"""The architecture catalogue: it loads, every number is cited, overrides merge, errors name the field."""

import json

import pytest

from kernelscope.analysis.machine.arch import (
    ArchCatalog, ArchSpecError, Resource, MemoryLevel, Precision, UnknownArchError, load_arch_specs,
)

ARCHS = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
PRODUCTS = {
    "V100 SXM2": "sm_70", "T4": "sm_75", "A100 SXM4 40GB": "sm_80", "A10": "sm_86", "RTX 3090": "sm_86",
    "L4": "sm_89", "RTX 4090": "sm_89", "H100 SXM": "sm_90", "B200": "sm_100", "RTX 5090": "sm_120",
}


@pytest.fixture(scope="module")
def cat() -> ArchCatalog:
    return load_arch_specs()


@pytest.mark.parametrize("name", ARCHS)
def test_every_arch_loads_with_every_instruction_class(cat, name):
    arch = cat.arch(name)
    assert set(arch.instructions) == set(Resource)
    assert arch.registers_per_sm == 65536 and arch.max_registers_per_thread == 255
    assert arch.register_allocation_unit == 256


@pytest.mark.parametrize("product, arch", PRODUCTS.items())
def test_every_product_loads(cat, product, arch):
    dev = cat.device(product)
    assert dev.arch == arch
    for p in Precision:
        assert cat.peak_flops(dev, p) > 0


def test_every_numeric_field_has_a_known_source(cat):
    groups = [*cat.archs.values(), *cat.devices.values()]
    groups += [ins for a in cat.archs.values() for ins in a.instructions.values()]
    for group in groups:
        for field, value in group:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                ids = group.sources_for(field)
                assert ids, f"{field} has no source"
                assert all(i in cat.sources for i in ids), f"{field} cites an unknown source"
    for sid, src in cat.sources.items():
        assert src["title"] and src["url"] and src["status"] in {"checked", "secondary", "unverified", "measured"}, sid


def test_arch_name_forms(cat):
    assert cat.arch("sm_90") is cat.arch("90") is cat.arch("sm_90a") is cat.arch("SM_90")
    assert cat.arch("sm_100").compute_capability == (10, 0)


def test_unknown_arch_lists_the_known_ones(cat):
    with pytest.raises(UnknownArchError) as e:
        cat.arch("sm_61")
    for name in ARCHS:
        assert name in str(e.value)
    assert isinstance(e.value, ArchSpecError)


def test_device_lookup_is_case_insensitive_and_accepts_keys(cat):
    assert cat.device("h100 sxm") is cat.device("H100") is cat.device("h100-sxm")
    assert cat.device("rtx 4090").name == "RTX 4090"
    with pytest.raises(ArchSpecError, match="unknown device"):
        cat.device("Voodoo 2")


def test_default_device_is_the_first_listed(cat):
    assert cat.default_device("sm_86").name == "A10"
    assert cat.default_device("sm_89").name == "L4"
    assert cat.default_device(cat.arch("sm_90")).name == "H100 SXM"


def test_derived_peaks_match_the_whitepapers(cat):
    # Derivation rate × 2 × SMs × boost clock reproduces the published peaks (A100 whitepaper:
    # 9.7 FP64, 19.5 FP32, 78 FP16 TFLOPS; H100 SXM: 33.5 FP64, 66.9 FP32, 133.8 FP16, 33.5 INT32).
    a100, h100 = cat.device("A100"), cat.device("H100")
    assert cat.peak_flops(a100, Precision.fp64) / 1e12 == pytest.approx(9.7, abs=0.05)
    assert cat.peak_flops(a100, Precision.fp32) / 1e12 == pytest.approx(19.5, abs=0.05)
    assert cat.peak_flops(a100, Precision.fp16) / 1e12 == pytest.approx(78.0, abs=0.05)
    assert cat.peak_flops(h100, Precision.fp32) / 1e12 == pytest.approx(66.9, abs=0.05)
    assert cat.peak_flops(h100, Precision.int32) / 1e12 == pytest.approx(33.5, abs=0.05)


def test_gaps_follow_from_rates(cat):
    a100 = cat.arch("sm_80")
    # 64 FP32 results/clk/SM over 4 sub-partitions = 16 lanes/clk: a warp instruction every 2 cycles.
    assert a100.pipe_gap(Resource.fp32) == 2
    # HFMA2 yields 64 results; 256/4 = 64 per clk per sub-partition -> 1 cycle.
    assert a100.pipe_gap(Resource.fp16) == 1
    assert cat.arch("sm_86").pipe_gap(Resource.fp64) == 64
    # DRAM: 1555 GB/s / (108 SMs × 1.41 GHz × 4) = 2.55 B/clk/SMSP -> 128 B every ~50 cycles.
    assert cat.pipe_gap(cat.device("A100"), Resource.dram) == pytest.approx(50.1, abs=0.1)


def test_shared_bandwidth_derivation(cat):
    # 128 B/clk/SM × 132 SMs × 1.98 GHz.
    assert cat.bandwidth(cat.device("H100"), MemoryLevel.shared) == pytest.approx(128 * 132 * 1.98e9)
    # L2's is a measurement where one was made (the H100's, benchmarks/microbench), else unknown
    assert cat.bandwidth(cat.device("H100"), MemoryLevel.l2) == pytest.approx(7263e9)
    assert cat.bandwidth(cat.device("A100"), MemoryLevel.l2) is None


def test_override_merges_fieldwise_and_cites_the_user_file(tmp_path):
    f = tmp_path / "measured.toml"
    f.write_text('[device.h100-sxm]\ndram_bandwidth_gbs = 2900\nl2_bandwidth_gbs = 7000\n')
    cat = load_arch_specs(f)
    dev = cat.device("H100 SXM")
    assert dev.dram_bandwidth_gbs == 2900 and dev.l2_bandwidth_gbs == 7000
    assert dev.sm_count == 132  # untouched fields keep the built-in values
    assert dev.user_override
    assert dev.sources_for("dram_bandwidth_gbs") == ("user-file",)
    assert dev.sources_for("sm_count") == load_arch_specs().device("H100").sources_for("sm_count")
    assert load_arch_specs().device("H100").dram_bandwidth_gbs == 3352  # the cached built-in is unchanged


def test_user_file_adds_a_device_in_json(tmp_path):
    f = tmp_path / "devices.json"
    # a GPU the catalogue lacks (the H200 it has since 2026-11-27)
    f.write_text(json.dumps({"device": {"h800": {
        "name": "H800 SXM", "arch": "sm_90", "sm_count": 132, "boost_clock_mhz": 1980,
        "dram_bandwidth_gbs": 3352, "tensor_fp16_dense_tflops": 989.4,
    }}}))
    dev = load_arch_specs(f).device("h800 sxm")
    assert dev.arch == "sm_90" and dev.source == ("user-file",)


def test_bad_field_is_named(tmp_path):
    f = tmp_path / "typo.toml"
    f.write_text('[device.h100-sxm]\ndram_bandwith_gbs = 2900\n')
    with pytest.raises(ArchSpecError) as e:
        load_arch_specs(f)
    assert "device.h100-sxm.dram_bandwith_gbs" in str(e.value) and str(f) in str(e.value)


def test_bad_value_is_named(tmp_path):
    f = tmp_path / "neg.toml"
    f.write_text('[device.t4]\nsm_count = -1\n')
    with pytest.raises(ArchSpecError, match=r"device\.t4\.sm_count"):
        load_arch_specs(f)


def test_unknown_arch_of_device_and_unknown_source_are_named(tmp_path):
    f = tmp_path / "a.toml"
    f.write_text('[device.t4]\narch = "sm_61"\n')
    with pytest.raises(ArchSpecError, match=r"device\.t4\.arch"):
        load_arch_specs(f)
    g = tmp_path / "b.toml"
    g.write_text('[device.t4]\nsource = ["nowhere"]\n')
    with pytest.raises(ArchSpecError, match="nowhere"):
        load_arch_specs(g)


def test_instruction_override_is_merged_per_class(tmp_path):
    f = tmp_path / "lat.toml"
    f.write_text('[arch.sm_90.instructions.dram]\nlatency = 478\nsource = ["user-file"]\n')
    arch = load_arch_specs(f).arch("sm_90")
    assert arch.instructions[Resource.dram].latency == 478
    assert arch.instructions[Resource.fp32].rate_per_sm == 128


def test_builtin_catalog_is_cached():
    assert load_arch_specs() is load_arch_specs()


def test_models_are_frozen(cat):
    with pytest.raises(Exception):
        cat.device("T4").sm_count = 1  # type: ignore[misc]


_LAYOUT_KERNEL = """__global__ void k(int* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = n;
}
"""


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"])
def test_the_constant_bank_layout_is_what_nvcc_emits(arch, tmp_path):
    """The catalogue's `constant_bank` (nvdisasm-cbank) against a real build: the kernel's first
    argument, blockDim.x and gridDim.x are read at the offsets the arch data says; a grid-stride
    loop is recognised from them (sm_100/sm_120 moved the whole layout, CUDA 13)."""
    import re

    from kernelscope.analysis.frontend.compile import compile_cuda
    from kernelscope.analysis.emulator.launch import loop_step
    from kernelscope.analysis.frontend.program import build_program
    from kernelscope.analysis.frontend.sass import disassemble
    from kernelscope.analysis.frontend.source import parse_source
    from kernelscope.analysis.frontend.toolchain import locate_toolchain

    tc = locate_toolchain()
    src = tmp_path / "k.cu"
    src.write_text(_LAYOUT_KERNEL)
    res = compile_cuda(src, arch=arch, toolchain=tc, workdir=tmp_path)
    assert res.success, [m.message for m in res.errors]
    program = build_program(disassemble(res.cubin_path, tc.nvdisasm), parse_source(_LAYOUT_KERNEL), str(src), {})
    (fn,) = program.kernels
    bank = load_arch_specs().arch(arch).constant_bank
    read = {0 if m.group(1) == "RZ" else int(m.group(1), 16)
            for i in fn.sass.instructions for op in i.operands for m in re.finditer(r"c\[0x0\]\[(RZ|0x[0-9a-f]+)\]", op)}
    assert {bank.params, bank.block_dim, bank.grid_dim} <= read, (arch, sorted(map(hex, read)))
    loop = fn.cfg.loops[0]
    body = [fn.sass.instructions[i] for b in loop.body for i in range(fn.cfg.blocks[b].start, fn.cfg.blocks[b].end)]
    latch = fn.sass.instructions[fn.cfg.blocks[sorted(loop.latches)[-1]].last]
    assert loop_step(sorted(body, key=lambda i: i.index), latch, list(fn.sass.instructions), bank) == ("dims", (("block", 0), ("grid", 0)))
    # sm_100+ prints a uniform branch's condition as an operand (`BRA.U !UP0, ...`): it is the guard
    for i in fn.sass.instructions:
        if i.opcode == "BRA" and len(i.operands) > 1 and re.fullmatch(r"!?U?P\d", i.operands[0]):
            assert i.predicate == i.operands[0], i.text
