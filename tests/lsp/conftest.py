"""End-to-end fixtures: the real server over stdio (pytest-lsp's client), real nvcc compiles.

`lsp` starts sessions: `async with lsp(settings=..., encoding="utf-16") as s:`. Each test
gets its own workspace folder (copies of tests/data/lsp) and its own cache folder, so
tests never share results. `s.finished` collects `kernelscope/analysisFinished`
notifications, which say whether a result came from the cache and how many compiles ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

DATA = Path(__file__).resolve().parents[1] / "data" / "lsp"
#: generous: the first compile on a cold machine may take a while
TIMEOUT = float(os.environ.get("KERNELSCOPE_TEST_TIMEOUT", "120"))


def server_command() -> list[str]:
    return [sys.executable, "-m", "kernelscope.server"]


class Session:
    def __init__(self, client: LanguageClient, root: Path):
        self.client = client
        self.root = root
        self.finished: list[dict[str, Any]] = []
        self.versions: dict[str, int] = {}
        self.refreshes: list[str] = []  # workspace/codeLens/refresh and inlayHint/refresh, in order

    # -- notifications ----------------------------------------------------------------------

    def _on_finished(self, params: Any) -> None:
        self.finished.append(_plain(params))

    async def wait_finished(self, uri: str, after: int, timeout: float = TIMEOUT, *,
                            final: bool = True) -> dict[str, Any]:
        """The first analysisFinished for `uri` among those received after the first `after`;
        with `final`, cancelled (superseded) runs and quick (partial) results are skipped."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for f in self.finished[after:]:
                if f.get("uri") == uri and not (final and ("cancelled" in f or f.get("depth") == "quick")):
                    return f
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"no kernelscope/analysisFinished for {uri}; log: {self.log_text()}")
            await asyncio.sleep(0.01)

    async def published(self, timeout: float = 30) -> None:
        """Wait for the next textDocument/publishDiagnostics."""
        await asyncio.wait_for(self.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), timeout)

    def log_text(self) -> str:
        return "\n".join(m.message for m in self.client.log_messages[-30:])

    # -- documents --------------------------------------------------------------------------

    def uri(self, name: str) -> str:
        return from_fs_path(str(self.root / name))  # type: ignore[return-value]

    def text(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8")

    async def open(self, name: str, *, wait: bool = True) -> dict[str, Any] | None:
        uri = self.uri(name)
        n = len(self.finished)
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="cuda", version=1, text=self.text(name))))
        return await self.wait_finished(uri, n) if wait else None

    def change(self, name: str, *changes: types.TextDocumentContentChangeEvent) -> None:
        uri = self.uri(name)
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=list(changes)))

    async def save(self, name: str, text: str | None = None, *, wait: bool = True) -> dict[str, Any] | None:
        """Write `text` (if given) to disk, as an editor does, then send didSave."""
        if text is not None:
            (self.root / name).write_text(text, encoding="utf-8")
        uri = self.uri(name)
        n = len(self.finished)
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        return await self.wait_finished(uri, n) if wait else None

    def close(self, name: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri(name))))

    def diagnostics(self, name: str) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(self.uri(name), []))

    async def hover(self, name: str, line: int, character: int) -> types.Hover | None:
        return await self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri(name)),
            position=types.Position(line=line, character=character)))

    async def stats(self) -> dict[str, Any]:
        return _plain(await self.client.protocol.send_request_async("kernelscope/stats", {}))


def _plain(obj: Any) -> Any:
    """pygls hands custom payloads over as namedtuple-like objects; tests want dicts."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if hasattr(obj, "_asdict"):
        return {k: _plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def capabilities(kind: str = "visual-studio-code", encoding: str | None = None,
                 snippets: bool | None = None) -> types.ClientCapabilities:
    caps = client_capabilities(kind)
    if encoding is not None:
        caps.general = caps.general or types.GeneralClientCapabilities()
        caps.general.position_encodings = [types.PositionEncodingKind(encoding)]
    if snippets is not None and caps.workspace and caps.workspace.workspace_edit:
        caps.workspace.workspace_edit.snippet_edit_support = snippets
    return caps


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(DATA, root)
    return root


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


#: the sessions' settings are the user's own, so they say that they trust the workspace: in an
#: untrusted one the editor's cache.directory (each test's own cache) would be set aside. A test of
#: an untrusted workspace passes init_options None (a client that says nothing) or workspaceTrusted false.
TRUSTED = {"workspaceTrusted": True}
CAPTURE_OFF = {"enabled": False}


@pytest.fixture
def lsp(workspace: Path, cache_dir: Path):
    """Factory of sessions against the real server; every session is shut down at the end."""

    @contextlib.asynccontextmanager
    async def start(settings: dict[str, Any] | None = None, *, kind: str = "visual-studio-code",
                    encoding: str | None = None, snippets: bool | None = None,
                    root: Path | None = None, init_options: Any = TRUSTED, config_delay: float = 0.0,
                    capture: dict[str, Any] | None = CAPTURE_OFF):
        root = root or workspace
        # capture is on by default in a trusted workspace; a test that is not about it keeps the
        # launches the source gives (a test about it passes its own `capture`, or capture=None to
        # leave it to the defaults and the workspace's files)
        config = {"cache": {"directory": str(cache_dir)}, **({"capture": capture} if capture is not None else {}),
                  **(settings or {})}
        sessions: list[Session] = []

        async def slow_configuration(client: LanguageClient, params: types.ConfigurationParams):
            await asyncio.sleep(config_delay)
            return [client.get_configuration(section=i.section, scope_uri=i.scope_uri) for i in params.items]

        def factory() -> LanguageClient:
            client = LanguageClient(converter_factory=default_converter)
            features = dict(DEFAULT_CLIENT_FEATURES)
            if config_delay:
                features[types.WORKSPACE_CONFIGURATION] = slow_configuration
            # Requests VS Code answers and pytest-lsp's client does not implement.
            features[types.CLIENT_REGISTER_CAPABILITY] = lambda ls, params: None
            features[types.WORKSPACE_CODE_LENS_REFRESH] = lambda ls, params: session.refreshes.append("codeLens")
            features[types.WORKSPACE_INLAY_HINT_REFRESH] = lambda ls, params: session.refreshes.append("inlayHint")
            register_lsp_features(client, features)
            session = Session(client, root)
            sessions.append(session)
            client.feature("kernelscope/analysisFinished")(lambda ls, params: session._on_finished(params))
            return client

        client = await ClientServerConfig(server_command=server_command(), client_factory=factory).start()
        session = sessions[0]
        client.set_configuration(config, section="kernelscope")
        await client.initialize_session(types.InitializeParams(
            capabilities=capabilities(kind, encoding, snippets), root_uri=from_fs_path(str(root)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")],
            initialization_options=init_options))
        try:
            yield session
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_session(), 30)
            await client.stop()

    return start
