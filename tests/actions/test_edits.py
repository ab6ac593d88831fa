"""The pure parts of code actions: applying edits, building fixes from the source model, ranking.

No compiler runs here; test_verify_real.py compiles every fix kind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.analysis.advisor.advice import Advice, Estimate, Fix, Hotspot, SourceEdit
from kernelscope.analysis.advisor.fixes import (EditError, apply_edits, block_size_fix, fast_math_variant, fix_digest, fix_for,
                                        forceinline_fix, hoist_load_fix, launch_bounds_fix, plain_text,
                                        pragma_unroll_fix, shared_memory_tiling_fix, unroll_factor)
from kernelscope.analysis.frontend.source import parse_source
from kernelscope.analysis.advisor.verify import Verification, original_line, rank_actions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNELS = Path(__file__).resolve().parent / "kernels"


def edit(line, col, end_line, end_col, text) -> SourceEdit:
    return SourceEdit(line=line, col=col, end_line=end_line, end_col=end_col, new_text=text)


def advice(optimizer="loop_unrolling", *, fix=None, speedup=1.25, lines=(1,), kernel_name="k(float*)", aid=None,
           hotspots=()) -> Advice:
    return Advice(id=aid or f"{optimizer}-{lines[0]}", optimizer=optimizer, title=optimizer.replace("_", " "),
                  kernel="_Z1kPf", kernel_name=kernel_name, lines=tuple(lines), importance=0.5,
                  estimate=Estimate(speedup=speedup, formula="test"), provenance="modeled", message="m", fix=fix,
                  hotspots=tuple(hotspots))


# ---------------------------------------------------------------------------- apply_edits


def test_apply_edits_back_to_front_and_insertion_order():
    text = "float a = 2.0 * x;\nfloat b = 0.5;\n"
    out = apply_edits(text, [edit(1, 13, 1, 13, "f"), edit(2, 13, 2, 13, "f"), edit(1, 0, 1, 0, "A"),
                             edit(1, 0, 1, 0, "B")])
    assert out == "ABfloat a = 2.0f * x;\nfloat b = 0.5f;\n"


def test_apply_edits_multiline_replacement_and_line_deletion():
    text = "a\nb\nc\nd\n"
    assert apply_edits(text, [edit(2, 0, 4, 0, "")]) == "a\nd\n"
    assert apply_edits(text, [edit(1, 1, 3, 1, "-")]) == "a-\nd\n"


def test_apply_edits_columns_are_str_indices_and_crlf_is_not_a_column():
    text = "// ü\r\nx = 1.0;\r\n"
    assert apply_edits(text, [edit(1, 4, 1, 4, "!"), edit(2, 7, 2, 7, "f")]) == "// ü!\r\nx = 1.0f;\r\n"
    with pytest.raises(EditError):
        apply_edits(text, [edit(1, 5, 1, 5, "x")])  # past the end of line 1 (the \r is not a column)


def test_apply_edits_rejects_overlaps_and_stale_positions():
    with pytest.raises(EditError):
        apply_edits("abcdef\n", [edit(1, 0, 1, 3, "x"), edit(1, 2, 1, 4, "y")])
    with pytest.raises(EditError):
        apply_edits("abc\n", [edit(7, 0, 7, 0, "x")])
    # Touching is not overlapping: an insertion at either end of a replacement.
    assert apply_edits("abc", [edit(1, 0, 1, 2, "X"), edit(1, 2, 1, 2, "|")]) == "X|c"


def test_original_line_maps_shadow_lines_back():
    edits = [edit(5, 0, 5, 0, "#pragma unroll 4\n"), edit(10, 0, 12, 0, "")]
    assert original_line(3, edits) == 3
    assert original_line(5, edits) == 5  # the inserted pragma: its edit's line
    assert original_line(6, edits) == 5  # the loop, pushed down one line
    assert original_line(9, edits) == 8
    assert original_line(11, edits) == 12  # after two deleted lines


def test_plain_text_resolves_placeholders():
    assert plain_text("int ${1:TILE} = ${2:32}; ${1:TILE} $0 ${3|a,b|} \\$x") == "int TILE = 32; TILE  a $x"


# ---------------------------------------------------------------------------- builders on the examples


def test_unroll_factor_from_trip_count():
    assert unroll_factor(None) == 4
    assert unroll_factor(1) is None
    assert unroll_factor(12) == 12  # short: unroll fully
    assert unroll_factor(64) == 8 and unroll_factor(36) == 4 and unroll_factor(17) == 4


def test_pragma_unroll_inserts_with_indentation_or_replaces_existing():
    text = (KERNELS / "hoist_load.cu").read_text()
    model = parse_source(text)
    loop = model.loops_in("blend")[0]
    fix = pragma_unroll_fix(loop, text)
    new = apply_edits(text, fix.edits)
    assert "    #pragma unroll 8\n    for (int k = 0; k < 64; ++k) {" in new
    tiled = (EXAMPLES / "sgemm_tiled.cu").read_text()
    inner = next(lp for lp in parse_source(tiled).loops if lp.unroll is not None)
    new = apply_edits(tiled, pragma_unroll_fix(inner, tiled, factor=8).edits)
    assert "#pragma unroll 8\n        for (int k = 0; k < TILE; ++k)" in new and "#pragma unroll\n" not in new


def test_forceinline_replaces_noinline_or_inserts():
    text = (EXAMPLES / "noinline_call.cu").read_text()
    fn = parse_source(text).function("smooth_step")
    new = apply_edits(text, forceinline_fix(fn, text).edits)
    assert "__device__ __forceinline__ float smooth_step(" in new and "__noinline__ float" not in new
    plain = "__device__ float f(float x) { return x; }\n"
    new = apply_edits(plain, forceinline_fix(parse_source(plain).function("f"), plain).edits)
    assert new.startswith("__forceinline__ __device__ float f(")
    assert forceinline_fix(parse_source(text).kernel("apply_smooth_step"), text) is None  # kernels cannot inline


def test_launch_bounds_inserted_before_the_name_or_replaced():
    text = (EXAMPLES / "local_array.cu").read_text()
    fn = parse_source(text).kernel("histogram_private")
    new = apply_edits(text, launch_bounds_fix(fn, 256, 4).edits)
    assert "__global__ void __launch_bounds__(256, 4) histogram_private(" in new
    tiled = (EXAMPLES / "sgemm_tiled.cu").read_text()
    new = apply_edits(tiled, launch_bounds_fix(parse_source(tiled).kernel("sgemm_tiled"), 1024).edits)
    assert "__global__ void __launch_bounds__(1024)\nsgemm_tiled(" in new


@pytest.mark.parametrize("example, new_block, expect", [
    ("strided_access.cu", 128, "const int threads = 128;"),  # the named constant; the grid follows it
    ("reduction_divergent.cu", 512, "#define BLOCK_SIZE 512"),  # shared array and grid follow too
    ("local_array.cu", 128, "histogram_private<<<512, 128>>>"),  # literal grid: same total threads
])
def test_block_size_updates_launch_and_grid(example, new_block, expect):
    text = (EXAMPLES / example).read_text()
    model = parse_source(text)
    fix = block_size_fix(model.kernels[0].name, new_block, model, text)
    assert fix is not None and fix.kind == "block_size"
    assert expect in apply_edits(text, fix.edits)


def test_block_size_rewrites_round_up_grid_expression():
    text = (KERNELS / "block32.cu").read_text()
    model = parse_source(text)
    new = apply_edits(text, block_size_fix("scale", 256, model, text).edits)
    assert "scale<<<(n + 255) / 256, 256>>>" in new


def test_block_size_refuses_what_it_cannot_keep_consistent():
    for example in ("small_grid.cu",  # the annotation, not the launch, drives the model
                    "sgemm_naive.cu"):  # dim3 block
        text = (EXAMPLES / example).read_text()
        model = parse_source(text)
        assert block_size_fix(model.kernels[0].name, 64, model, text) is None
    tiled = (EXAMPLES / "sgemm_tiled.cu").read_text()
    assert block_size_fix("sgemm_tiled", 2048, parse_source(tiled), tiled) is None


def test_hoist_load_moves_above_independent_statements_only():
    text = (KERNELS / "hoist_load.cu").read_text()
    model = parse_source(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "float v = a[k * n + i];" in s)
    a = advice("code_reordering", lines=(line + 1,), kernel_name="blend(float const*, float const*, float*, int)",
               hotspots=[Hotspot(def_line=line, use_line=line + 1, def_pc=0, use_pc=16, def_opcode="LDG",
                                 use_opcode="FFMA", distance=1, samples=10, category="global memory")])
    fix = hoist_load_fix(a, model, text)
    assert fix is not None and fix.kind == "hoist_load"
    body = apply_edits(text, fix.edits).split("{", 2)[2]
    assert body.index("float v = a[k * n + i];") < body.index("float s = acc * 0.5f + 1.0f;")
    # A store before the load could alias it: no hoist over it.
    stored = text.replace("acc = s * s - acc;", "out[i] = s;")
    assert hoist_load_fix(a, parse_source(stored), stored) is None
    # The load's index is written just before: nothing to move over.
    dependent = text.replace("acc = s * s - acc;", "n = n + 1;")
    assert hoist_load_fix(a, parse_source(dependent), dependent) is None
    # A barrier orders memory: no hoist over a call.
    synced = text.replace("acc = s * s - acc;", "__syncthreads();")
    fix = hoist_load_fix(a, parse_source(synced), synced)
    assert fix is None


def test_tiling_template_names_the_reused_access():
    text = (EXAMPLES / "sgemm_naive.cu").read_text()
    model = parse_source(text)
    loop = model.loops_in("sgemm_naive")[0]
    a = advice("shared_memory_tiling", lines=(loop.header_line,), kernel_name="sgemm_naive")
    fix = shared_memory_tiling_fix(a, model, text)
    assert fix is not None and fix.is_snippet
    snippet = fix.edits[0].new_text
    assert "A[row * n + k]" in snippet  # row comes from threadIdx.y: every thread along x reads it
    assert "__shared__ float ${3:tile_A}[${1:TILE_K}];" in snippet
    assert "__shared__ float tile_A[TILE_K];" in plain_text(snippet)


def test_fast_math_variant_and_fix_for():
    fix = Fix(kind="float_math_function", description="d", edits=(edit(3, 4, 3, 7, "expf"), edit(4, 4, 4, 8, "sqrtf")))
    fast = fast_math_variant(fix)
    assert [e.new_text for e in fast.edits] == ["__expf", "sqrtf"]  # sqrt has no faster intrinsic
    a = advice("double_math_function", fix=fix)
    assert fix_for(a, parse_source(""), "", fast_math=True) == fast
    assert fix_for(a, parse_source(""), "") == fix


# ---------------------------------------------------------------------------- rank_actions


def verification(a: Advice, status, ratio=None, **kw) -> Verification:
    return Verification(advice_id=a.id, kernel="k", fix_kind=a.fix.kind, fix_digest=fix_digest(a.fix),
                        compiles=status != "does_not_compile", verified_speedup=ratio, status=status,
                        reason=kw.pop("reason", status), **kw)


def test_rank_actions_titles_order_and_safety():
    unroll = Fix(kind="pragma_unroll", description="d", edits=(edit(3, 0, 3, 0, "#pragma unroll 4\n"),))
    lit = Fix(kind="float_literal", description="d", edits=(edit(5, 9, 5, 9, "f"),))
    broken = Fix(kind="restrict_const", description="d", edits=(edit(7, 9, 7, 10, ""),))
    slow = Fix(kind="block_size", description="d", edits=(edit(9, 1, 9, 4, "64"),))
    a_unroll = advice("loop_unrolling", fix=unroll, speedup=1.25, lines=(3,))
    a_lit = advice("double_precision_constant", fix=lit, speedup=1.05, lines=(5,))
    a_broken = advice("restrict_pointers", fix=broken, speedup=1.5, lines=(7,))
    a_slow = advice("thread_increase", fix=slow, speedup=1.3, lines=(9,))
    a_none = advice("warp_balance", speedup=1.1, lines=(11,))
    plans = rank_actions([a_unroll, a_lit, a_broken, a_slow, a_none], [
        verification(a_unroll, "verified", 1.21), verification(a_lit, "verified", 1.64),
        verification(a_broken, "does_not_compile", reason="the edited file does not compile: x.cu:7: expected a ';'"),
        verification(a_slow, "slower", 0.8)])
    titles = [p.title for p in plans]
    assert titles[0] == "Make literal float (verified 1.64×, est. 1.05×)"  # verified beats estimated
    assert "Unroll loop (verified 1.21×, est. 1.25×)" in titles
    by_id = {p.advice.id: p for p in plans}
    assert by_id[a_lit.id].advice.verified_speedup == pytest.approx(1.64)
    assert by_id[a_broken.id].kind == "guidance" and by_id[a_broken.id].fix is None
    assert "does not compile" in by_id[a_broken.id].reason and "expected a ';'" in by_id[a_broken.id].reason
    assert by_id[a_slow.id].kind == "guidance" and "slower" in by_id[a_slow.id].reason
    assert by_id[a_none.id].kind == "guidance" and by_id[a_none.id].title == "warp balance (est. 1.10×)"
    assert [p.speedup for p in plans] == sorted((p.speedup for p in plans), reverse=True)


def test_rank_actions_ignores_a_verification_of_another_edit():
    fix = Fix(kind="pragma_unroll", description="d", edits=(edit(3, 0, 3, 0, "#pragma unroll 4\n"),))
    a = advice(fix=fix)
    stale = verification(a, "does_not_compile").model_copy(update={"fix_digest": "0" * 16})
    (plan,) = rank_actions([a], {a.id: stale})
    assert plan.kind == "quickfix" and plan.title == "Unroll loop (est. 1.25×)" and plan.verification is None
