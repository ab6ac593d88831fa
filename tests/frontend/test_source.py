"""The source model over the example programs and small snippets.

Expected lines are found by searching the file's text, so editing an example does not
silently shift what a test checks.
"""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelscope.analysis.frontend.source import SourceModel, parse_source

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def _no_swallowed_errors(caplog: pytest.LogCaptureFixture):
    """parse_source hides internal errors from the editor; tests must still see them."""
    with caplog.at_level(logging.ERROR, logger="kernelscope.analysis.frontend.source"):
        yield
    assert not caplog.records, caplog.text


def example(name: str) -> tuple[str, SourceModel]:
    text = (EXAMPLES / name).read_text()
    return text, parse_source(text)


def line_of(text: str, needle: str, nth: int = 0) -> int:
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return hits[nth]


# ---------------------------------------------------------------------------- examples


def test_every_example_has_a_kernel_and_a_host_main():
    names = sorted(p.name for p in EXAMPLES.glob("*.cu"))
    assert names == sorted([
        "sgemm_naive.cu", "sgemm_tiled.cu", "stencil_double_const.cu", "reduction_divergent.cu",
        "local_array.cu", "noinline_call.cu", "strided_access.cu", "small_grid.cu",
    ])
    for name in names:
        _, model = example(name)
        assert model.kernels, name
        assert model.function("main").kind == "host"
        assert len(model.launch_sites) == 1, name
        assert model.launch_sites[0].kernel in {k.name for k in model.kernels}


def test_sgemm_tiled_kernel_signature_and_launch_bounds():
    text, model = example("sgemm_tiled.cu")
    kernel = model.kernel("sgemm_tiled")
    assert kernel is not None and kernel.is_kernel
    assert kernel.qualifiers == ("__global__",)
    assert kernel.span.first_line == line_of(text, "__global__ void __launch_bounds__")
    assert kernel.span.last_line == line_of(text, "C[row * n + col] = acc;") + 1
    assert kernel.name_span.start.line == line_of(text, "sgemm_tiled(const float*")
    assert kernel.launch_bounds is not None
    assert kernel.launch_bounds.args == ("TILE * TILE",)
    assert kernel.launch_bounds.max_threads == 1024
    assert [p.name for p in kernel.params] == ["A", "B", "C", "n"]
    a, _, c, n = kernel.params
    assert a.type_text == "const float* __restrict__"
    assert a.is_pointer and a.is_restrict and a.is_const_pointee
    assert c.is_restrict and not c.is_const_pointee
    assert not n.is_pointer and n.restrict_insert is None
    assert kernel.body is not None and kernel.body.first_line == kernel.name_span.start.line + 1


def test_sgemm_tiled_loops_nest_and_carry_the_unroll_pragma():
    text, model = example("sgemm_tiled.cu")
    outer, inner = model.loops_in("sgemm_tiled")
    assert outer.header_line == line_of(text, "for (int t = 0")
    assert (outer.depth, outer.parent, outer.unroll) == (1, None, None)
    assert outer.bound_text == "n / TILE" and outer.trip_count is None  # n is a parameter
    assert inner.header_line == line_of(text, "for (int k = 0")
    assert (inner.depth, inner.parent) == (2, outer.index)
    assert inner.unroll is not None and inner.unroll.is_bare and inner.unroll.factor is None
    assert inner.unroll.line == line_of(text, "#pragma unroll")
    assert inner.trip_count == 32 and inner.induction_var == "k"
    assert model.loop_at(inner.header_line + 1) == inner
    assert model.loop_at(outer.header_line + 1) == outer
    assert [p.text for p in model.pragmas] == ["unroll"]


def test_sgemm_tiled_shared_tiles():
    _, model = example("sgemm_tiled.cu")
    assert [(s.name, s.type_text, s.dims, s.dim_values, s.bytes, s.is_extern) for s in model.shared_decls] == [
        ("As", "float", ("TILE", "TILE"), (32, 32), 4096, False),
        ("Bs", "float", ("TILE", "TILE"), (32, 32), 4096, False),
    ]
    assert model.shared_decls[0].dims_text == "[TILE][TILE]"


