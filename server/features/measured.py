"""Measured profiles in the editor: load an Nsight Compute report, or profile now, and show the
measured result (with the model's prediction beside it) for as long as it describes the file.

Rules:
- a report is remembered per file and reused by every later analysis only while the file is the
  one it was loaded against: the pipeline refuses a report that embeds other source text or names
  lines past the end (StaleReportError), and the server drops a report once the file's content
  differs from the content it was loaded with; either way one message says so and the file falls
  back to the model;
- a report none of whose kernels is defined in the file is dropped the same way;
- profiling runs the user's program: only once the client says the workspace is trusted
  (initializationOptions `workspaceTrusted`, or the trust notification later), wherever the
  `profile` setting comes from (settings.screen sets it aside until then).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from kernelscope.analysis.measure.errors import MeasurementError
from kernelscope.analysis.measure.fallback import Measurement, hot_lines, measure_with_fallback
from kernelscope.analysis.process import CancelToken, Cancelled

from ..scheduler import Outcome
from ..settings import HOW_TO_TRUST

log = logging.getLogger("kernelscope.server.measured")

LOAD_REPORT = "kernelscope.loadReport"
PROFILE_NOW = "kernelscope.profileNow"
#: the VS Code extension sends the first (vscode-client/src/protocol.ts); the second is the documented alias
TRUST_NOTIFICATIONS = ("kernelscope/didGrantWorkspaceTrust", "kernelscope/workspaceTrusted")


@dataclass
class AttachedReport:
    path: Path
    #: sha256 of the file the report was verified against (None until its first measured result)
    source_sha256: str | None = None


class MeasuredState:
    """The server's measured side: the report attached to each file, running profiles, trust."""

    def __init__(self) -> None:
        self.reports: dict[str, AttachedReport] = {}
        self.profiling: dict[str, CancelToken] = {}
        self.trusted = False

    def report(self, uri: str) -> AttachedReport | None:
        return self.reports.get(uri)

    def drop(self, uri: str, path: Path | None) -> bool:
        """Forget `uri`'s report if it is still `path`; True if it was."""
        attached = self.reports.get(uri)
        if attached is None or attached.path != path:
            return False
        del self.reports[uri]
        return True

    def forget(self, uri: str) -> None:
        self.reports.pop(uri, None)
        if (token := self.profiling.pop(uri, None)) is not None:
            token.cancel()  # kills ncu and the profiled program (their process group)

    def cancel_all(self) -> None:
        for uri in list(self.profiling):
            self.profiling.pop(uri).cancel()


def _name(uri: str) -> str:
    return Path(to_fs_path(uri) or uri).name


def _show(ls: Any, text: str, kind: types.MessageType = types.MessageType.Error) -> None:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=text))


def stale_message(report: Path, uri: str, detail: str) -> str:
    return (f"kernelscope: report {report.name} was captured from a different version of {_name(uri)}; "
            f"showing the model. ({detail})")


def measured_kernels(o: Outcome) -> list[str]:
    return [k.name for k in o.result.kernels if k.measured_duration_s is not None] if o.result else []


def review(ls: Any, o: Outcome) -> bool:
    """Check an outcome of an analysis that used a report; False when it must not be published.

    A refused report is dropped with one message, and the file is analysed again without it.
    """
    if o.report is None:
        return True
    state: MeasuredState = ls.measured
    if o.error_kind in ("stale_report", "report"):
        if state.drop(o.uri, o.report):
            text = stale_message(o.report, o.uri, o.error or "") if o.error_kind == "stale_report" else \
                f"kernelscope: cannot use report {o.report} for {_name(o.uri)}: {o.error}; showing the model"
            _show(ls, text)
            asyncio.get_running_loop().call_soon(ls._analyse, o.uri, o.reason)
        return False
    r = o.result
    if r is None or not r.compiled or not r.kernels:
        return True
    if not measured_kernels(o):
        # Every number is the model's already (the pipeline says so in the provenance): publish it.
        if state.drop(o.uri, o.report):
            here = ", ".join(k.name.split("(")[0] for k in r.kernels)
            _show(ls, f"kernelscope: report {o.report.name} profiled no kernel that {_name(o.uri)} defines "
                      f"(kernels here: {here}): it was captured from another file or a different version of "
                      "this one; showing the model")
        return True
    attached = state.report(o.uri)
    if attached is not None and attached.path == o.report and o.result is not None and o.result.depth == "full":
        attached.source_sha256 = r.source_sha256
    return True


def _resolve(ls: Any, report_path: str) -> Path:
    path = Path(report_path).expanduser()
    root = ls.workspace.root_path
    return path if path.is_absolute() or not root else Path(root) / path


