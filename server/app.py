"""The language server: state and wiring. Handlers are thin: they call the application layer
(analysis/application.py) through the scheduler, the hooks of the stateful features
(`LanguageFeature`s: code actions and verification, measured profiles), and features/' builders of
LSP objects from the presenters of analysis/reports/.

Custom protocol, for tests, benchmarks and clients that want it:
- notification `kernelscope/analysisFinished` {uri, cache: "hit (memory)"|"hit (disk)"|"miss",
  compiled, seconds, diagnostics, compilerRuns, depth, sourceSha256, cancelled?, error?} — sent for the
  quick result (depth "quick": one emulation per kernel) and again for the full one (sensitivity,
  what-if); `sourceSha256` names the text the result describes (a client that saved twice tells a late
  result for the first save from the second's);
- request `kernelscope/stats` -> {compilerRuns, cacheHitsMemory, ..., rssBytes};
- notifications `kernelscope/didGrantWorkspaceTrust` (what the VS Code extension sends) and its alias
  `kernelscope/workspaceTrusted`, {workspaceTrusted: true}: the user trusted the workspace after
  start-up (initializationOptions `workspaceTrusted` says so at start-up);
- commands (workspace/executeCommand; arguments positional):
  - `kernelscope.showReport(uri, kernel)` and `kernelscope.explain(uri, adviceId)` return Markdown
    (the first is also the code lens command);
  - `kernelscope.verifyAdvice(uri, adviceId)` -> the Verification as JSON (re-modeled fix), or null;
  - `kernelscope.roofline(uri)` -> {svg, kind, device, kernels: [{kernel, name, precision, bound,
    fraction, bindingLevel, provenance, trajectory}]}: one chart of every kernel in the file; an error
    reply while the file has no result;
  - `kernelscope.lineHeat(uri)` -> {kind, lines: [{line, share, reason, kernel}]}: each line costing its
    kernel >= 1 % of the samples, 0-based where it is now (VS Code's heat decoration); no lines while
    the file has no result;
  - `kernelscope.analyzeNow(uri, {noCache?})` -> {scheduled: true}: analyse without debounce
    (and without the cache when `noCache`); results arrive as usual;
  - `kernelscope.loadReport(uri, reportPath)` -> {ok, message?, kernels?, error?}: analyse with an
    Nsight Compute report's measured profile, kept for later saves while it matches the file;
  - `kernelscope.profileNow(uri)` -> as loadReport: run the `profile` setting under ncu (only in a
    trusted workspace, wherever the setting comes from: settings.screen), then load its report.
  Failures of the last two are shown as one window/showMessage; the reply has `error`, no `message`.
"""

import argparse
import asyncio
import gc
import logging
import logging.handlers
import sys
import threading
from pathlib import Path
from typing import Any

import platformdirs
from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from kernelscope.analysis import application
from kernelscope.analysis.application import Verification
from kernelscope.analysis.reports import markdown as render
from kernelscope.analysis.reports import provenance_kind

from . import progress, rpc
from .cache import ResultCache
from .feature import LanguageFeature
from .features import actions, diagnostics, heat, hover, inlay, lens, measured, roofline
from .scheduler import Outcome, Scheduler
from .settings import SECTION, Settings, load_settings, merge_user_layers, read_workspace_file, refusal_message, screen
from .tracking import ResultView, TrackedDocument

log = logging.getLogger("kernelscope.server")

VERSION = "0.1.0"


class KernelscopeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kernelscope", VERSION, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=rpc.KernelscopeProtocol)
        self.settings = Settings()
        self._loaded: Settings | None = None  # the settings as loaded, before settings.screen
        self.settings_ready = asyncio.Event()
        self.init_options: Any = None
        self.docs: dict[str, TrackedDocument] = {}
        self._cache: ResultCache | None = None
        self._shown: set[str] = set()
        self._file_log: logging.Handler | None = None
        #: the client said the workspace is trusted: capture and profiling may run its programs
        self.trusted = False
        self.scheduler = Scheduler(on_outcome=self.on_outcome, progress=self.begin_progress,
                                   settings=lambda: self.settings, ready=self.settings_ready, cache=self.cache)
        self.actions = actions.CodeActions(self)
        self.measured = measured.MeasuredProfiles(self)
        self.diagnostics = diagnostics.Diagnostics(self)
        #: every stateful feature, in the order its hooks are called
        self.features: tuple[LanguageFeature, ...] = (self.actions, self.measured, self.diagnostics)

    def start_io(self, stdin=None, stdout=None) -> None:
        if stdin is not None or stdout is not None:
            return super().start_io(stdin, stdout)
        rpc.serve_stdio(self)  # bounded framing, an error reply to every malformed request

    def stop_work(self) -> None:
        """Kill what the server started: compilers, and profiles (ncu and the user's program)."""
        self.scheduler.shutdown()
        for f in self.features:
            f.shutdown()

    def report_server_error(self, error: Exception, source) -> None:
        # pygls shows a window/showMessage per failing notification; a broken client would flood the editor.
        log.error("%s: %s", getattr(source, "__name__", source), error)
        if source is not FeatureRequestError:  # a request's error already went back in its reply
            self.show_once(f"kernelscope: the server rejected malformed messages; see the log in {self.cache_dir()}")

    # -- state ------------------------------------------------------------------------------

    def cache_dir(self) -> Path:
        return self.settings.cache.directory or Path(platformdirs.user_cache_dir("kernelscope"))

    def cache(self) -> ResultCache:
        c = self.settings.cache
        want = self.cache_dir(), int(c.max_megabytes * 2**20), c.memory_entries
        if self._cache is None or (self._cache.directory.parent, self._cache.max_bytes,
                                   self._cache.memory_entries) != want:
            self._cache = ResultCache(*want)
        return self._cache

    def view(self, uri: str) -> ResultView | None:
        doc = self.docs.get(uri)
        return doc.view if doc is not None else None

    def show_once(self, text: str, kind: types.MessageType = types.MessageType.Error) -> None:
        """One window/showMessage per distinct problem, not one per save."""
        if text in self._shown:
            return
        self._shown.add(text)
        self.window_show_message(types.ShowMessageParams(type=kind, message=text))

    async def begin_progress(self, uri: str, title: str, on_cancel):
        return await progress.begin(self, uri, title, on_cancel)

    # -- settings ---------------------------------------------------------------------------

    async def load_settings(self) -> None:
        init = self.init_options if isinstance(self.init_options, dict) else None
        # `workspaceTrusted` sits beside the settings (and is the client's to say, not a setting).
        layers = [init.get(SECTION, {k: v for k, v in init.items() if k != "workspaceTrusted"}) if init else None]
        ws = self.client_capabilities.workspace
        if ws is not None and ws.configuration:
            try:
                reply = await self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
                layers.append(reply[0] if reply else None)
            except Exception as e:
                log.warning("workspace/configuration failed: %s", e)
        root = self.workspace.root_path
        ws_file = await asyncio.get_running_loop().run_in_executor(
            None, read_workspace_file, Path(root) if root else None)
        loaded, problems = load_settings(merge_user_layers(*layers), ws_file.values, ws_file.sources)
        self.apply_settings(loaded)
        if problems := problems + ws_file.problems:
            self.show_once("kernelscope: invalid settings, defaults used for: " + "; ".join(problems),
                           types.MessageType.Error)

    def apply_settings(self, loaded: Settings | None = None) -> None:
        """Put `loaded` in force, minus what the workspace's trust now allows (settings.screen); without
        `loaded`, the last settings loaded again: trust changed, and takes effect at once."""
        self._loaded = loaded or self._loaded
        if self._loaded is None:
            return  # trust came before the first load, which screens with it
        old = self.settings
        new, refused = screen(self._loaded, self.trusted)  # the trust model, in one place
        if refused:
            self.show_once(refusal_message(refused), types.MessageType.Warning)
        self.settings = new
        self._setup_logging()
        log.info("settings loaded (%s)", "; ".join(f"{k} from {v.value}" for k, v in sorted(new.origins.items()))
                 or "all defaults")
        # capture's launches are inputs of the model too: trusting the workspace may turn it on
        changed = (new.analysis, new.capture) != (old.analysis, old.capture)
        if changed:
            self.scheduler.forget_toolchains()
        if self.settings_ready.is_set() and changed:
            for uri in self.docs:
                self.analyse(uri, "settings")
        if not self.settings_ready.is_set() or changed:
            asyncio.get_running_loop().create_task(self.scheduler.warm_up())
        self.settings_ready.set()

    def _setup_logging(self) -> None:
        level = getattr(logging, self.settings.log_level.upper())
        logging.getLogger("kernelscope").setLevel(level)
        path = self.cache_dir() / "server.log"
        if self._file_log is not None and getattr(self._file_log, "baseFilename", None) == str(path):
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.handlers.RotatingFileHandler(path, maxBytes=2**20, backupCount=2, encoding="utf-8")
        except OSError as e:
            log.warning("no log file at %s: %s", path, e)
            return
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
        if self._file_log is not None:
            logging.getLogger("kernelscope").removeHandler(self._file_log)
            self._file_log.close()
        logging.getLogger("kernelscope").addHandler(handler)
        self._file_log = handler

    # -- analyses ---------------------------------------------------------------------------

    def analyse(self, uri: str, reason, **how: Any) -> asyncio.Future | None:
        """Schedule an analysis (with the file's report, if one is attached); `how`: Scheduler.request's
        `immediate`/`use_cache`. Returns the future of its final Outcome, or None when nothing was scheduled."""
        path = to_fs_path(uri)
        if path is None or not uri.startswith("file:"):
            return  # untitled buffers have nothing on disk to compile
        if not Path(path).is_file():
            # A new buffer not yet written (`nvim new.cu`), or a file deleted meanwhile: analysed once saved.
            log.info("%s is not a file on disk (yet); not analysed", path)
            self.scheduler.cancel(uri)
            return
        attached = self.measured.report(uri)
        for f in self.features:
            f.analysis_requested(uri)
        return self.scheduler.request(uri, Path(path), reason, report=attached.path if attached else None,
                                      report_source=attached.source_sha256 if attached else None, **how)

    def on_outcome(self, o: Outcome) -> None:
        name = Path(to_fs_path(o.uri) or o.uri).name
        payload: dict[str, Any] = {"uri": o.uri, "reason": o.reason, "seconds": round(o.seconds, 4),
                                   "compilerRuns": self.scheduler.stats.compiler_runs}
        publish = self.measured.review(o)  # a refused report: already shown, the model is on its way
        if o.error is not None:
            log.error("%s: %s", name, o.error)
            if not publish:
                self.protocol.notify("kernelscope/analysisFinished", {**payload, "error": o.error})
                return
            self.show_once(f"kernelscope: {o.error}" if o.error_kind != "internal"
                           else f"kernelscope: analysing {name} failed ({o.error}); see the log in {self.cache_dir()}")
            self.protocol.notify("kernelscope/analysisFinished", {**payload, "error": o.error})
            return
        if o.cancelled is not None:
            self.protocol.notify("kernelscope/analysisFinished", {**payload, "cancelled": o.cancelled})
            return
        doc = self.docs.get(o.uri)
        if doc is None or o.result is None or o.analysed_text is None:
            return  # closed meanwhile
        cache = "miss" if o.cache == "miss" else f"hit ({o.cache})"
        doc.attach(o.result, o.analysed_text, cache)
        n = self.publish(o.uri)
        if o.cache == "miss":
            log.info("%s: cache: miss, compiled and analysed in %.2f s", name, o.seconds)
        else:
            log.info("%s: cache: %s, no compiler ran", name, cache)
        self.protocol.notify("kernelscope/analysisFinished", {
            **payload, "cache": cache, "compiled": o.result.compiled, "diagnostics": n, "depth": o.result.depth,
            "sourceSha256": o.result.source_sha256,
            "kind": provenance_kind(o.result), "measuredKernels": len(measured.measured_kernels(o))})
        self.refresh_lenses()
        ws = self.client_capabilities.workspace
        if ws is not None and ws.inlay_hint is not None and ws.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        for f in self.features:
            f.result_shown(o.uri, o.result)

    def refresh_lenses(self) -> None:
        """Ask the client for the code lenses again (their titles carry verified figures)."""
        ws = self.client_capabilities.workspace
        if ws is not None and ws.code_lens is not None and ws.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

    def publish(self, uri: str) -> int:
        """The file's diagnostics, as they are now (features/diagnostics.py); how many."""
        return self.diagnostics.publish(uri)