def test_sgemm_naive_dim3_launch_folds_through_defines():
    text, model = example("sgemm_naive.cu")
    (site,) = model.launch_sites
    assert site.kernel == "sgemm_naive" and site.function == "main"
    assert site.line == line_of(text, "sgemm_naive<<<")
    assert site.grid.text == "grid" and site.grid.dims == (64, 64, 1) and site.grid.value == 4096
    # `dim3 block(BLOCK, BLOCK);` is a "most vexing parse" in the syntax tree; it still folds.
    assert site.block.dims == (16, 16, 1) and site.block.value == 256
    assert site.args == ("dA", "dB", "dC", "N")
    config = site.launch_config()
    assert config is not None and config.blocks == 4096 and config.threads_per_block == 256
    (loop,) = model.loops_in("sgemm_naive")
    assert loop.bound_text == "n" and loop.trip_count is None


def test_sgemm_naive_annotation_attaches_to_the_following_kernel():
    text, model = example("sgemm_naive.cu")
    (note,) = model.annotations
    assert note.line == line_of(text, "// kernelscope:")
    assert note.function == "sgemm_naive"
    assert note.value("n") == 1024 and note.get("block").text == "BLOCK*BLOCK" and note.value("block") == 256


def test_stencil_double_literals_and_math_calls():
    text, model = example("stencil_double_const.cu")
    doubles = [lit for lit in model.literals if lit.function == "jacobi_step" and lit.is_double]
    assert [lit.text for lit in doubles] == ["0.25", "0.5", "0.5", "2.0", "2.0"]
    quarter = doubles[0]
    line = line_of(text, "out[i] = 0.25 * sum;")
    col = text.splitlines()[line - 1].index("0.25")
    assert (quarter.line, quarter.col_start, quarter.col_end) == (line, col, col + 4)
    assert quarter.value == 0.25 and not quarter.has_f_suffix
    calls = [(c.callee, c.arg_count) for c in model.calls if c.function == "jacobi_step"]
    assert calls == [("sqrt", 1), ("pow", 2), ("pow", 2)]
    assert all(c.span.start.line == line_of(text, "grad[i] = sqrt(") for c in model.calls)
    # block.x / block.y of a folded dim3
    (site,) = model.launch_sites
    assert site.grid.dims == (64, 256, 1) and site.block.dims == (32, 8, 1)


def test_reduction_loop_and_shared_buffer():
    text, model = example("reduction_divergent.cu")
    (loop,) = model.loops_in("reduce_interleaved")
    assert loop.header_line == line_of(text, "for (unsigned int s = 1")
    assert loop.induction_var == "s" and loop.bound_text == "blockDim.x" and loop.trip_count is None
    syncs = [c for c in model.calls if c.callee == "__syncthreads"]
    assert any(loop.span.contains_line(c.span.start.line) for c in syncs)
    (buffer,) = model.shared_decls
    assert (buffer.name, buffer.dim_values, buffer.bytes) == ("sdata", (256,), 1024)
    (site,) = model.launch_sites
    assert site.grid.value == (1 << 24) // 256 and site.block.value == 256


def test_local_array_loops():
    _, model = example("local_array.cu")
    loops = model.loops_in("histogram_private")
    assert [(lp.bound_text, lp.trip_count) for lp in loops] == [("BINS", 32), ("n", None), ("BINS", 32)]
    assert model.launch_sites[0].launch_config().blocks == 256


def test_noinline_callee_and_its_call_in_a_loop():
    text, model = example("noinline_call.cu")
    callee = model.function("smooth_step")
    assert callee.kind == "device" and callee.inlining == "noinline"
    assert callee.qualifiers == ("__device__", "__noinline__")
    (call,) = [c for c in model.calls if c.callee == "smooth_step"]
    assert call.function == "apply_smooth_step" and call.arg_count == 3
    loop = model.loop_at(call.span.start.line)
    assert loop is not None and loop.trip_count == 64 and loop.function == "apply_smooth_step"
    assert model.function_at(line_of(text, "return t * t")) == callee


def test_strided_launch_folds_local_constants():
    _, model = example("strided_access.cu")
    (site,) = model.launch_sites
    assert site.grid.text == "(n + threads - 1) / threads"
    assert site.grid.value == 4096 and site.block.value == 256
    assert site.args[-1] == "stride"
    assert site.arg_values == (None, None, 1 << 20, 32)  # dIn, dOut, n, stride: locals of main


