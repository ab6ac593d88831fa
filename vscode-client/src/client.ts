// The LanguageClient and the three places where it needs kernelscope-specific glue.

import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";
import type { ServerCommand as Found } from "./discovery";
import { SECTION, ServerCommand } from "./protocol";
import { serverSettings } from "./serverSettings";
import type { StatusItem } from "./status";

/** Our VS Code command that shows a kernel report; code lenses are redirected to it. */
export const SHOW_REPORT_UI = "kernelscope.ui.showKernelReport";

export const DOCUMENT_SELECTOR = [
  // VS Code's built-in C++ grammar calls .cu/.cuh "cuda-cpp"; NVIDIA's Nsight extension says "cuda".
  { scheme: "file", language: "cuda-cpp" },
  { scheme: "file", language: "cuda" },
];

export function createClient(found: Found, output: vscode.LogOutputChannel, status: StatusItem): LanguageClient {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const serverOptions: ServerOptions = {
    command: found.command,
    args: found.args,
    // No `transport`: with TransportKind.stdio the client appends `--stdio`, which
    // `kernelscope serve` does not accept; without it the client still talks over stdio.
    options: { cwd: folder?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
    // The server reads settings from here before its first workspace/configuration reply,
    // and trust from here only.
    initializationOptions: {
      [SECTION]: serverSettings(plain(vscode.workspace.getConfiguration(SECTION))),
      workspaceTrusted: vscode.workspace.isTrusted,
    },
    middleware: {
      workspace: {
        // `kernelscope.server.*` and `kernelscope.trace.*` configure this extension; the
        // server's settings model rejects unknown keys, so they never reach it.
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) {
            return result;
          }
          return result.map((value, i) => params.items[i]?.section === SECTION ? serverSettings(value) : value);
        },
      },
      handleWorkDoneProgress: (token, params, next) => {
        const key = String(token);
        if (params.kind === "begin") {
          status.progressBegin(key, params.title);
        } else if (params.kind === "end") {
          status.progressEnd(key);
        }
        next(token, params);
      },
      // The server's lens command returns Markdown, which VS Code would drop on a click.
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        for (const lens of lenses ?? []) {
          if (lens.command?.command === ServerCommand.showReport) {
            lens.command = { ...lens.command, command: SHOW_REPORT_UI };
          }
        }
        return lenses;
      },
    },
  };
  return new LanguageClient("kernelscope", "kernelscope", serverOptions, clientOptions);
}

/** A WorkspaceConfiguration as plain JSON (it also carries get/has/inspect/update). */
function plain(cfg: vscode.WorkspaceConfiguration): unknown {
  return JSON.parse(JSON.stringify(cfg));
}
