"""Occupancy against the CUDA rules (cuda_occupancy.h) and the Best Practices Guide's worked example.

Every expected value is worked out by hand in the test's comment, from the rule it exercises.
Shorthands: regs/warp = ceil(regs × 32 / 256) × 256; warps that fit = (65536 / 4 // regs/warp) × 4.
"""

import pytest

from kernelscope.analysis.machine.arch import load_arch_specs
from kernelscope.analysis.machine.occupancy import Limiter, occupancy


@pytest.fixture(scope="module")
def cat():
    return load_arch_specs()


def test_best_practices_guide_example_128_threads(cat):
    # CUDA C++ Best Practices Guide, "Calculating Occupancy": on CC 7.0, 128-thread blocks with
    # 37 registers/thread give 75 % occupancy with 12 active blocks per SM.
    # 37 × 32 = 1184 -> 1280 regs/warp; 16384 // 1280 = 12 warps per sub-partition -> 48 warps;
    # 48 // 4 warps per block = 12 blocks; 48 / 64 = 0.75.
    occ = occupancy(cat.arch("sm_70"), 128, 37)
    assert (occ.active_blocks_per_sm, occ.active_warps_per_sm, occ.occupancy) == (12, 48, 0.75)
    assert occ.limiter is Limiter.registers


def test_best_practices_guide_example_320_threads(cat):
    # Same guide: 320-thread blocks with the same 37 registers fit only four blocks per SM (the guide
    # rounds the resulting occupancy to 63 %). 48 warps // 10 warps per block = 4 -> 40 / 64 = 0.625.
    occ = occupancy(cat.arch("sm_70"), 320, 37)
    assert occ.active_blocks_per_sm == 4
    assert occ.occupancy == pytest.approx(0.625)
    assert occ.limiter is Limiter.registers


def test_register_rounding_to_allocation_unit(cat):
    # 33 regs: 33 × 32 = 1056 -> 1280 (unit 256), not 1056; 16384 // 1280 = 12 -> 48 warps -> 12 blocks of 4 warps.
    occ = occupancy(cat.arch("sm_80"), 128, 33)
    assert occ.block_limit_registers == 12
    assert occ.registers_per_block == 1280 * 4


def test_registers_limiter(cat):
    # sm_80, 256 threads × 64 regs: 2048 regs/warp; 16384 // 2048 = 8 warps per sub-partition -> 32 warps;
    # 32 // 8 warps per block = 4 blocks -> 32 / 64 = 0.5.
    occ = occupancy(cat.arch("sm_80"), 256, 64)
    assert occ.active_blocks_per_sm == 4
    assert occ.occupancy == 0.5
    assert occ.limiter is Limiter.registers


def test_register_per_block_hardware_check(cat):
    # cuda_occupancy.h's hardware check: 72 regs -> 2304 regs/warp; × 32 warps = 73728 > 65536 regs per block.
    occ = occupancy(cat.arch("sm_80"), 1024, 72)
    assert occ.active_blocks_per_sm == 0
    assert occ.limiter is Limiter.registers


def test_warps_limiter(cat):
    # sm_86 has 48 warp slots (Programming Guide Table 30): a 1024-thread block uses 32 -> 1 block, 32/48.
    occ = occupancy(cat.arch("sm_86"), 1024, 16)
    assert occ.active_blocks_per_sm == 1
    assert occ.occupancy == pytest.approx(32 / 48)
    assert occ.limiter is Limiter.warps


def test_blocks_limiter(cat):
    # sm_80: 32-thread blocks with 16 regs; warp slots allow 64 blocks, registers 64, but at most 32
    # blocks are resident (Table 30) -> 32 warps, 0.5.
    occ = occupancy(cat.arch("sm_80"), 32, 16)
    assert occ.active_blocks_per_sm == 32
    assert occ.occupancy == 0.5
    assert occ.limiter is Limiter.blocks
    # sm_89 allows 24 resident blocks (Table 30).
    assert occupancy(cat.arch("sm_89"), 32, 16).active_blocks_per_sm == 24