def test_small_grid_launch_and_annotation():
    text, model = example("small_grid.cu")
    (site,) = model.launch_sites
    assert (site.grid.value, site.block.value) == (4, 128)
    assert site.shared_mem is None and site.stream is None
    assert site.arg_values == (1 << 24, None, None, None)  # n, 2.0f, dX, dY
    assert site.col == text.splitlines()[site.line - 1].index("saxpy_grid_stride<<<")
    (note,) = model.annotations
    assert note.function == "saxpy_grid_stride"
    assert [(e.key, e.text, e.value) for e in note.entries] == [
        ("grid", "4", 4), ("block", "128", 128), ("n", "1<<24", 1 << 24),
    ]
    x = model.kernel("saxpy_grid_stride").param("x")
    assert x.is_restrict and x.is_const_pointee


def test_includes_of_every_example():
    _, model = example("stencil_double_const.cu")
    assert [(i.path, i.is_system) for i in model.includes] == [
        ("cmath", True), ("cstdio", True), ("cstdlib", True), ("cuda_runtime.h", True),
    ]
    assert model.includes[0].line == 3


# ---------------------------------------------------------------------------- snippets


def loops_of(body: str, prelude: str = "") -> tuple:
    model = parse_source(f"{prelude}\n__global__ void k(float* a, int n) {{\n{body}\n}}\n")
    return model.loops


@pytest.mark.parametrize(
    ("header", "trip"),
    [
        ("for (int i = 0; i < 10; ++i)", 10),
        ("for (int i = 0; i <= 10; i++)", 11),
        ("for (int i = 10; i > 0; --i)", 10),
        ("for (int i = 10; i >= 0; i -= 3)", 4),
        ("for (int i = 0; i < 10; i += 4)", 3),
        ("for (int i = 0; 10 > i; i = i + 2)", 5),
        ("for (int i = 0; i != 8; i += 2)", 4),
        ("for (int i = 1; i < 1024; i *= 2)", 10),
        ("for (int i = 1; i < 1024; i <<= 1)", 10),
        ("for (int i = 512; i > 0; i >>= 1)", 10),
        ("for (int i = 5; i < 5; ++i)", 0),
        ("for (int i = 0; i < N; ++i)", 1024),
        ("for (int i = 0; i < TWICE; ++i)", 2048),
        ("for (int i = 0; i < K; ++i)", 8),
        ("for (int i = 0; i < E1; ++i)", 5),
        ("for (int i = 0; i < (1 << 4) / 2; ++i)", 8),
        ("for (int i = 0; i < n; ++i)", None),
        ("for (int i = 0; i < 10; i--)", None),
        ("for (int i = 0; i < 10; ++i) { i += 2; }", None),
        ("for (float x = 0; x < 1.5; x += 0.5)", None),
        ("for (;;)", None),
        ("for (int i = 0; i < 1 << 100000; i <<= 100000)", None),
        ("for (int i = 0; i < 1 << 62; i *= 1)", None),
    ],
)
def test_trip_counts(header: str, trip: int | None):
    prelude = "#define N (1 << 10)\nconstexpr int TWICE = N * 2;\nenum { E0 = 4, E1 };"
    body = "const int K = 8;\n" + header + (" {}" if not header.endswith("}") else "")
    (loop,) = loops_of(body, prelude)
    assert loop.kind == "for"
    assert loop.trip_count == trip


def test_loop_kinds_depth_and_parents():
    loops = loops_of(
        "while (n > 0) {\n  do { n--; } while (n % 2);\n  for (int j = 0; j < 4; ++j)\n    for (auto v : {1, 2}) {}\n}"
    )
    assert [(lp.kind, lp.depth, lp.parent, lp.header_line) for lp in loops] == [
        ("while", 1, None, 3), ("do", 2, 0, 4), ("for", 2, 0, 5), ("range_for", 3, 2, 6),
    ]
    assert loops[1].condition_line == 4 and loops[1].body.first_line == 4
    assert all(lp.function == "k" for lp in loops)


