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

from kernelscope.analysis import application
from kernelscope.analysis.application import CancelToken, Cancelled, MeasurementError, without_parameters

from ..feature import LanguageFeature
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


def _name(uri: str) -> str:
    return Path(to_fs_path(uri) or uri).name


def stale_message(report: Path, uri: str, detail: str) -> str:
    return (f"kernelscope: report {report.name} was captured from a different version of {_name(uri)}; "
            f"showing the model. ({detail})")


def measured_kernels(o: Outcome) -> list[str]:
    return [k.name for k in o.result.kernels if k.measured_duration_s is not None] if o.result else []


class MeasuredProfiles(LanguageFeature):
    """The server's measured side: the report attached to each file and the profiles running."""

    def __init__(self, server) -> None:
        super().__init__(server)
        self.reports: dict[str, AttachedReport] = {}
        self.profiling: dict[str, CancelToken] = {}

    # -- lifecycle ----------------------------------------------------------------------------

    def document_save(self, uri: str) -> None:
        profile = self.server.settings.profile
        if profile is not None and profile.on_save and uri in self.server.docs:
            # The new profile replaces the attached report, which described the file before this save.
            self.reports.pop(uri, None)
            asyncio.get_running_loop().create_task(self.profile_now(uri, quiet_refusal=True))

    def document_close(self, uri: str) -> None:
        self.reports.pop(uri, None)
        if (token := self.profiling.pop(uri, None)) is not None:
            token.cancel()  # kills ncu and the profiled program (their process group)

    def shutdown(self) -> None:
        for uri in list(self.profiling):
            self.profiling.pop(uri).cancel()

    # -- reports --------------------------------------------------------------------------------

    def report(self, uri: str) -> AttachedReport | None:
        return self.reports.get(uri)

    def _drop(self, uri: str, path: Path | None) -> bool:
        """Forget `uri`'s report if it is still `path`; True if it was."""
        attached = self.reports.get(uri)
        if attached is None or attached.path != path:
            return False
        del self.reports[uri]
        return True

    def _show(self, text: str, kind: types.MessageType = types.MessageType.Error) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=text))

    def review(self, o: Outcome) -> bool:
        """Check an outcome of an analysis that used a report; False when it must not be published.

        A refused report is dropped with one message, and the file is analysed again without it.
        """
        if o.report is None:
            return True
        if o.error_kind in ("stale_report", "report"):
            if self._drop(o.uri, o.report):
                text = stale_message(o.report, o.uri, o.error or "") if o.error_kind == "stale_report" else \
                    f"kernelscope: cannot use report {o.report} for {_name(o.uri)}: {o.error}; showing the model"
                self._show(text)
                asyncio.get_running_loop().call_soon(self.server.analyse, o.uri, o.reason)
            return False
        r = o.result
        if r is None or not r.compiled or not r.kernels:
            return True
        if not measured_kernels(o):
            # Every number is the model's already (the pipeline says so in the provenance): publish it.
            if self._drop(o.uri, o.report):
                here = ", ".join(without_parameters(k.name) for k in r.kernels)
                self._show(f"kernelscope: report {o.report.name} profiled no kernel that {_name(o.uri)} defines "
                           f"(kernels here: {here}): it was captured from another file or a different version of "
                           "this one; showing the model")
            return True
        attached = self.report(o.uri)
        if attached is not None and attached.path == o.report and o.result is not None and o.result.depth == "full":
            attached.source_sha256 = r.source_sha256
        return True

    def _resolve(self, report_path: str) -> Path:
        path = Path(report_path).expanduser()
        root = self.server.workspace.root_path
        return path if path.is_absolute() or not root else Path(root) / path

    async def load_report(self, uri: str, report_path: str) -> dict[str, Any]:
        """`kernelscope.loadReport [uri, reportPath]`: analyse the file with the report's measured profile.

        Returns {ok: true, message, kernels: [names measured]} or {ok: false, error}; an error was
        already shown (window/showMessage), so the reply carries no `message` for the client to repeat.
        """
        if uri not in self.server.docs or to_fs_path(uri) is None:
            text = f"kernelscope: open {_name(uri)} before loading a report for it"
            self._show(text)
            return {"ok": False, "error": text}
        path = self._resolve(report_path)
        self.reports[uri] = AttachedReport(path)
        done = self.server.analyse(uri, "command", immediate=True)
        o: Outcome | None = await done if done is not None else None
        if o is None or o.cancelled:
            return {"ok": False, "error": "the analysis was superseded or cancelled"}
        if o.error is not None:
            return {"ok": False, "error": o.error}
        measured = measured_kernels(o)
        if not measured:
            return {"ok": False, "error": f"report {path.name} matches no kernel of {_name(uri)}"}
        return {"ok": True, "kernels": measured,
                "message": f"measured profile from {path.name} for {', '.join(map(without_parameters, measured))}; "
                           "hover shows it beside the model's prediction"}

    # -- profiling ------------------------------------------------------------------------------

    def refusal(self) -> str | None:
        """Why the profile setting may not run now, or None."""
        settings = self.server.settings
        if not self.server.trusted and (settings.profile is not None or "profile" in settings.withheld):
            # settings.screen set it aside already; asked again here, where the program would run
            where = settings.withheld.get("profile", "the editor's settings")
            return (f"kernelscope: not running the profile command from {where}: profiling runs your program, and "
                    f"the workspace is not trusted. To run it, {HOW_TO_TRUST}")
        if settings.profile is None:
            return ("kernelscope: nothing to profile: set kernelscope.profile.command to the program that launches "
                    "the kernels (see docs/measured.md)")
        return None

    async def profile_now(self, uri: str, *, quiet_refusal: bool = False) -> dict[str, Any]:
        """`kernelscope.profileNow [uri]`: run the `profile` setting under ncu, then load its report.

        Returns what `load_report` returns, or {ok: false, error} (shown as one message)."""
        ls = self.server
        path = to_fs_path(uri)
        if uri not in ls.docs or path is None:
            text = f"kernelscope: open {_name(uri)} before profiling it"
            self._show(text)
            return {"ok": False, "error": text}
        if (why := self.refusal()) is not None:
            if quiet_refusal:
                ls.show_once(why)  # on save: once per session, not once per save
            else:
                self._show(why)
            return {"ok": False, "error": why, "refused": True}
        settings = ls.settings.profile
        root = ls.workspace.root_path
        target = settings.target(Path(root) if root else Path(path).parent)
        token = CancelToken()
        if (old := self.profiling.pop(uri, None)) is not None:
            old.cancel()
        self.profiling[uri] = token
        out = ls.cache_dir() / "profiles"
        report = out / f"{Path(path).stem}-{hashlib.sha256(uri.encode()).hexdigest()[:12]}.ncu-rep"
        warnings: list[str] = []
        progress = await ls.begin_progress(uri, f"kernelscope: profiling {_name(uri)} with Nsight Compute", token.cancel)

        loop = asyncio.get_running_loop()

        def job_state(message: str) -> None:
            # the Slurm job's state ("pending in gpu (Resources)", "running on node07"), from run_ncu's
            # thread: the progress notification is sent from the server's loop
            loop.call_soon_threadsafe(progress.note, message)

        def run() -> application.Measurement:
            out.mkdir(parents=True, exist_ok=True)
            # ncu; where the counters are refused, CUPTI PC sampling; else the model (measure/fallback.py)
            return application.profile(target, cancel=token, ncu_path=settings.ncu_path, report_path=report,
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
            self._show(text)
            return {"ok": False, "error": str(e), "errorType": type(e).__name__}
        except Exception as e:  # a bug must not take the server down
            log.exception("profiling %s failed", path)
            text = f"kernelscope: profiling {_name(uri)} failed ({type(e).__name__}: {e}); see the log in {ls.cache_dir()}"
            self._show(text)
            return {"ok": False, "error": text}
        finally:
            progress.end(ended)
            if self.profiling.get(uri) is token:
                del self.profiling[uri]
        for w in warnings:
            self._show(f"kernelscope: {w}", types.MessageType.Warning)
        if measured.ran != "ncu":  # the counters were refused: the one message, which profile is shown, its hot lines
            sampled = "; ".join(application.hot_lines(measured.profile)) if measured.profile is not None else ""
            self._show(f"kernelscope: profiling {_name(uri)}: {measured.message}"
                      + (f" Hot lines sampled by CUPTI: {sampled}" if sampled else ""))
            return {"ok": False, "error": measured.message, "errorType": "CounterPermissionError", "ran": measured.ran,
                    "profile": measured.label}
        return await self.load_report(uri, str(report))