class _ClientLogHandler(logging.Handler):
    """kernelscope's own log records as window/logMessage; always sent from the event loop thread,
    because pygls's writer takes no lock."""

    _LEVELS = {logging.ERROR: types.MessageType.Error, logging.WARNING: types.MessageType.Warning,
               logging.INFO: types.MessageType.Info}

    def __init__(self, server: KernelscopeServer, loop: asyncio.AbstractEventLoop):
        super().__init__(logging.INFO)
        self._server = server
        self._loop = loop
        self._sending = False  # only touched on the event loop thread

    def emit(self, record: logging.LogRecord) -> None:
        kind = self._LEVELS.get(record.levelno, types.MessageType.Log)
        try:
            params = types.LogMessageParams(type=kind, message=self.format(record))
        except Exception:
            return
        if threading.current_thread() is threading.main_thread():
            self._send(params)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._send, params)

    def _send(self, params: types.LogMessageParams) -> None:
        # A failing write makes pygls log the failure and report it to us, which logs again: without
        # this guard one failed send became an endless chain of log messages that each failed to send.
        if self._sending:
            return
        self._sending = True
        try:
            self._server.window_log_message(params)
        except Exception:
            pass  # the transport is gone (shutdown); the log file still has it
        finally:
            self._sending = False


server = KernelscopeServer()