@pytest.mark.parametrize(
    ("pragma", "factor", "bare", "rolled"),
    [
        ("#pragma unroll", None, True, False),
        ("#pragma unroll 4", 4, False, False),
        ("#pragma unroll 1 // keep it rolled", 1, False, True),
        ("#pragma unroll (U * 2)", 8, False, False),
        ("#pragma unroll UNKNOWN", None, False, False),
    ],
)
def test_unroll_pragma(pragma: str, factor: int | None, bare: bool, rolled: bool):
    (loop,) = loops_of(f"{pragma}\n// a comment between\nfor (int i = 0; i < 16; ++i) a[i] = 0;", "#define U 4")
    assert loop.unroll is not None
    assert (loop.unroll.factor, loop.unroll.is_bare, loop.unroll.is_rolled) == (factor, bare, rolled)
    assert loop.unroll.line == 3


def test_unroll_pragma_only_attaches_to_the_next_statement():
    loops = loops_of("#pragma unroll\nint x = 0;\nfor (int i = 0; i < 4; ++i) x++;")
    assert loops[0].unroll is None


def test_function_qualifiers_templates_and_insert_positions():
    src = (
        "template <int BS>\n"
        "__global__ void tk(float *out, const float *in) {}\n"
        "static __device__ __forceinline__ float sq(float x) { return x * x; }\n"
        "__host__ __device__ int both(int a) { return a; }\n"
        'extern "C" __global__ void __launch_bounds__(256, 2) ek(float* __restrict__ p) {}\n'
        "namespace ns { __device__ int g(float const* q) { return 0; } }\n"
        "__global__ void declared_only(int);\n"
    )
    model = parse_source(src)
    assert [(f.name, f.kind) for f in model.functions] == [
        ("tk", "kernel"), ("sq", "device"), ("both", "device"), ("ek", "kernel"), ("g", "device"),
    ]
    tk = model.kernel("tk")
    assert tk.template_params == "<int BS>" and tk.launch_bounds is None
    assert tk.launch_bounds_insert.line == 2 and tk.launch_bounds_insert.col == src.splitlines()[1].index("tk(")
    out, inp = tk.params
    assert out.restrict_insert.col == src.splitlines()[1].index("*out") + 1
    assert inp.const_insert.col == src.splitlines()[1].index("const float")
    assert inp.is_const_pointee and not inp.is_restrict
    sq = model.function("sq")
    assert sq.qualifiers == ("static", "__device__", "__forceinline__") and sq.inlining == "forceinline"
    assert model.function("both").qualifiers == ("__host__", "__device__")
    ek = model.kernel("ek")
    assert ek.launch_bounds.values == (256, 2) and ek.launch_bounds.min_blocks == 2
    assert ek.params[0].is_restrict and not ek.params[0].is_const_pointee
    assert model.function("g").params[0].is_const_pointee  # east const
    assert model.kernel("declared_only") is None
    assert model.kernel("sq") is None
    assert model.function_at(3) == sq and model.function_at(7) is None


def test_const_pointer_is_not_a_const_pointee():
    (f,) = parse_source("__global__ void k(float* const p, float** q) {}").functions
    assert not f.params[0].is_const_pointee and f.params[0].is_pointer
    assert f.params[1].type_text == "float**" and f.params[1].is_pointer


def test_calls_only_in_device_code_and_launch_sites_apart():
    src = (
        "__device__ float helper(float x) { return expf(x); }\n"
        "__global__ void k(float* a) { a[0] = powf(helper(a[1]), 2.0f) + static_cast<float>(std::sqrt(a[2])); }\n"
        "int main() { float* p; cudaMalloc(&p, 4); k<<<1, 32>>>(p); cudaFree(p); }\n"
    )
    model = parse_source(src)
    assert [(c.callee, c.function) for c in model.calls] == [
        ("expf", "helper"), ("powf", "k"), ("helper", "k"), ("std::sqrt", "k"),
    ]
    (site,) = model.launch_sites
    assert site.kernel == "k" and site.function == "main" and site.block.value == 32


def test_launch_site_folding_rules():
    src = (
        "#define THREADS 128\n"
        "template <int B> __global__ void k(float* a) {}\n"
        "int main(int argc, char** argv) {\n"
        "  int n = 1 << 20;\n"
        "  int m = 1 << 20;\n"
        "  m += 1;\n"
        "  int q = argc;\n"
        "  dim3 blk = dim3(THREADS / 4, 4);\n"
        "  cudaStream_t s;\n"
        "  k<256><<<n / THREADS, blk, THREADS * sizeof(float), s>>>(0);\n"
        "  k<256><<<m / THREADS, dim3(8, 8, 2)>>>(0);\n"
        "  k<256><<<q, {64, 2}>>>(0);\n"
        "}\n"
    )
    first, second, third = parse_source(src).launch_sites
    assert first.kernel == "k" and first.kernel_text == "k<256>"
    assert [a.value for a in first.config] == [8192, 128, 512, None]
    assert first.block.dims == (32, 4, 1) and first.stream.text == "s"
    assert first.launch_config().dynamic_smem == 512
    assert second.grid.value is None  # m is written after its initialiser
    assert second.block.dims == (8, 8, 2)
    assert third.grid.value is None and third.block.dims == (64, 2, 1)
    assert third.launch_config() is None


