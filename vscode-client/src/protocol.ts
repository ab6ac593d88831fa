// The server's custom protocol, in one place. Server commands run through
// workspace/executeCommand; the ones marked "requested" do not exist in the server yet, and
// every caller checks `hasCommand` first so the extension says so instead of failing.

import type { LanguageClient } from "vscode-languageclient/node";
import { ExecuteCommandRequest } from "vscode-languageclient/node";

export const SECTION = "kernelscope";

/** Server commands (workspace/executeCommand). */
export const ServerCommand = {
  /** (uri, kernel) -> Markdown report; also the code lens command. */
  showReport: "kernelscope.showReport",
  /** (uri, adviceId) -> Markdown; the server also shows it as a message. */
  explain: "kernelscope.explain",
  /** requested: (uri) -> {svg, kind} | null, the file's rooflines as one SVG. */
  roofline: "kernelscope.roofline",
  /** requested: (uri) -> null; analyse now, results arrive as usual. */
  analyzeNow: "kernelscope.analyzeNow",
  /** requested: (uri, reportPath) -> {message}; attach an .ncu-rep to the file. */
  loadReport: "kernelscope.loadReport",
  /** requested: (uri) -> {message}; run the `profile` setting under ncu (trusted only). */
  profileNow: "kernelscope.profileNow",
  /** requested: (uri, adviceId) -> {message}; measure before/after the advice's fix. */
  verifyAdvice: "kernelscope.verifyAdvice",
} as const;

/** Notifications from the server. */
export const AnalysisFinished = "kernelscope/analysisFinished";

/** Notification to the server (requested): the user granted workspace trust. */
export const DidGrantWorkspaceTrust = "kernelscope/didGrantWorkspaceTrust";

export interface AnalysisFinishedParams {
  uri: string;
  reason?: string;
  seconds?: number;
  cache?: string;
  diagnostics?: number;
  cancelled?: string;
  error?: string;
  /** requested: "modeled" | "measured" | "static"; until then read from the diagnostics. */
  kind?: string;
}

export function hasCommand(client: LanguageClient | undefined, command: string): boolean {
  const cmds = client?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  return cmds.includes(command);
}

export async function execute<T>(client: LanguageClient, command: string, args: unknown[]): Promise<T | null> {
  return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T | null;
}
