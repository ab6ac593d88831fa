// Kernel reports are Markdown from the server. They live in a read-only virtual document
// (no "save changes?" prompt on close) and open in VS Code's own Markdown preview.

import * as vscode from "vscode";

export const SCHEME = "kernelscope-report";

export class ReportDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /** Show `markdown` as `name`; the same name reuses (and refreshes) its document. */
  async show(name: string, markdown: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${name.replace(/[\\/:*?"<>|]/g, "_")}.md` });
    this.texts.set(uri.toString(), markdown);
    this.changed.fire(uri);
    try {
      await vscode.commands.executeCommand("markdown.showPreviewToSide", uri);
    } catch {
      // Without the built-in Markdown extension, the source is still readable.
      await vscode.window.showTextDocument(uri, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    }
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}
