"""When analyses run: debounced, superseding, bounded, cancellable, cached.

Rules:
- one job per file: a newer request cancels the older job; a running compile is stopped by
  `CancelToken.cancel()`, which kills nvcc's whole process group (no orphans);
- requests closer together than `debounce_ms` are merged: the first of a quiet period starts
  at once (a single save pays no delay), later ones wait until the burst is over;
- the cache is consulted before a slot is taken, so a cached reopen never waits behind
  compiles; a semaphore bounds compiles across all files (`max_concurrent_analyses`);
- on a miss nvcc starts at once (`application.begin_compile`); the progress bar, the job's
  context and launch capture are resolved while it compiles, and the analysis adopts it;
- the quick result is published before the second stage starts (`QUICK_PUBLISH_WAIT_S`);
- `analyze` runs on a worker thread; the event loop only awaits it;
- a job may carry a measured report (.ncu-rep): the result then uses the measured profile, and
  its cache key covers the report file too. A report that does not belong to the file fails the
  job with error_kind "stale_report" (or "report"); the caller decides what to fall back to.

This module knows nothing about LSP: it reports through `Outcome`s and a `ProgressFactory`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from kernelscope.analysis import application
from kernelscope.analysis.application import (USER_ERRORS, AnalysisOptions, AnalysisResult, CancelToken, Cancelled,
                                              MeasurementError, StaleReportError, Toolchain)

from .cache import ResultCache
from .settings import Settings

if TYPE_CHECKING:
    from kernelscope.analysis.application import Prelaunch

log = logging.getLogger("kernelscope.server.scheduler")

Reason = Literal["open", "save", "settings", "command"]

#: the longest the second stage waits for the quick result's publication (a busy event loop)
QUICK_PUBLISH_WAIT_S = 0.5


@dataclass(frozen=True)
class Outcome:
    uri: str
    reason: Reason
    result: AnalysisResult | None = None
    analysed_text: str | None = None  # the file content the result describes
    cache: Literal["memory", "disk", "miss"] | None = None
    error: str | None = None  # a user error (toolchain, setup), one actionable sentence
    error_kind: Literal["toolchain", "user", "report", "stale_report", "internal"] | None = None
    cancelled: Literal["superseded", "user"] | None = None
    seconds: float = 0.0
    report: Path | None = None  # the measured report the job analysed with


class ProgressHandle(Protocol):
    def report(self, message: str, fraction: float) -> None: ...
    def end(self, message: str) -> None: ...


#: begin(uri, title, on_user_cancel) -> handle; called on the event loop
ProgressFactory = Callable[[str, str, Callable[[], None]], Awaitable[ProgressHandle]]


@dataclass
class Stats:
    """Counters for `kernelscope/stats`; `compiler_runs` counts calls of `analyze` (every one compiles)."""

    compiler_runs: int = 0
    cache_hits_memory: int = 0
    cache_hits_disk: int = 0
    cache_misses: int = 0
    cancelled: int = 0
    failed: int = 0
    running: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Job:
    uri: str
    reason: Reason
    requested_at: float
    task: asyncio.Task | None = None
    token: CancelToken | None = None
    in_executor: bool = False
    cancelled: Literal["superseded", "user"] | None = None
    report: Path | None = None
    report_source: str | None = None  # sha256 of the file the report was verified against, if known
    use_cache: bool = True
    last: Outcome | None = None  # the latest outcome emitted (the quick one, then the full one)
    done: asyncio.Future | None = None  # resolves to the final Outcome, or None when nothing was emitted

    def cancel(self, why: Literal["superseded", "user"]) -> None:
        self.cancelled = self.cancelled or why
        if self.token is not None:
            self.token.cancel()  # kills the compiler's process group; the worker thread then raises Cancelled
        if self.task is not None and not self.in_executor:
            # Not yet compiling (debounce, waiting for a slot): nothing to kill, just stop waiting.
            self.task.cancel()


class Scheduler:
    def __init__(self, *, on_outcome: Callable[[Outcome], None], progress: ProgressFactory,
                 settings: Callable[[], Settings], ready: asyncio.Event, cache: Callable[[], ResultCache],
                 analyze: Callable[..., AnalysisResult] | None = None, workers: int = 8):
        self._on_outcome = on_outcome
        self._progress = progress
        self._settings = settings
        self._ready = ready
        self._cache = cache
        self._analyze = analyze or application.analyse
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kernelscope-analysis")
        self._jobs: dict[str, _Job] = {}
        self._last_request: dict[str, float] = {}
        self._sem: asyncio.Semaphore | None = None
        self._sem_size = 0
        self._toolchains: dict[Any, Any] = {}
        self.stats = Stats()

    # -- public API (event loop) ------------------------------------------------------------

    def request(self, uri: str, path: Path, reason: Reason, *, report: Path | None = None,
                report_source: str | None = None, immediate: bool = False, use_cache: bool = True) -> asyncio.Future:
        """Start (or, within the debounce window, delay) an analysis of `path`; supersedes the file's job.

        `report`: analyse with this measured report; with `report_source` (the sha256 of the file it
        was verified against) a file that changed since fails as "stale_report" before compiling.
        `immediate` skips the debounce (an explicit command); `use_cache=False` compiles even on a hit.
        Returns a future of the job's final Outcome (None when it was superseded before it emitted).
        """
        loop = asyncio.get_running_loop()
        now = loop.time()
        debounce = self._settings().debounce_ms / 1000.0 if self._ready.is_set() and not immediate else 0.0
        last = self._last_request.get(uri)
        delay = debounce if (last is not None and now - last < debounce) else 0.0
        self._last_request[uri] = now
        old = self._jobs.get(uri)
        if old is not None:
            old.cancel("superseded")
        job = _Job(uri, reason, now, report=report, report_source=report_source, use_cache=use_cache,
                   done=loop.create_future())
        job.task = loop.create_task(self._run(job, path, delay), name=f"analysis {uri}")
        self._jobs[uri] = job
        return job.done  # type: ignore[return-value]

    def cancel(self, uri: str, why: Literal["superseded", "user"] = "superseded") -> None:
        job = self._jobs.pop(uri, None)
        self._last_request.pop(uri, None)
        if job is not None:
            job.cancel(why)

    def cancel_all(self) -> None:
        for uri in list(self._jobs):
            self.cancel(uri)

    def forget_toolchains(self) -> None:
        self._toolchains.clear()

    async def warm_up(self) -> None:
        """Locate the toolchain before the first file needs it: `nvcc --version` alone takes ~0.1 s,
        which a cached reopen in a fresh server would otherwise pay."""
        settings = self._settings()
        if settings.analysis.compile_commands is not None:
            return  # the toolchain depends on each file's compile command
        try:
            await self._toolchain(Path("."), settings)
        except Exception as e:  # reported when a file is analysed
            log.debug("toolchain warm-up: %s", e)

    def shutdown(self) -> None:
        self.cancel_all()
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def idle(self) -> None:
        """Wait until no job is pending (tests and benchmarks)."""
        while self._jobs:
            await asyncio.gather(*(j.task for j in list(self._jobs.values()) if j.task), return_exceptions=True)

    # -- the job ----------------------------------------------------------------------------

    def _semaphore(self, size: int) -> asyncio.Semaphore:
        # A settings change resizes the bound for new jobs; running ones keep their slot.
        if self._sem is None or self._sem_size != size:
            self._sem, self._sem_size = asyncio.Semaphore(size), size
        return self._sem

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def _run(self, job: _Job, path: Path, delay: float) -> None:
        started = time.perf_counter()
        progress: ProgressHandle | None = None
        try:
            if delay:
                await asyncio.sleep(delay)
            await self._ready.wait()  # configuration race: didOpen may come before the settings
            settings = self._settings()
            if (job.reason == "open" and not settings.analyze_on_open) or \
                    (job.reason == "save" and not settings.analyze_on_save):
                return
            toolchain = await self._toolchain(path, settings)
            key, data, text, hit = await self._from_cache(job, path, settings, toolchain)
            if hit is not None and job.use_cache:
                self._emit(job, hit, started)
                return
            async with self._semaphore(settings.max_concurrent_analyses):
                if job.cancelled:
                    return
                job.token = CancelToken()
                # nvcc first: the progress bar, the request's context and launch capture (which
                # changes the launches, not the compile) are resolved while it compiles
                compiling = await self._in_thread(application.begin_compile, path, settings.analysis, toolchain,
                                                  job.token)
                try:
                    progress = await self._progress(job.uri, f"kernelscope: analysing {path.name}",
                                                    lambda: job.cancel("user"))
                    if job.cancelled:  # cancelled while the progress bar was being created
                        return
                    result = await self._compile(job, path, data, settings, toolchain, progress, compiling,
                                                 lambda quick: self._emit(job, Outcome(job.uri, job.reason, quick,
                                                                                       text, "miss",
                                                                                       report=job.report), started))
                finally:
                    if compiling is not None:  # stopped unless the compile adopted it (a cancel, a failure before)
                        compiling.close()
            await self._in_thread(self._cache().put, key, result)
            self._emit(job, Outcome(job.uri, job.reason, result, text, "miss", report=job.report), started)
        except asyncio.CancelledError:
            self.stats.cancelled += 1
            log.debug("analysis of %s cancelled before it compiled", path.name)
        except Cancelled:
            self.stats.cancelled += 1
            log.info("analysis of %s stopped (%s)", path.name, job.cancelled or "cancelled")
            self._emit(job, Outcome(job.uri, job.reason, cancelled=job.cancelled or "superseded"), started)
        except MeasurementError as e:  # the job's report: missing, not a report, or from another version of the file
            self.stats.failed += 1
            kind = "stale_report" if isinstance(e, StaleReportError) else "report"
            self._emit(job, Outcome(job.uri, job.reason, error=str(e), error_kind=kind, report=job.report), started)
        except USER_ERRORS as e:
            self.stats.failed += 1
            kind = "toolchain" if type(e).__name__ == "ToolchainError" else "user"
            self._emit(job, Outcome(job.uri, job.reason, error=str(e), error_kind=kind), started)
        except Exception as e:  # a bug in one analysis must never take the server down
            self.stats.failed += 1
            log.exception("analysis of %s failed", path)
            self._emit(job, Outcome(job.uri, job.reason, error=f"{type(e).__name__}: {e}", error_kind="internal"),
                       started)
        finally:
            if progress is not None:
                progress.end("cancelled" if job.cancelled else "done")
            if self._jobs.get(job.uri) is job:
                del self._jobs[job.uri]
            if job.done is not None and not job.done.done():
                job.done.set_result(job.last)

    async def _from_cache(self, job: _Job, path: Path, settings: Settings,
                          toolchain: Toolchain) -> tuple[str, bytes, str, Outcome | None]:
        """(cache key, the file's bytes and text, the Outcome on a hit or None). The bytes read here
        are the ones analysed on a miss (`_compile`), so the text shown is the text analysed."""
        # read as the analysis reads a file (a FIFO or /dev/zero under a .cu name: an error, not a hang)
        data: bytes = await self._in_thread(application.read_regular, path)
        text = data.decode("utf-8", errors="replace")
        if job.report_source is not None and application.source_digest(data) != job.report_source:
            # The report was checked against other content; only the file's own text can vouch for a
            # report without embedded source, so a changed file ends its use.
            raise StaleReportError(f"{path.name} changed since {job.report.name if job.report else 'the report'} "
                                   "was loaded")
        # Headers count: editing a local header must not serve the result computed before the edit.
        digest = await self._in_thread(application.input_digest, path, settings.analysis, toolchain,
                                       data)
        if job.report is not None:
            # A measured result depends on the report file as well; a replaced report is a new key.
            digest = hashlib.sha256(f"{digest}\0{await self._in_thread(_file_identity, job.report)}".encode()).hexdigest()
        if settings.capture.enabled:  # captured launches are inputs of the model too
            digest = hashlib.sha256(f"{digest}\0{settings.capture.model_dump_json()}".encode()).hexdigest()
        key = settings.analysis.cache_key(digest, toolchain.version)
        cache = self._cache()
        hit = cache.get_memory(key)
        how: Literal["memory", "disk"] = "memory"
        if hit is None:
            found = await self._in_thread(cache.get, key)
            if found is not None:
                hit, how = found
        if hit is not None:
            if how == "memory":
                self.stats.cache_hits_memory += 1
            else:
                self.stats.cache_hits_disk += 1
            return key, data, text, Outcome(job.uri, job.reason, hit, text, how, report=job.report)
        self.stats.cache_misses += 1
        return key, data, text, None

    async def _toolchain(self, path: Path, settings: Settings) -> Toolchain:
        opts = settings.analysis
        # Located once per (settings, compile command): the search stats many paths and runs `nvcc --version`.
        key = (opts.model_dump_json(include={"nvcc_path", "compile_commands"}),
               str(path) if opts.compile_commands else None)
        if key not in self._toolchains:
            self._toolchains[key] = await self._in_thread(application.resolve_toolchain, path, opts)
        return self._toolchains[key]

    async def _compile(self, job: _Job, path: Path, data: bytes, settings: Settings, toolchain: Toolchain,
                       progress: ProgressHandle, compiling: Prelaunch | None,
                       publish_quick: Callable[[AnalysisResult], None]) -> AnalysisResult:
        loop = asyncio.get_running_loop()

        def report(stage: str, fraction: float) -> None:  # called on the worker thread
            loop.call_soon_threadsafe(progress.report, stage, fraction)

        def partial(quick: AnalysisResult) -> None:  # called on the worker thread
            # The quick result (one emulation per kernel) is published while sensitivity and
            # what-if still run; the full result replaces it (and only the full one is cached).
            if job.cancelled:
                return
            shown = threading.Event()

            def publish() -> None:
                try:
                    publish_quick(quick)
                finally:
                    shown.set()

            loop.call_soon_threadsafe(publish)
            # The second stage starts once the first diagnostics are out: they are what a save waits
            # for, and its runs (on this thread, then in forked workers) would share the interpreter
            # and both cores with the publish (2-20 ms of the loop's work, 3-6 ms alone)
            shown.wait(QUICK_PUBLISH_WAIT_S)

        analyze = self._analyze
        self.stats.compiler_runs += 1
        self.stats.running += 1
        job.in_executor = True
        log.info("analysing %s (%s)", path, job.reason)
        def run() -> AnalysisResult:  # on the worker thread
            # resolved once for the job: the arch catalog (capture and the analysis both use it) and
            # the file's bytes the cache was looked up with
            before = application.resolve_context(path, settings.analysis, data=data)
            return analyze(path, _with_capture(path, settings, job.token, before.catalog), cancel=job.token,
                           progress=report, toolchain=toolchain, on_partial=partial, measured_report=job.report,
                           context=before, prelaunch=compiling)

        try:
            return await loop.run_in_executor(self._pool, run)
        finally:
            job.in_executor = False
            self.stats.running -= 1

    def _emit(self, job: _Job, outcome: Outcome, started: float) -> None:
        if job.cancelled and outcome.cancelled is None:
            return  # superseded while finishing: the newer job will publish
        if self._jobs.get(job.uri) is not job and outcome.cancelled is None:
            return
        outcome = replace(outcome, seconds=time.perf_counter() - started)
        job.last = outcome
        self._on_outcome(outcome)


def _file_identity(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:missing"  # analyze raises the ReportError; nothing is cached
    return f"{path.resolve()}:{st.st_mtime_ns}:{st.st_size}"


def _with_capture(path: Path, settings: Settings, cancel, catalog=None) -> AnalysisOptions:
    """The analysis options, with the launches the file's main() makes when capture is on (on only in
    a trusted workspace, whatever the setting's origin: settings.screen). `catalog`: the job's arch
    catalog (`application.arch_catalog`), which the analysis after it uses too."""
    # the second stage's runs go to worker processes only: a hover while they run needs this
    # process's interpreter, which a run here would hold for milliseconds at a time
    options = settings.analysis.model_copy(update={"budget": settings.analysis.budget.model_copy(
        update={"workers_only": True})})
    if not settings.capture.enabled:
        return options
    c = settings.capture
    outcome = application.capture_launches(path, options, argv=c.args, time_limit=c.timeout_s,
                                           launches_per_kernel=c.launches_per_kernel, cancel=cancel, catalog=catalog)
    if outcome.message:
        log.info("%s: %s", path.name, outcome.message)
    return outcome.options
