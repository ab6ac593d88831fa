// The status bar item: what the server is doing now, else what it last found.
// "Analysing" comes from the server's $/progress (one token per running analysis), so it is
// shown exactly while the server works, including analyses the user did not start.

import * as vscode from "vscode";

export type Kind = "modeled" | "measured" | "static" | string;

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly running = new Map<string, string>(); // progress token -> title
  private last: string | undefined;

  constructor(command: string) {
    this.item = vscode.window.createStatusBarItem("kernelscope.status", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "kernelscope";
    this.item.command = command;
    this.idle();
    this.item.show();
  }

  idle(): void {
    this.last = undefined;
    this.render();
  }

  starting(): void {
    this.setText("$(sync~spin) kernelscope: starting", "Starting the kernelscope language server");
  }

  failed(why: string): void {
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    this.item.text = "$(error) kernelscope: not running";
    this.item.tooltip = `${why}\nClick to open the kernelscope output.`;
  }

  progressBegin(token: string, title: string): void {
    this.running.set(token, title);
    this.render();
  }

  progressEnd(token: string): void {
    this.running.delete(token);
    this.render();
  }

  /** The outcome of one analysis (kernelscope/analysisFinished). */
  finished(findings: number, kind: Kind | undefined, file: string): void {
    const what = `${findings} finding${findings === 1 ? "" : "s"}`;
    this.last = kind ? `${what} (${kind})` : what;
    this.lastFile = file;
    this.render();
  }

  analysisFailed(file: string): void {
    this.last = "analysis failed";
    this.lastFile = file;
    this.render();
  }

  private lastFile = "";

  private render(): void {
    this.item.backgroundColor = undefined;
    if (this.running.size > 0) {
      const titles = [...this.running.values()];
      this.setText(`$(sync~spin) kernelscope: analysing${this.running.size > 1 ? ` (${this.running.size})` : ""}`,
        titles.join("\n"));
    } else if (this.last !== undefined) {
      this.setText(`kernelscope: ${this.last}`, `Last analysis: ${this.lastFile}`);
    } else {
      this.setText("kernelscope: idle", "kernelscope is running");
    }
  }

  private setText(text: string, tooltip: string): void {
    this.item.text = text;
    this.item.tooltip = `${tooltip}\nClick to open the kernelscope output.`;
  }

  dispose(): void {
    this.item.dispose();
  }
}
