// The palette commands. Each works on the active CUDA editor and asks the server; where the
// server lacks the command, it says what is missing and what to do meanwhile.

import * as path from "node:path";
import * as vscode from "vscode";
import { DidSaveTextDocumentNotification, LanguageClient } from "vscode-languageclient/node";
import { DOCUMENT_SELECTOR, SHOW_REPORT_UI } from "./client";
import { execute, hasCommand, ServerCommand } from "./protocol";
import type { ReportDocuments } from "./report";
import type { RooflinePanel } from "./roofline";

export const Command = {
  analyzeNow: "kernelscope.ui.analyzeNow",
  showRoofline: "kernelscope.ui.showRoofline",
  showReport: "kernelscope.ui.showReport",
  loadReport: "kernelscope.ui.loadReport",
  profileNow: "kernelscope.ui.profileNow",
  verifyAdvice: "kernelscope.ui.verifyAdvice",
  showOutput: "kernelscope.ui.showOutput",
  restartServer: "kernelscope.ui.restartServer",
} as const;

export interface Context {
  client(): LanguageClient | undefined;
  output: vscode.OutputChannel;
  reports: ReportDocuments;
  roofline: RooflinePanel;
  restart(): Promise<void>;
}

export function register(ctx: Context): vscode.Disposable[] {
  const on = (id: string, fn: (...args: any[]) => unknown) => vscode.commands.registerCommand(id, fn);
  return [
    on(Command.analyzeNow, () => analyzeNow(ctx)),
    on(Command.showRoofline, async () => {
      const doc = activeCuda();
      if (doc !== undefined) {
        await ctx.roofline.show(doc.uri);
      }
    }),
    on(Command.showReport, () => pickKernelReport(ctx)),
    on(SHOW_REPORT_UI, (uri: string, kernel: string) => showKernelReport(ctx, uri, kernel)),
    on(Command.loadReport, () => loadReport(ctx)),
    on(Command.profileNow, () => profileNow(ctx)),
    on(Command.verifyAdvice, () => verifyAdvice(ctx)),
    on(Command.showOutput, () => ctx.output.show(true)),
    on(Command.restartServer, () => ctx.restart()),
  ];
}

/** The CUDA document the user is working on: the active editor, else (focus is on the roofline
 * or a report) the visible CUDA editor. */
function activeCuda(): vscode.TextDocument | undefined {
  const isCuda = (doc: vscode.TextDocument) => vscode.languages.match(DOCUMENT_SELECTOR, doc) > 0;
  const active = vscode.window.activeTextEditor?.document;
  const doc = active !== undefined && isCuda(active)
    ? active
    : vscode.window.visibleTextEditors.map((e) => e.document).find(isCuda);
  if (doc === undefined) {
    void vscode.window.showWarningMessage("kernelscope: open a CUDA file (.cu) first.");
  }
  return doc;
}

function running(ctx: Context): LanguageClient | undefined {
  const client = ctx.client();
  if (client?.isRunning()) {
    return client;
  }
  void vscode.window.showErrorMessage("kernelscope: the language server is not running.", "Show Output")
    .then((a) => a && ctx.output.show());
  return undefined;
}

/** A server command that does not exist yet: say so once per use, with the workaround. */
function missing(command: string, meanwhile: string): void {
  void vscode.window.showWarningMessage(
    `kernelscope: this server has no "${command}" command yet (update kernelscope). ${meanwhile}`);
}

async function report(result: Promise<{ message?: string } | null>): Promise<void> {
  try {
    const r = await result;
    if (r?.message) {
      void vscode.window.showInformationMessage(`kernelscope: ${r.message}`);
    }
  } catch (e) {
    void vscode.window.showErrorMessage(`kernelscope: ${String(e)}`);
  }
}

async function analyzeNow(ctx: Context): Promise<void> {
  const doc = activeCuda();
  const client = doc && running(ctx);
  if (doc === undefined || client === undefined) {
    return;
  }
  if (hasCommand(client, ServerCommand.analyzeNow)) {
    await report(execute(client, ServerCommand.analyzeNow, [doc.uri.toString()]));
  } else if (doc.isDirty) {
    await doc.save(); // the server analyses on save
  } else {
    // Saving a clean file sends nothing; a didSave is exactly what the server analyses on.
    await client.sendNotification(DidSaveTextDocumentNotification.type, { textDocument: { uri: doc.uri.toString() } });
  }
}