def test_launch_argument_folding_rules():
    src = (
        "#define N (1 << 12)\n"
        "const int kStride = 4;\n"
        "enum { kPad = 3 };\n"
        "__global__ void k(float* a, int n, int s, int t, int u, int v, int w, long x, float f) {}\n"
        "void launch(int argc) {\n"
        "  float* p;\n"
        "  int once = N / kStride;\n"
        "  int twice = 8;\n"
        "  twice *= 2;\n"
        "  unsigned taken = 5;\n"
        "  scanf(\"%u\", &taken);\n"
        "  dim3 blk(32, 4);\n"
        "  k<<<1, blk>>>(p, N, kStride * 2 + kPad, once, twice, argc, taken, (long)sizeof(float) << 3, 1.5f);\n"
        "}\n"
    )
    (site,) = parse_source(src).launch_sites
    assert len(site.arg_values) == len(site.args) == 9
    assert site.arg_values == (None, 4096, 11, 1024, None, None, None, 32, None)
    # The block is folded by the same rules: the dim3 local is a config, never an argument value.
    assert site.block.dims == (32, 4, 1)


def test_launch_argument_values_follow_the_launching_function():
    src = (
        "__global__ void k(int n) {}\n"
        "void a() { const int n = 64; k<<<1, 32>>>(n); }\n"
        "void b(int n) { k<<<1, 32>>>(n); }\n"
        "void c() { int n = 7; { int n = 9; } k<<<1, 32>>>(n); }\n"
    )
    first, second, third = parse_source(src).launch_sites
    assert first.arg_values == (64,)
    assert second.arg_values == (None,)  # a parameter of the host function
    assert third.arg_values == (7,)  # the inner n's block ends before the launch: the outer n reaches it


def test_parameter_shadows_a_file_constant():
    model = parse_source("const int n = 4;\n__global__ void k(int n) { for (int i = 0; i < n; ++i) {} }")
    assert model.constant("n") == 4
    assert model.loops[0].trip_count is None


def test_shared_declarations():
    src = (
        "#define W 8\n"
        "__shared__ int file_scope[W];\n"
        "__global__ void k() {\n"
        "  extern __shared__ __align__(16) unsigned char smem[];\n"
        "  __shared__ float a[W][W + 1], b[4];\n"
        "  __shared__ float4 v[W];\n"
        "}\n"
    )
    decls = parse_source(src).shared_decls
    assert [(d.name, d.type_text, d.dims, d.dim_values, d.is_extern, d.bytes, d.function, d.line) for d in decls] == [
        ("file_scope", "int", ("W",), (8,), False, 32, None, 2),
        ("smem", "unsigned char", ("",), (None,), True, None, "k", 4),
        ("a", "float", ("W", "W + 1"), (8, 9), False, 288, "k", 5),
        ("b", "float", ("4",), (4,), False, 16, "k", 5),
        ("v", "float4", ("W",), (8,), False, 128, "k", 6),
    ]


def test_literal_classification():
    src = "__device__ float f() { return 1.0 + 2.f + 3e2 + 4.0L + 0x1p-2f + 0xFF + 5 + 1'000.5; }"
    lits = parse_source(src).literals
    assert [(lit.text, lit.suffix, lit.value) for lit in lits] == [
        ("1.0", "", 1.0), ("2.f", "f", 2.0), ("3e2", "", 300.0), ("4.0L", "l", 4.0),
        ("0x1p-2f", "f", 0.25), ("1'000.5", "", 1000.5),
    ]