def test_shared_memory_limiter_includes_sm80_reservation(cat):
    # sm_80: 164 KB per SM at the maximum carveout. 41 KB dynamic would fit 4 blocks, but each block
    # also holds the 1 KB the driver reserves (CC 8.0+): 42 KB -> 167936 // 43008 = 3 blocks.
    occ = occupancy(cat.arch("sm_80"), 128, 32, dynamic_smem_per_block=41 * 1024)
    assert occ.shared_memory_per_block == 42 * 1024
    assert occ.active_blocks_per_sm == 3
    assert occ.limiter is Limiter.shared_memory


def test_no_reservation_before_sm80(cat):
    # sm_70 reserves nothing and allocates in 256-byte units: 24 KB -> 98304 // 24576 = 4 blocks.
    occ = occupancy(cat.arch("sm_70"), 128, 32, dynamic_smem_per_block=24 * 1024)
    assert occ.shared_memory_per_block == 24 * 1024
    assert occ.block_limit_shared_memory == 4


def test_shared_memory_granularity(cat):
    # sm_80: 1 B static + 1024 reserved = 1025 -> 1152 (unit 128); 167936 // 1152 = 145.
    assert occupancy(cat.arch("sm_80"), 128, 32, static_smem_per_block=1).block_limit_shared_memory == 145
    # sm_70: 1 B -> 256 (unit 256); 98304 // 256 = 384.
    assert occupancy(cat.arch("sm_70"), 128, 32, static_smem_per_block=1).block_limit_shared_memory == 384


def test_static_and_dynamic_add_up(cat):
    # sm_90: 100 KB static + 100 KB dynamic + 1 KB reserved = 201 KB; 228 KB // 201 KB = 1 block.
    occ = occupancy(cat.arch("sm_90"), 128, 32, 100 * 1024, 100 * 1024)
    assert occ.shared_memory_per_block == 201 * 1024
    assert occ.active_blocks_per_sm == 1


def test_max_opt_in_block_fits_exactly_and_one_byte_more_does_not(cat):
    # sm_80: 163 KB per block (opt-in) + 1 KB reserved = the whole 164 KB SM.
    assert occupancy(cat.arch("sm_80"), 128, 32, 163 * 1024).active_blocks_per_sm == 1
    over = occupancy(cat.arch("sm_80"), 128, 32, 163 * 1024 + 1)
    assert over.active_blocks_per_sm == 0
    assert over.limiter is Limiter.shared_memory


def test_full_occupancy_on_turing(cat):
    # sm_75: 1024 threads × 64 regs = 65536 exactly; 32 warp slots -> 1 block, occupancy 1.0.
    occ = occupancy(cat.arch("sm_75"), 1024, 64)
    assert (occ.active_blocks_per_sm, occ.occupancy) == (1, 1.0)
    assert set(occ.limiters) == {Limiter.warps, Limiter.registers}
    assert occ.limiter is Limiter.warps


@pytest.mark.parametrize("block_size, regs", [(1025, 32), (128, 256)])
def test_invalid_configuration(cat, block_size, regs):
    # More than 1024 threads per block, or more than 255 registers per thread (Table 31): nothing runs.
    occ = occupancy(cat.arch("sm_90"), block_size, regs)
    assert occ.active_blocks_per_sm == 0
    assert occ.occupancy == 0
    assert occ.limiter is Limiter.block_size_invalid


def test_partial_warp_counts_as_whole_warp(cat):
    # 33 threads occupy 2 warp slots: 64 // 2 = 32 blocks by warps on sm_90.
    assert occupancy(cat.arch("sm_90"), 33, 16).block_limit_warps == 32


def test_zero_registers_and_smem_do_not_limit(cat):
    occ = occupancy(cat.arch("sm_70"), 64, 0)
    assert occ.block_limit_registers > 1000 and occ.block_limit_shared_memory > 1000
    # 32 blocks × 2 warps = 64 warps: the warp and block caps tie; warps is reported first.
    assert occ.limiters == (Limiter.warps, Limiter.blocks)


def test_rejects_nonsense_input(cat):
    with pytest.raises(ValueError):
        occupancy(cat.arch("sm_80"), 0, 32)


def test_result_is_immutable(cat):
    occ = occupancy(cat.arch("sm_80"), 128, 32)
    with pytest.raises(Exception):
        occ.active_blocks_per_sm = 99  # type: ignore[misc]
