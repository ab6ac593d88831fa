"""Theoretical occupancy, computed by the rules of CUDA's occupancy calculator.

The rules are those of `cuda_occupancy.h` (`cudaOccMaxActiveBlocksPerMultiprocessor`), which
`cudaOccupancyMaxActiveBlocksPerMultiprocessor` and the Nsight Compute occupancy section follow:
the active blocks per SM are the minimum of four independent limits (warps, registers, shared
memory, blocks). Assumptions, stated once here:
  * the shared-memory carveout is the maximum (`cudaSharedmemCarveoutMaxShared`), so the SM's
    whole `shared_memory_per_sm` is available;
  * a kernel that needs more than 48 KB of shared memory per block has opted in
    (`cudaFuncAttributeMaxDynamicSharedMemorySize`), so the per-block limit is the opt-in limit;
  * partitioned global caching is off and no block barriers beyond the default are used
    (the header's barrier limit never binds then).
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict

from .arch import ArchSpec

UNLIMITED = 2**31 - 1  # cuda_occupancy.h uses INT_MAX for "this resource does not limit"


class Limiter(str, Enum):
    warps = "warps"
    blocks = "blocks"
    registers = "registers"
    shared_memory = "shared_memory"
    block_size_invalid = "block_size_invalid"


class Occupancy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    arch: str
    block_size: int
    registers_per_thread: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float  # active warps / max warps per SM
    limiter: Limiter
    limiters: tuple[Limiter, ...]  # every limit equal to the minimum
    block_limit_warps: int
    block_limit_registers: int
    block_limit_shared_memory: int
    block_limit_blocks: int
    registers_per_block: int  # allocated, after rounding each warp to the allocation unit
    shared_memory_per_block: int  # allocated: static + dynamic + reserved, rounded to the unit


def occupancy(
    arch: ArchSpec,
    block_size: int,
    registers_per_thread: int,
    dynamic_smem_per_block: int = 0,
    static_smem_per_block: int = 0,
) -> Occupancy:
    if block_size <= 0 or registers_per_thread < 0 or dynamic_smem_per_block < 0 or static_smem_per_block < 0:
        raise ValueError("block size must be positive and resource sizes non-negative")

    warps_per_block = _ceil_div(block_size, arch.warp_size)
    regs_per_warp = _round_up(registers_per_thread * arch.warp_size, arch.register_allocation_unit)
    smem_per_block = _round_up(
        static_smem_per_block + dynamic_smem_per_block + arch.reserved_shared_memory_per_block,
        arch.shared_memory_allocation_unit,
    )
    limits = {
        Limiter.warps: _warp_limit(arch, block_size, warps_per_block),
        Limiter.blocks: arch.max_blocks_per_sm,
        Limiter.registers: _register_limit(arch, registers_per_thread, regs_per_warp, warps_per_block),
        Limiter.shared_memory: _shared_memory_limit(arch, smem_per_block),
    }
    invalid = block_size > arch.max_threads_per_block or registers_per_thread > arch.max_registers_per_thread
    blocks = 0 if invalid else min(limits.values())
    # Order of preference when limits tie: the hardware caps (warps, blocks) first, because when
    # one of them binds, using fewer registers or less shared memory would not add a block.
    tied = (Limiter.block_size_invalid,) if invalid else tuple(k for k, v in limits.items() if v == blocks)
    return Occupancy(
        arch=arch.name,
        block_size=block_size,
        registers_per_thread=registers_per_thread,
        active_blocks_per_sm=blocks,
        active_warps_per_sm=blocks * warps_per_block,
        max_warps_per_sm=arch.max_warps_per_sm,
        occupancy=blocks * warps_per_block / arch.max_warps_per_sm,
        limiter=tied[0],
        limiters=tied,
        block_limit_warps=limits[Limiter.warps],
        block_limit_registers=limits[Limiter.registers],
        block_limit_shared_memory=limits[Limiter.shared_memory],
        block_limit_blocks=limits[Limiter.blocks],
        registers_per_block=regs_per_warp * warps_per_block,
        shared_memory_per_block=smem_per_block,
    )


def _warp_limit(arch: ArchSpec, block_size: int, warps_per_block: int) -> int:
    # cudaOccMaxBlocksPerSMWarpsLimit: warp slots are allocated per whole warp.
    if block_size > arch.max_threads_per_block:
        return 0
    return arch.max_warps_per_sm // warps_per_block


def _register_limit(arch: ArchSpec, regs: int, regs_per_warp: int, warps_per_block: int) -> int:
    # cudaOccMaxBlocksPerSMRegsLimit: registers are allocated per warp, rounded up to the unit (256),
    # and each SM sub-partition owns 1/schedulers of the file, so the warps that fit are a multiple
    # of the sub-partition count (the "warp allocation granularity" of the old spreadsheet).
    if regs > arch.max_registers_per_thread:
        return 0
    if regs_per_warp == 0:
        return UNLIMITED
    # The hardware's per-block check assumes the block's warps are spread over all sub-partitions.
    assumed_per_block = regs_per_warp * _round_up(warps_per_block, arch.schedulers_per_sm)
    if assumed_per_block > arch.max_registers_per_block or regs_per_warp * warps_per_block > arch.max_registers_per_block:
        return 0
    warps_per_partition = (arch.registers_per_sm // arch.schedulers_per_sm) // regs_per_warp
    return warps_per_partition * arch.schedulers_per_sm // warps_per_block


def _shared_memory_limit(arch: ArchSpec, smem_per_block: int) -> int:
    # cudaOccMaxBlocksPerSMSmemLimit: the allocation includes the driver's per-block reservation
    # (1 KB on CC 8.0+), and so does the per-block limit it is checked against.
    if smem_per_block > arch.max_shared_memory_per_block_optin + arch.reserved_shared_memory_per_block:
        return 0
    if smem_per_block == 0:
        return UNLIMITED
    return arch.shared_memory_per_sm // smem_per_block


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, unit: int) -> int:
    return _ceil_div(a, unit) * unit