def test_columns_count_characters_not_bytes():
    src = "// héllo wörld\n__global__ void k(float* a) { /* ü */ a[0] = 0.5; }\n"
    (lit,) = parse_source(src).literals
    line = src.splitlines()[1]
    assert (lit.line, lit.col_start, lit.col_end) == (2, line.index("0.5"), line.index("0.5") + 3)
    assert lit.span.start_byte == src.encode().index(b"0.5")


def test_annotation_inside_a_function_and_plain_comments():
    src = (
        "// kernelscope: block=THREADS\n"
        "#define THREADS 64\n"
        "// an ordinary comment = not an annotation\n"
        "__global__ void k() {\n"
        "  // kernelscope: n=1<<10 mode=fast\n"
        "}\n"
        "__global__ void j() {}\n"
    )
    first, second = parse_source(src).annotations
    assert first.function == "k" and first.value("block") == 64
    assert second.function == "k" and second.line == 5
    assert second.value("n") == 1024 and second.get("mode").text == "fast" and second.value("mode") is None
    assert second.get("missing") is None


def test_pragmas_includes_and_constants():
    src = '#pragma once\n#include "common.cuh"\n#include <cuda_fp16.h>\n'
    src += "#define A (B + 1)\n#define B 2\n#define F(x) x\n"
    model = parse_source(src)
    assert [(p.line, p.text, p.function) for p in model.pragmas] == [(1, "once", None)]
    assert [(i.line, i.path, i.is_system) for i in model.includes] == [
        (2, "common.cuh", False), (3, "cuda_fp16.h", True),
    ]
    assert model.constant("A") == 3 and model.constant("F") is None


def test_header_without_kernels():
    src = (
        "#pragma once\n#include <cuda_runtime.h>\n"
        "constexpr int WARP = 32;\n"
        "struct Params { int n; float alpha; };\n"
        "__host__ __device__ inline int div_up(int a, int b) { return (a + b - 1) / b; }\n"
    )
    model = parse_source(src)
    assert model.kernels == () and model.launch_sites == () and model.loops == ()
    assert [f.name for f in model.device_functions] == ["div_up"]
    assert model.constant("WARP") == 32


# ---------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "\x00\x01\x02\xff" * 100,
        "}}}}{{{{ <<<>>> #pragma unroll ((((",
        "(" * 20000,
        "int x = " + "-" * 20000 + "1;",
        "#define A B\n#define B A\nconst int C = A;",
        "\ud800\udfff __global__",
    ],
)
def test_garbage_gives_an_empty_model(text: str):
    model = parse_source(text)
    assert model.functions == () and model.loops == () and model.launch_sites == ()
    assert model.literals == () and model.calls == () and model.shared_decls == ()


def test_random_bytes_never_raise():
    rng = random.Random(7)
    for _ in range(20):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
        parse_source(data.decode("latin-1"))
    parse_source(os.urandom(4096).decode("utf-8", "surrogateescape"))


_CUDA_TOKENS = st.sampled_from([
    "__global__", "__device__", "__shared__", "__launch_bounds__(", "void", "k", "(", ")", "{", "}",
    "[", "]", "<<<", ">>>", ";", ",", "for", "while", "do", "int", "i", "=", "<", "++", "1.5",
    "0x1p3", "1 << 70", "#pragma unroll", "#define N", "\n", "// kernelscope: n=", "dim3", "'", '"',
])


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.lists(_CUDA_TOKENS, max_size=60).map(" ".join)))
def test_never_raises(text: str):
    model = parse_source(text)
    for loop in model.loops:
        assert loop.depth >= 1 and (loop.parent is None or model.loops[loop.parent].depth == loop.depth - 1)


def test_broken_code_keeps_what_parses():
    text, _ = example("sgemm_tiled.cu")
    broken = text.replace("int main()\n{", "int main()\n{ @@@ ] ;", 1)
    model = parse_source(broken)
    assert model.kernel("sgemm_tiled") is not None
    assert any(lp.trip_count == 32 for lp in model.loops)


def test_a_thousand_lines_parse():
    """How fast is measured by benchmarks/parse.py (no test asserts a time)."""
    text = "\n".join((EXAMPLES / name).read_text() for name in sorted(os.listdir(EXAMPLES)) if name.endswith(".cu"))
    while text.count("\n") < 1000:
        text += "\n" + text
    model = parse_source("\n".join(text.splitlines()[:1000]))
    assert model.kernel("sgemm_tiled") is not None


