// Entry point: wires discovery, the client, the status bar, commands and trust together.

import * as vscode from "vscode";
import { LanguageClient, State } from "vscode-languageclient/node";
import { createClient } from "./client";
import { Command, register } from "./commands";
import { discover } from "./discovery";
import { HeatDecorations } from "./heat";
import { AnalysisFinished, AnalysisFinishedParams, DidGrantWorkspaceTrust } from "./protocol";
import { ReportDocuments } from "./report";
import { RooflinePanel } from "./roofline";
import { StatusItem } from "./status";
import { installHelp } from "./install";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("kernelscope", { log: true });
  const status = new StatusItem(Command.showOutput);
  const reports = new ReportDocuments();
  const roofline = new RooflinePanel(() => client);
  const heat = new HeatDecorations(() => client,
    (level) => vscode.Uri.joinPath(context.extensionUri, "media", `heat-${level}.svg`));
  context.subscriptions.push(output, status, reports, roofline, heat);

  const start = async (): Promise<void> => {
    status.starting();
    const folder = vscode.workspace.workspaceFolders?.[0];
    const { found, tried } = await discover(folder);
    if (found === undefined) {
      status.failed("kernelscope server not found");
      output.appendLine(`kernelscope server not found. Tried:\n  ${tried.join("\n  ")}`);
      await installHelp(context, output, `kernelscope: no language server found (tried ${tried.length} places).`);
      return;
    }
    output.appendLine(`Starting ${found.command} ${found.args.join(" ")} (from ${found.source})`);
    const c = createClient(found, output, status);
    c.onNotification(AnalysisFinished, (p: AnalysisFinishedParams) => {
      const file = vscode.Uri.parse(p.uri).path.split("/").pop() ?? p.uri;
      if (p.error !== undefined) {
        status.analysisFailed(file);
      } else if (p.cancelled === undefined) {
        status.finished(p.diagnostics ?? 0, p.kind ?? kindFromDiagnostics(p.uri), file);
      }
      void roofline.analysisFinished(p.uri);
      void heat.analysisFinished(p.uri);
    });
    c.onDidChangeState((e) => {
      // After its restarts are used up the client stays stopped: say so where the user looks.
      if (e.newState === State.Stopped && client === c) {
        status.failed("The kernelscope server stopped; see the output, then run kernelscope: Restart Server.");
      }
    });
    try {
      await c.start();
      client = c;
      status.idle();
    } catch (e) {
      status.failed(String(e));
      await c.dispose().catch(() => undefined);
      await installHelp(context, output,
        `kernelscope: the language server (${found.command}, from ${found.source}) failed to start: ${String(e)}`);
    }
  };

  const restart = async (): Promise<void> => {
    const old = client;
    client = undefined;
    await old?.stop().catch(() => undefined);
    await start();
  };

  context.subscriptions.push(
    ...register({ client: () => client, output, reports, roofline, restart }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      // The server keeps workspace-file commands (profile, nvccPath) inert until it hears this.
      void client?.sendNotification(DidGrantWorkspaceTrust, { workspaceTrusted: true });
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("kernelscope.server")) {
        void restart(); // a different server binary: the running one cannot switch
      }
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

/** Advice messages start with their provenance, e.g. "[modeled] ...". */
function kindFromDiagnostics(uri: string): string | undefined {
  for (const d of vscode.languages.getDiagnostics(vscode.Uri.parse(uri))) {
    const m = d.source === "kernelscope" ? /^\[(\w+)\]/.exec(d.message) : null;
    if (m) {
      return m[1];
    }
  }
  return undefined;
}
