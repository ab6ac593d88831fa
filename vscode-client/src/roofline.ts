// One roofline panel, following one file: it re-asks the server whenever that file's
// analysis finishes, so the chart never shows a result the diagnostics have moved past.

import * as path from "node:path";
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { execute, hasCommand, ServerCommand } from "./protocol";
import { RooflineView, rooflineHtml } from "./rooflineHtml";

interface RooflineResult {
  svg: string;
  kind?: string;
}

export class RooflinePanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private uri: vscode.Uri | undefined;

  constructor(private readonly client: () => LanguageClient | undefined) {}

  async show(uri: vscode.Uri): Promise<void> {
    this.uri = uri;
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel("kernelscope.roofline", "Roofline", {
        viewColumn: vscode.ViewColumn.Beside, preserveFocus: true,
      }, { enableScripts: false, localResourceRoots: [] });
      this.panel.onDidDispose(() => { this.panel = undefined; });
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    await this.refresh();
  }

  /** Called on every kernelscope/analysisFinished. */
  async analysisFinished(uri: string): Promise<void> {
    if (this.panel !== undefined && this.uri?.toString() === vscode.Uri.parse(uri).toString()) {
      await this.refresh();
    }
  }

  private async refresh(): Promise<void> {
    if (this.panel === undefined || this.uri === undefined) {
      return;
    }
    const file = path.basename(this.uri.fsPath);
    this.panel.title = `Roofline: ${file}`;
    this.panel.webview.html = rooflineHtml(await this.view(this.uri, file));
  }

  private async view(uri: vscode.Uri, file: string): Promise<RooflineView> {
    const client = this.client();
    if (client === undefined || !client.isRunning()) {
      return { state: "message", file, message: "The kernelscope server is not running." };
    }
    if (!hasCommand(client, ServerCommand.roofline)) {
      return {
        state: "message", file,
        message: "This kernelscope server cannot send rooflines to editors yet (it has no " +
          `${ServerCommand.roofline} command). Meanwhile \`kernelscope analyze ${file} --html out.html\` ` +
          "writes a report with the roofline.",
      };
    }
    try {
      const result = await execute<RooflineResult>(client, ServerCommand.roofline, [uri.toString()]);
      if (result === null || !result.svg) {
        return { state: "message", file, message: "No roofline yet: the file has not been analysed, or has no kernels." };
      }
      return { state: "svg", file, svg: result.svg, kind: result.kind };
    } catch (e) {
      return { state: "message", file, message: `The server could not draw the roofline: ${String(e)}` };
    }
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