# -- lifecycle ------------------------------------------------------------------------------

@server.feature(types.INITIALIZE)
def initialize(ls: KernelscopeServer, params: types.InitializeParams) -> None:
    ls.init_options = params.initialization_options
    if isinstance(ls.init_options, dict):
        ls.trusted = ls.init_options.get("workspaceTrusted") is True


@server.feature(types.INITIALIZED)
async def initialized(ls: KernelscopeServer, params: types.InitializedParams) -> None:
    handler = _ClientLogHandler(ls, asyncio.get_running_loop())
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("kernelscope").addHandler(handler)
    # From here every record reaches the client as window/logMessage with its own MessageType; stderr
    # would repeat it, and Neovim logs every stderr line as [ERROR] (#17 item 5).
    logging.getLogger("kernelscope").propagate = False
    await ls.load_settings()
    ws = ls.client_capabilities.workspace
    if ws is not None and ws.did_change_configuration and ws.did_change_configuration.dynamic_registration:
        # VS Code only sends didChangeConfiguration after this registration.
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="kernelscope-configuration", method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                register_options=types.DidChangeConfigurationRegistrationOptions(section=SECTION))]))
        except Exception as e:
            log.debug("client refused to register didChangeConfiguration: %s", e)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: KernelscopeServer, params: types.DidChangeConfigurationParams) -> None:
    if isinstance(params.settings, dict) and SECTION in params.settings and not (
            ls.client_capabilities.workspace and ls.client_capabilities.workspace.configuration):
        ls.init_options = {SECTION: params.settings[SECTION]}  # push-only clients send the values themselves
    await ls.load_settings()


