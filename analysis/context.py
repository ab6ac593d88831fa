"""The context of one analysis, resolved once and handed to every stage (llvm-mca's `Context`).

What an analysis is about does not change while it runs: the toolchain, the architecture and the
device (from the arch catalog, loaded once), the options, the file's text (read once), what the
compile gave the later stages (`ProgramInputs`), and, once the program is built, what each kernel
is run with: its launch and argument values, each with where it came from (`emulator/launch.py`:
capture, launch site, annotation, settings or a default), and the occupancy that launch gives.
`AnalysisContext` holds all of it, frozen. A stage reads it and never resolves any of it again,
and takes the context instead of a dozen loose arguments.

It grows in steps, each a new context, because each step needs the one before: `resolve` before
nvcc runs (options, catalog, device, text), `replace(ctx, unit=..., inputs=...)` once the file
compiled, `with_program` once the program is built (launches, occupancy). A study of another
launch (what-if, a measured launch) is a launch of its own, not a change of the context.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .frontend.resources import KernelResources, Resources, by_function
from .frontend.toolchain import Toolchain
from .machine.arch import ArchCatalog, ArchSpec, DeviceSpec, load_arch_specs
from .machine.occupancy import Occupancy, occupancy
from .options import AnalysisOptions

if TYPE_CHECKING:  # the later stages load on a thread while nvcc compiles (pipeline.py), not with this
    from .emulator.launch import ResolvedLaunch
    from .frontend.conditional import Passes
    from .frontend.instructions import SassModule
    from .frontend.program import FunctionProgram, Program
    from .frontend.source import SourceModel


@dataclass(frozen=True)
class ProgramInputs:
    """What the program is built from, as the compile gave it: the same inputs give the same
    program, and the same quick stage (what `speculation.py` checks before it takes a run made
    ahead)."""

    module: SassModule
    resources: dict[str, Resources]
    passes: Passes

    @classmethod
    def of(cls, module: SassModule, reports: Iterable[KernelResources], argv, arch: str,
           toolchain: Toolchain) -> ProgramInputs:
        """From a compile (nvcc's or NVRTC's): its SASS, ptxas's reports and its command line."""
        from .frontend.conditional import compile_passes

        return cls(module=module, resources=by_function(reports),
                   passes=compile_passes(argv, arch, toolchain.version))


@dataclass(frozen=True)
class AnalysisContext:
    """Everything one analysis resolves once (see the module's docstring)."""

    options: AnalysisOptions
    arch: ArchSpec
    device: DeviceSpec
    catalog: ArchCatalog | None = None  # None: a context made of one arch and device (`of`)
    toolchain: Toolchain | None = None
    path: Path | None = None  # the file analysed
    unit: Path | None = None  # the translation unit it is compiled in: itself, or a file that includes it
    data: bytes = b""  # the file's bytes, read once
    text: str = ""  # the same, decoded
    measured_report: Path | None = None  # an Nsight Compute report to read instead of modeling
    inputs: ProgramInputs | None = None
    program: Program | None = None
    #: the kernels' source: the program's, or given alone (a kernel emulated without its program)
    source: SourceModel | None = None
    #: per kernel (mangled name): the launch it runs with, its argument values and their sources
    launches: Mapping[str, ResolvedLaunch] = field(default_factory=dict)
    #: per kernel: the occupancy of that launch
    occupancy: Mapping[str, Occupancy] = field(default_factory=dict)

    @classmethod
    def resolve(cls, options: AnalysisOptions, *, catalog: ArchCatalog | None = None, path: Path | None = None,
                data: bytes = b"", measured_report: Path | None = None) -> AnalysisContext:
        """The context before the compile: the catalog, the arch and the device. `catalog`: the one
        the caller loaded for the whole flow (`application.arch_catalog`: capture, this analysis, its
        chart); without it, loaded here."""
        catalog = catalog if catalog is not None else load_arch_specs(options.arch_file)
        arch = catalog.arch(options.arch)
        device = catalog.device(options.device) if options.device else catalog.default_device(arch)
        return cls(options=options, arch=arch, device=device, catalog=catalog, path=path, unit=path, data=data,
                   text=data.decode("utf-8", errors="replace"), measured_report=measured_report)

    @classmethod
    def of(cls, arch: ArchSpec, device: DeviceSpec, options: AnalysisOptions, source: SourceModel | None = None,
           program: Program | None = None) -> AnalysisContext:
        """A context for modeling `program`'s kernels (or kernels of `source` alone) on `arch` and
        `device`: what a study of one kernel needs, without a file or a compile."""
        return cls(options=options, arch=arch, device=device).with_program(program, source)

    def with_program(self, program: Program | None, source: SourceModel | None = None) -> AnalysisContext:
        """This context once the program is built: each kernel's launch and occupancy resolved."""
        from .emulator.launch import resolve_launch

        src = source if source is not None else (program.source if program is not None else None)
        kernels = program.kernels if program is not None else ()
        launches = {fn.mangled: resolve_launch(fn.name, src, self.options, self.device.sm_count) for fn in kernels}
        occ = {fn.mangled: _occupancy(self.arch, fn, launches[fn.mangled]) for fn in kernels}
        return replace(self, program=program, source=src, launches=launches, occupancy=occ)

    def launch(self, kernel: FunctionProgram) -> ResolvedLaunch:
        """`kernel`'s launch: resolved with the program, or now for a kernel the program does not hold."""
        from .emulator.launch import resolve_launch

        found = self.launches.get(kernel.mangled)
        return found if found is not None else resolve_launch(kernel.name, self.source, self.options,
                                                              self.device.sm_count)


def _occupancy(arch: ArchSpec, fn: FunctionProgram, resolved: ResolvedLaunch) -> Occupancy:
    launch = resolved.launch
    regs = fn.resources.registers if fn.resources else 32  # the emulator's default, an assumption it names
    smem = fn.resources.static_smem if fn.resources else 0
    return occupancy(arch, launch.threads_per_block, regs, launch.dynamic_smem, smem)