async def load_report(ls: Any, uri: str, report_path: str) -> dict[str, Any]:
    """`kernelscope.loadReport [uri, reportPath]`: analyse the file with the report's measured profile.

    Returns {ok: true, message, kernels: [names measured]} or {ok: false, error}; an error was
    already shown (window/showMessage), so the reply carries no `message` for the client to repeat.
    """
    if uri not in ls.docs or to_fs_path(uri) is None:
        text = f"kernelscope: open {_name(uri)} before loading a report for it"
        _show(ls, text)
        return {"ok": False, "error": text}
    path = _resolve(ls, report_path)
    ls.measured.reports[uri] = AttachedReport(path)
    done = ls._analyse(uri, "command", immediate=True)
    o: Outcome | None = await done if done is not None else None
    if o is None or o.cancelled:
        return {"ok": False, "error": "the analysis was superseded or cancelled"}
    if o.error is not None:
        return {"ok": False, "error": o.error}
    measured = measured_kernels(o)
    if not measured:
        return {"ok": False, "error": f"report {path.name} matches no kernel of {_name(uri)}"}
    return {"ok": True, "kernels": measured,
            "message": f"measured profile from {path.name} for {', '.join(n.split('(')[0] for n in measured)}; "
                       "hover shows it beside the model's prediction"}


def refusal(ls: Any) -> str | None:
    """Why the profile setting may not run now, or None."""
    settings = ls.settings
    if not ls.measured.trusted and (settings.profile is not None or "profile" in settings.withheld):
        # settings.screen set it aside already; asked again here, where the program would run
        where = settings.withheld.get("profile", "the editor's settings")
        return (f"kernelscope: not running the profile command from {where}: profiling runs your program, and "
                f"the workspace is not trusted. To run it, {HOW_TO_TRUST}")
    if settings.profile is None:
        return ("kernelscope: nothing to profile: set kernelscope.profile.command to the program that launches "
                "the kernels (see docs/measured.md)")
    return None


async def profile_now(ls: Any, uri: str, *, quiet_refusal: bool = False) -> dict[str, Any]:
    """`kernelscope.profileNow [uri]`: run the `profile` setting under ncu, then load its report.

    Returns what `load_report` returns, or {ok: false, error} (shown as one message)."""
    path = to_fs_path(uri)
    if uri not in ls.docs or path is None:
        text = f"kernelscope: open {_name(uri)} before profiling it"
        _show(ls, text)
        return {"ok": False, "error": text}
    if (why := refusal(ls)) is not None:
        if quiet_refusal:
            ls.show_once(why)  # on save: once per session, not once per save
        else:
            _show(ls, why)
        return {"ok": False, "error": why, "refused": True}
    settings = ls.settings.profile
    root = ls.workspace.root_path
    target = settings.target(Path(root) if root else Path(path).parent)
    token = CancelToken()
    if (old := ls.measured.profiling.pop(uri, None)) is not None:
        old.cancel()
    ls.measured.profiling[uri] = token
    out = ls.cache_dir() / "profiles"
    report = out / f"{Path(path).stem}-{hashlib.sha256(uri.encode()).hexdigest()[:12]}.ncu-rep"
    warnings: list[str] = []
    progress = await ls._begin_progress(uri, f"kernelscope: profiling {_name(uri)} with Nsight Compute", token.cancel)

    loop = asyncio.get_running_loop()

    def job_state(message: str) -> None:
        # the Slurm job's state ("pending in gpu (Resources)", "running on node07"), from run_ncu's
        # thread: the progress notification is sent from the server's loop
        loop.call_soon_threadsafe(progress.note, message)

    def run() -> Measurement:
        out.mkdir(parents=True, exist_ok=True)
        # ncu; where the counters are refused, CUPTI PC sampling; else the model (measure/fallback.py)
        return measure_with_fallback(target, cancel=token, ncu_path=settings.ncu_path, report_path=report,
                                     source=Path(path), on_warning=warnings.append, on_progress=job_state)

    ended = "failed"
    try:
        measured = await loop.run_in_executor(None, run)
        ended = "done"
    except Cancelled:
        ended = "cancelled"
        return {"ok": False, "error": "profiling was cancelled", "cancelled": True}
    except MeasurementError as e:
        text = f"kernelscope: profiling {_name(uri)} failed: {e}"
        log.error("%s%s", text, f"\n{e.output}" if e.output else "")
        _show(ls, text)
        return {"ok": False, "error": str(e), "errorType": type(e).__name__}
    except Exception as e:  # a bug must not take the server down
        log.exception("profiling %s failed", path)
        text = f"kernelscope: profiling {_name(uri)} failed ({type(e).__name__}: {e}); see the log in {ls.cache_dir()}"
        _show(ls, text)
        return {"ok": False, "error": text}
    finally:
        progress.end(ended)
        if ls.measured.profiling.get(uri) is token:
            del ls.measured.profiling[uri]
    for w in warnings:
        _show(ls, f"kernelscope: {w}", types.MessageType.Warning)
    if measured.ran != "ncu":  # the counters were refused: the one message, which profile is shown, its hot lines
        sampled = "; ".join(hot_lines(measured.profile)) if measured.profile is not None else ""
        _show(ls, f"kernelscope: profiling {_name(uri)}: {measured.message}"
                  + (f" Hot lines sampled by CUPTI: {sampled}" if sampled else ""))
        return {"ok": False, "error": measured.message, "errorType": "CounterPermissionError", "ran": measured.ran,
                "profile": measured.label}
    return await load_report(ls, uri, str(report))