@server.feature(types.SHUTDOWN)
def shutdown(ls: KernelscopeServer, params: None) -> None:
    ls.stop_work()


# -- documents ------------------------------------------------------------------------------

@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: KernelscopeServer, params: types.DidOpenTextDocumentParams) -> None:
    td = params.text_document
    ls.docs[td.uri] = TrackedDocument.open(td.uri, td.text, td.version, ls.workspace.position_codec)
    for f in ls.features:
        f.document_open(td.uri)
    ls.analyse(td.uri, "open")


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: KernelscopeServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = ls.docs.get(params.text_document.uri)
    if doc is None:
        return
    for change in params.content_changes:
        doc.change(change)
    doc.doc.version = params.text_document.version
    for f in ls.features:
        f.document_change(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: KernelscopeServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    for f in ls.features:
        f.document_save(uri)
    ls.analyse(uri, "save")


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: KernelscopeServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.scheduler.cancel(uri)
    for f in ls.features:
        f.document_close(uri)
    ls.docs.pop(uri, None)


# -- features -------------------------------------------------------------------------------

@server.feature(types.TEXT_DOCUMENT_HOVER)
def on_hover(ls: KernelscopeServer, params: types.HoverParams) -> types.Hover | None:
    doc = ls.docs.get(params.text_document.uri)
    if doc is None or doc.view is None:
        return None
    pos = doc.doc.position_from_client_units(params.position)
    return hover.build(doc.view, pos.line, pos.character)


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def on_code_lens(ls: KernelscopeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    view = ls.view(params.text_document.uri)
    if view is None or not ls.settings.code_lens:
        return []
    return lens.build(view, params.text_document.uri, ls.actions.shown(view.result))


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
def on_inlay_hint(ls: KernelscopeServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    view = ls.view(params.text_document.uri)
    if view is None or not ls.settings.inlay_hints:
        return []
    return inlay.build(view, params.range)


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
def on_code_action(ls: KernelscopeServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    doc = ls.docs.get(uri)
    if doc is None or doc.view is None:
        return []
    return ls.actions.build(doc.view, uri, doc.doc.version, params.range,
                            actions.supports_snippets(ls.client_capabilities))


@server.command(lens.SHOW_REPORT)
def show_report(ls: KernelscopeServer, uri: str | None = None, kernel: str | None = None) -> str | None:
    _require_arguments(lens.SHOW_REPORT, uri, kernel)
    view = ls.view(uri)
    return lens.report(view, kernel) if view is not None else None


@server.command(actions.EXPLAIN)
def explain(ls: KernelscopeServer, uri: str | None = None, advice_id: str | None = None) -> str | None:
    _require_arguments(actions.EXPLAIN, uri, advice_id)
    view = ls.view(uri)
    found = next((a for a in view.result.advice if a.id == advice_id), None) if view is not None else None
    if found is None:
        return None
    text = render.explanation(found)
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=text))
    return text


def _require_arguments(command: str, *args: Any) -> None:
    # pygls calls a command with no arguments when the client sends `"arguments": null`.
    if not all(isinstance(a, str) for a in args):
        raise JsonRpcInvalidParams(f"{command} takes {len(args)} string arguments")


@server.command(actions.VERIFY)
async def verify_advice(ls: KernelscopeServer, uri: str | None = None, advice_id: str | None = None
                        ) -> dict[str, Any] | None:
    _require_arguments(actions.VERIFY, uri, advice_id)
    v = await ls.actions.verify_command(uri, advice_id)
    if v is not None:
        # A code action's command result is dropped by clients (Neovim, VS Code): say the figure.
        kind = types.MessageType.Warning if v["status"] == "does_not_compile" else types.MessageType.Info
        ls.window_show_message(types.ShowMessageParams(
            type=kind, message=render.verification(Verification.model_validate(v))))
    return v


@server.command(roofline.ROOFLINE)
async def roofline_chart(ls: KernelscopeServer, uri: str | None = None) -> dict[str, Any]:
    _require_arguments(roofline.ROOFLINE, uri)
    view = ls.view(uri)
    if view is None or not view.result.compiled:
        state = "did not compile" if view is not None else "has no analysis result yet (open or save it first)"
        raise FeatureRequestError(f"kernelscope: no roofline: {Path(to_fs_path(uri) or uri).name} {state}")
    return await asyncio.get_running_loop().run_in_executor(None, roofline.build, view.result, ls.settings.analysis)


@server.command(heat.LINE_HEAT)
def line_heat(ls: KernelscopeServer, uri: str | None = None) -> dict[str, Any]:
    _require_arguments(heat.LINE_HEAT, uri)
    view = ls.view(uri)
    return heat.build(view) if view is not None else {"kind": "static", "lines": []}


@server.command("kernelscope.analyzeNow")
def analyze_now(ls: KernelscopeServer, uri: str | None = None, *flags: Any) -> dict[str, Any]:
    _require_arguments("kernelscope.analyzeNow", uri)  # flags: an optional {noCache: bool}
    no_cache = bool(flags) and isinstance(flags[0], dict) and flags[0].get("noCache") is True
    if uri not in ls.docs:
        raise FeatureRequestError(f"kernelscope: {uri} is not open")
    scheduled = ls.analyse(uri, "command", immediate=True, use_cache=not no_cache) is not None
    return {"scheduled": scheduled}


@server.command(measured.LOAD_REPORT)
async def load_report(ls: KernelscopeServer, uri: str | None = None, report_path: str | None = None
                      ) -> dict[str, Any]:
    _require_arguments(measured.LOAD_REPORT, uri, report_path)
    return await ls.measured.load_report(uri, report_path)


@server.command(measured.PROFILE_NOW)
async def profile_now(ls: KernelscopeServer, uri: str | None = None) -> dict[str, Any]:
    _require_arguments(measured.PROFILE_NOW, uri)
    return await ls.measured.profile_now(uri)


def _trusted(ls: KernelscopeServer, params: Any) -> None:
    value = params.get("workspaceTrusted", True) if isinstance(params, dict) else \
        getattr(params, "workspaceTrusted", True)
    ls.trusted = value is True
    log.info("workspace trust: %s", "granted" if ls.trusted else "withdrawn")
    ls.apply_settings()  # what the trust model held back (or now holds back) takes effect before the next request


for _method in measured.TRUST_NOTIFICATIONS:
    server.feature(_method)(_trusted)


@server.feature("kernelscope/stats")
def stats(ls: KernelscopeServer, params: Any) -> dict[str, Any]:
    out: dict[str, Any] = {_camel(k): v for k, v in ls.scheduler.stats.as_dict().items()}
    out["rssBytes"] = _rss_bytes()
    out["openDocuments"] = len(ls.docs)
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            import os

            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# -- entry point ----------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernelscope serve", description="The kernelscope language server.")
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP socket instead (for debugging)")
    parser.add_argument("--version", action="version", version=f"kernelscope-server {VERSION}")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # stderr only: stdout is the protocol channel.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="kernelscope: %(levelname)s %(message)s")
    logging.getLogger("kernelscope").setLevel(logging.INFO)
    # Analyses run Python (emulator, sensitivity) on worker threads; a request handled on the event
    # loop waits for the GIL up to one switch interval per hand-over. 1 ms instead of 5 ms keeps
    # hovers during an analysis well under 50 ms at a negligible cost in analysis throughput.
    sys.setswitchinterval(0.001)
    # The server lives long: the analysis stages load once, here, not on a thread during the first
    # analysis (where they would slow the event loop's replies while it runs).
    application.load_stages()
    # What is loaded now lives as long as the server: out of the collector's sight, a full
    # collection no longer walks the ~100,000 objects of the modules each time (54-76 ms pauses
    # in the first analysis after start, a save's compile and model waiting behind them)
    gc.freeze()
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0
