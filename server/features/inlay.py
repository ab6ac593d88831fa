"""Inlay hints: a hot line's share and its top stall reason at the line's end ("34 % · long scoreboard").

Per-line cost without moving code around (a lens adds a line above; a hint sits after the text)."""

from __future__ import annotations

from lsprotocol import types

from ..tracking import ResultView

#: a line below this share of its kernel's samples is not hot enough to annotate
HOT_SHARE = 0.05


def label(share: float, samples: dict[str, float]) -> str:
    top = max(samples.items(), key=lambda kv: kv[1], default=None)
    text = f"{100 * share:.0f} %"
    return text if top is None or top[1] <= 0 else f"{text} · {top[0].replace('_', ' ')}"


def build(view: ResultView, rng: types.Range) -> list[types.InlayHint]:
    out: list[types.InlayHint] = []
    for k in view.result.kernels:
        for lr in k.lines:
            share = lr.share or lr.modeled_share or 0.0
            if share < HOT_SHARE:
                continue
            r = view.range(lr.line)
            if r is None or not (rng.start.line <= r.end.line <= rng.end.line):
                continue  # stale (edited since) or outside the requested range
            out.append(types.InlayHint(position=r.end, label=label(share, lr.samples),
                                       kind=None, padding_left=True,
                                       tooltip=f"{k.name}: this line's share of the kernel's samples"))
    return out
