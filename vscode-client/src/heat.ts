// The optional heat decoration (`kernelscope.heat.style`): hot lines shaded in the gutter or
// across the line, from the server's `kernelscope.lineHeat`. Refreshed on every finished
// analysis of a visible file; between analyses VS Code moves the decorations with the edits.

import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { DOCUMENT_SELECTOR } from "./client";
import { backgroundColor, byLevel, HeatLine, HeatStyle, HEAT_STYLES, LEVEL_FLOORS, rulerColor } from "./heatLevels";
import { execute, hasCommand, SECTION, ServerCommand } from "./protocol";

interface LineHeatResult {
  kind: string;
  lines: HeatLine[];
}

export class HeatDecorations implements vscode.Disposable {
  private style: HeatStyle = "off";
  private types: vscode.TextEditorDecorationType[] = [];
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly client: () => LanguageClient | undefined,
              private readonly icon: (level: number) => vscode.Uri) {
    this.configure();
    this.subscriptions = [
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SECTION}.heat`)) {
          this.configure();
          void this.refreshVisible();
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => void this.refreshVisible()),
    ];
  }

  /** Called on every kernelscope/analysisFinished. */
  async analysisFinished(uri: string): Promise<void> {
    const target = vscode.Uri.parse(uri).toString();
    await Promise.all(vscode.window.visibleTextEditors
      .filter((e) => e.document.uri.toString() === target)
      .map((e) => this.refresh(e)));
  }

  private configure(): void {
    const wanted = vscode.workspace.getConfiguration(SECTION).get<string>("heat.style", "off");
    this.style = (HEAT_STYLES as readonly string[]).includes(wanted) ? wanted as HeatStyle : "off";
    this.types.forEach((t) => t.dispose()); // also clears them from every editor
    this.types = this.style === "off" ? [] : LEVEL_FLOORS.map((_, level) => vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      ...(this.style === "gutter"
        ? { gutterIconPath: this.icon(level), gutterIconSize: "contain" }
        : { backgroundColor: backgroundColor(level) }),
      ...(rulerColor(level) ? { overviewRulerColor: rulerColor(level), overviewRulerLane: vscode.OverviewRulerLane.Left } : {}),
    }));
  }

  private async refreshVisible(): Promise<void> {
    await Promise.all(vscode.window.visibleTextEditors.map((e) => this.refresh(e)));
  }

  private async refresh(editor: vscode.TextEditor): Promise<void> {
    if (this.types.length === 0 || vscode.languages.match(DOCUMENT_SELECTOR, editor.document) === 0) {
      return;
    }
    const client = this.client();
    if (client === undefined || !client.isRunning() || !hasCommand(client, ServerCommand.lineHeat)) {
      return; // an older server: no heat, everything else works
    }
    let result: LineHeatResult | null;
    try {
      result = await execute<LineHeatResult>(client, ServerCommand.lineHeat, [editor.document.uri.toString()]);
    } catch {
      return; // the file closed or the server restarted meanwhile; the next analysis refreshes
    }
    const types = this.types; // a setting change meanwhile made new ones, which refresh themselves
    byLevel(result?.lines ?? []).forEach((lines, level) => {
      editor.setDecorations(types[level], lines
        .filter((l) => l.line < editor.document.lineCount)
        .map((l) => editor.document.lineAt(l.line).range));
    });
  }

  dispose(): void {
    this.subscriptions.forEach((s) => s.dispose());
    this.types.forEach((t) => t.dispose());
  }
}