async function pickKernelReport(ctx: Context): Promise<void> {
  const doc = activeCuda();
  if (doc === undefined || running(ctx) === undefined) {
    return;
  }
  // The lenses name every analysed kernel with its mangled name (the report's key).
  const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>("vscode.executeCodeLensProvider", doc.uri) ?? [];
  const kernels = lenses.filter((l) => l.command?.command === SHOW_REPORT_UI).map((l) => ({
    label: doc.lineAt(l.range.start.line).text.trim(),
    detail: l.command!.title,
    args: l.command!.arguments as [string, string],
  }));
  if (kernels.length === 0) {
    void vscode.window.showInformationMessage("kernelscope: no analysed kernels in this file yet.");
    return;
  }
  const pick = kernels.length === 1 ? kernels[0] : await vscode.window.showQuickPick(kernels, { placeHolder: "Kernel" });
  if (pick !== undefined) {
    await showKernelReport(ctx, ...pick.args);
  }
}

async function showKernelReport(ctx: Context, uri: string, kernel: string): Promise<void> {
  const client = running(ctx);
  if (client === undefined) {
    return;
  }
  const md = await execute<string>(client, ServerCommand.showReport, [uri, kernel]);
  if (!md) {
    void vscode.window.showInformationMessage("kernelscope: no report for this kernel (the file changed?).");
    return;
  }
  const name = md.match(/^#+\s*`?([A-Za-z_][\w]*)/m)?.[1] ?? "kernel";
  await ctx.reports.show(`${path.basename(vscode.Uri.parse(uri).fsPath)} ${name}`, md);
}

async function loadReport(ctx: Context): Promise<void> {
  const doc = activeCuda();
  const client = doc && running(ctx);
  if (doc === undefined || client === undefined) {
    return;
  }
  const picked = await vscode.window.showOpenDialog({
    canSelectMany: false, openLabel: "Load report", filters: { "Nsight Compute report": ["ncu-rep"] },
  });
  if (!picked?.length) {
    return;
  }
  if (!hasCommand(client, ServerCommand.loadReport)) {
    const cli = `kernelscope import "${picked[0].fsPath}" --source "${doc.uri.fsPath}"`;
    await vscode.env.clipboard.writeText(cli);
    missing(ServerCommand.loadReport, `Meanwhile the command line reads it: ${cli} (copied).`);
    return;
  }
  await report(execute(client, ServerCommand.loadReport, [doc.uri.toString(), picked[0].fsPath]));
}

/** Profiling runs the user's program: never in a workspace the user has not trusted. */
async function requireTrust(what: string): Promise<boolean> {
  if (vscode.workspace.isTrusted) {
    return true;
  }
  const action = await vscode.window.showErrorMessage(
    `kernelscope: ${what} runs your program, so it is disabled in an untrusted workspace.`, "Manage Workspace Trust");
  if (action !== undefined) {
    await vscode.commands.executeCommand("workbench.trust.manage");
  }
  return false;
}

async function profileNow(ctx: Context): Promise<void> {
  if (!(await requireTrust("Profile now"))) {
    return;
  }
  const doc = activeCuda();
  const client = doc && running(ctx);
  if (doc === undefined || client === undefined) {
    return;
  }
  if (!hasCommand(client, ServerCommand.profileNow)) {
    missing(ServerCommand.profileNow, "Meanwhile profile with ncu and use \"kernelscope: Load Nsight Compute Report\" (see docs/measured.md).");
    return;
  }
  await report(execute(client, ServerCommand.profileNow, [doc.uri.toString()]));
}

async function verifyAdvice(ctx: Context): Promise<void> {
  if (!(await requireTrust("Verify advice"))) {
    return;
  }
  const doc = activeCuda();
  const client = doc && running(ctx);
  if (doc === undefined || client === undefined) {
    return;
  }
  const editor = vscode.window.visibleTextEditors.find((e) => e.document === doc);
  const line = editor?.selection.active.line ?? 0;
  const advice = vscode.languages.getDiagnostics(doc.uri)
    .filter((d) => d.source === "kernelscope" && adviceId(d) !== undefined)
    .sort((a, b) => Math.abs(a.range.start.line - line) - Math.abs(b.range.start.line - line))
    .map((d) => ({ label: `line ${d.range.start.line + 1}: ${d.message.split("\n")[0]}`, id: adviceId(d)! }));
  if (advice.length === 0) {
    void vscode.window.showInformationMessage("kernelscope: no advice in this file to verify.");
    return;
  }
  const pick = await vscode.window.showQuickPick(advice, { placeHolder: "Advice to verify by measuring" });
  if (pick === undefined) {
    return;
  }
  if (!hasCommand(client, ServerCommand.verifyAdvice)) {
    missing(ServerCommand.verifyAdvice, "Meanwhile apply the fix, profile before and after with ncu, and compare (docs/measured.md).");
    return;
  }
  await report(execute(client, ServerCommand.verifyAdvice, [doc.uri.toString(), pick.id]));
}

function adviceId(d: vscode.Diagnostic): string | undefined {
  // vscode-languageclient keeps the LSP diagnostic's `data` on the converted diagnostic.
  const data = (d as { data?: { adviceId?: unknown } }).data;
  return typeof data?.adviceId === "string" ? data.adviceId : undefined;
}