def test_models_are_immutable():
    _, model = example("small_grid.cu")
    with pytest.raises(Exception):
        model.functions = ()  # type: ignore[misc]
    with pytest.raises(Exception):
        model.launch_sites[0].kernel = "other"  # type: ignore[misc]


def test_function_like_macros_and_dim3_variables_fold_at_the_launch():
    # the shape of a tiled-GEMM driver: `dim3 gridDim(CEIL_DIV(M, 32), ...)` over `const int M`
    model = parse_source(
        "#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))\n"
        "#define SELF(A) SELF(A)\n"
        "// kernelscope: K=64\n"
        "template <int BS>\n"
        "__global__ void k(float *x, int n) { }\n"
        "int main() {\n"
        "  const int M = 4000;\n"
        "  dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(M, 16));\n"
        "  dim3 blockDim(32, 32);\n"
        "  k<32><<<gridDim, blockDim>>>(0, CEIL_DIV(M, 3));\n"
        "  k<32><<<CEIL_DIV(M, 256), 256>>>(0, SELF(3));\n"
        "}\n")
    first, second = model.launch_sites
    assert (first.launch_config().grid, first.launch_config().block) == ((125, 250, 1), (32, 32, 1))
    assert first.arg_values == (0, 1334)
    assert second.launch_config().grid == (16, 1, 1)
    assert second.arg_values == (0, None)  # a self-referencing macro folds to nothing, and ends
    # an annotation above the `template <...>` line belongs to the kernel below it
    assert [(a.function, a.entries[0].value) for a in model.annotations] == [("k", 64)]


# ---- what the optimizers read from the tree instead of the line text (issue #15)

_SYNTAX = """
__device__ float* pick(float* p, int i) { return p + i; }
__global__ void k(const float* a, float* b, float* c, float* d, int* hist, float* e, int n) {
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x +
          threadIdx.x;
  if ((tid % 2 == 0) &&
      i < n)
    b[i] = a[i] / n;
  if ((tid & 31) == 0) *(c + i) = a[i] % 16;
  atomicAdd(hist + (i & 7), 1);
  float* q = d;   // a pointer copy is not a store through d
  q = q + 1;
  e++;            // moving a pointer is not a store through it
  const float* r = a;
  pick(d, i)[0] += r[i] / 8;
}
"""


def test_stores_are_the_pointers_written_through():
    (k,) = [f for f in parse_source(_SYNTAX).functions if f.name == "k"]
    # a store through what a call returns (`pick(d, i)[0]`) names no parameter
    assert set(k.stores) == {"b", "c", "hist"}


def test_branch_conditions_span_lines_and_name_their_masks():
    first, second = parse_source(_SYNTAX).branches
    assert first.line == 7 and first.condition.end.line == 8 and first.body_lines == (9, 9)
    assert first.condition_text == "(tid % 2 == 0) && i < n"
    assert {"tid", "i", "n"} <= set(first.names) and first.masks == (("%", "2"),)
    assert second.masks == (("&", "31"),) and "tid" in second.names and second.function == "k"


def test_divisions_know_a_power_of_two_divisor_and_index_lines_are_found():
    m = parse_source(_SYNTAX)
    assert {(d.line, d.operator, d.divisor, d.power_of_two) for d in m.divisions} == {
        (7, "%", "2", True), (9, "/", "n", False), (10, "%", "16", True), (16, "/", "8", True)}
    # one-line statements reading only the built-ins; the two-line index is not one line
    assert 4 in m.index_lines and 5 not in m.index_lines and 9 not in m.index_lines


def test_a_parameter_folds_when_every_call_passes_the_same_constant():
    """cuda-samples' matrixMul sizes its block in a helper from a parameter that main() passes as
    a local constant: the launch folds through the call (one level per call, any depth)."""
    src = (
        "template <int B> __global__ void k(float* a) {}\n"
        "void run(int block_size, const dim3& dims) {\n"
        "  dim3 threads(block_size, block_size);\n"
        "  dim3 grid(dims.x / threads.x, dims.y / threads.y);\n"
        "  k<32><<<grid, threads>>>(0);\n"
        "}\n"
        "void twice(int b) { k<32><<<1, b>>>(0); }\n"
        "void written(int b) { b *= 2; k<32><<<1, b>>>(0); }\n"
        "void outer(int b) { run(b, dim3(64, 64)); }\n"
        "int main() {\n"
        "  int block_size = 32;\n"
        "  outer(block_size);\n"
        "  twice(16); twice(32);\n"
        "  written(8);\n"
        "}\n"
    )
    first, second, third = parse_source(src).launch_sites
    assert first.block.dims == (32, 32, 1) and first.grid.dims == (2, 2, 1)
    assert second.block.dims is None  # two calls, two values
    assert third.block.dims is None  # the function writes its parameter


