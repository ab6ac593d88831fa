"""Inlay hints: a hot line's share and its top stall reason at the line's end ("34 % · long scoreboard").

Per-line cost without moving code around (a lens adds a line above; a hint sits after the text)."""

from __future__ import annotations

from collections.abc import Iterator

from lsprotocol import types

from kernelscope.analysis.application import KernelReport, LineReport

from ..tracking import ResultView

#: a line below this share of its kernel's samples is not hot enough to annotate
HOT_SHARE = 0.05


def top_reason(samples: dict[str, float]) -> str | None:
    """The stall reason with the most samples, as words ("long scoreboard"), or None."""
    top = max(samples.items(), key=lambda kv: kv[1], default=None)
    return None if top is None or top[1] <= 0 else top[0].replace("_", " ")


def label(share: float, samples: dict[str, float], with_calls: bool = False) -> str:
    reason = top_reason(samples)
    text = f"{100 * share:.0f} %" + (" with calls" if with_calls else "")
    return text if reason is None else f"{text} · {reason}"


def hot_lines(view: ResultView, min_share: float) -> Iterator[tuple[KernelReport, LineReport, float, types.Range]]:
    """(kernel, line, share of the kernel's samples, the line's range now) for each line at or above
    `min_share` that is still where it was analysed; measured shares win over modeled ones."""
    for k in view.result.kernels:
        for lr in k.lines:
            # a call's line is as hot as what it calls (call-site blame), shown in its label
            share = (lr.share or lr.modeled_share or 0.0) + lr.callee_share
            if share < min_share:
                continue
            r = view.range(lr.line)
            if r is not None:  # None: edited since the analysis
                yield k, lr, share, r


def build(view: ResultView, rng: types.Range) -> list[types.InlayHint]:
    return [types.InlayHint(position=r.end, label=label(share, lr.samples, lr.callee_share >= 0.005), kind=None, padding_left=True,
                            tooltip=f"{k.name}: this line's share of the kernel's samples")
            for k, lr, share, r in hot_lines(view, HOT_SHARE)
            if rng.start.line <= r.end.line <= rng.end.line]  # outside the requested range: not asked for