def test_a_launch_in_a_branch_the_constants_rule_out_is_not_live():
    src = (
        "template <int B> __global__ void k(float* a) {}\n"
        "void run(int block_size) {\n"
        "  if (block_size == 16) { k<16><<<1, block_size>>>(0); }\n"
        "  else { k<32><<<1, block_size>>>(0); }\n"
        "  if (block_size > 0) k<32><<<2, 64>>>(0);\n"
        "}\n"
        "void unknown(int n) { if (n == 16) k<16><<<1, 16>>>(0); }\n"
        "int main(int argc, char** argv) { run(32); unknown(argc); }\n"
    )
    sites = parse_source(src).launch_sites
    assert [(s.kernel_text, s.live) for s in sites] == [("k<16>", False), ("k<32>", True), ("k<32>", True),
                                                        ("k<16>", True)]


def test_a_loop_over_a_range_of_locals_has_the_range_as_its_extent():
    """cuda-samples' matrixMul: two induction variables, a comma update and an inclusive bound
    written as a local of the start; the block-dependent start cancels out of the distance."""
    src = (
        "template <int B> __global__ void mm(float* C, int wA, int wB) {\n"
        "  int aBegin = wA * B * blockIdx.y;\n"
        "  int aEnd = aBegin + wA - 1;\n"
        "  int aStep = B;\n"
        "  for (int a = aBegin, b = B * blockIdx.x; a <= aEnd; a += aStep, b += B * wB) {}\n"
        "  int lo = threadIdx.x * 4;\n"
        "  for (int i = lo; i < lo + 3 * wB; i += 2) {}\n"
        "  int start = blockIdx.x;\n"
        "  for (int j = start; j < wA; ++j) {}\n"
        "}\n"
    )
    tile, span, plain = parse_source(src).loops
    assert (tile.induction_var, tile.bound_text, tile.extent_text, tile.step_text) == ("a", "aEnd", "wA", "aStep")
    assert span.extent_text == "3 * wB"  # the thread's own start cancels too (it was "(lo + 3 * wB) - (lo)")
    # nothing cancels, but the local holds the block index: an offset into the range, as a start
    # written `blockIdx.x` is (before, "(wA) - (start)", which folds to nothing: the default 64 trips)
    assert plain.extent_text == "wA"


def test_locals_written_once_read_as_their_initialisers_in_an_extent():
    """code-samples' haxpy: the start is a local holding the thread's global index and the bound a
    local of a division (which no polynomial expands): the extent is the bound's initialiser, so
    the launch's n folds it."""
    src = (
        "__global__ void haxpy(int n, float a, const float* x, float* y) {\n"
        "  int start = threadIdx.x + blockDim.x * blockIdx.x;\n"
        "  int stride = blockDim.x * gridDim.x;\n"
        "  int n2 = n/2;\n"
        "  for (int i = start; i < n2; i += stride) y[i] = a * x[i];\n"
        "  int m = n;\n"
        "  m = 2 * m;\n"
        "  for (int i = start; i < m; i += stride) y[i] = a;\n"
        "}\n"
    )
    half, written = parse_source(src).loops
    assert (half.bound_text, half.extent_text, half.step_text) == ("n2", "(n/2)", "stride")
    # assigned once after its declaration (issue 31): from there on the local holds what was assigned
    assert written.extent_text == "(2 * (n))"


def test_a_chained_assignment_after_the_declarations_assigns_each_local():
    """Learn-CUDA-Programming's sgemm.cu: `int N, M, K; ... N = M = K = 2048;` (issue 31)."""
    src = parse_source("__global__ void k(int n) {}\n"
                       "void f() { int N, M, K; float a = 2.f; N = M = K = 2048; k<<<N / 16, M / 8>>>(K); }\n")
    (site,) = src.launch_sites
    assert (site.grid.value, site.block.value, site.arg_values) == (128, 256, (2048,))
