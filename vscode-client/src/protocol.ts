// The server's custom protocol, in one place (server/app.py documents the server side). Server
// commands run through workspace/executeCommand; every caller checks `hasCommand` first, so an
// older server gets a clear message instead of a failure.

import type { LanguageClient } from "vscode-languageclient/node";
import { ExecuteCommandRequest } from "vscode-languageclient/node";

export const SECTION = "kernelscope";

/** Server commands (workspace/executeCommand). */
export const ServerCommand = {
  /** (uri, kernel) -> Markdown report; also the code lens command. */
  showReport: "kernelscope.showReport",
  /** (uri, adviceId) -> Markdown; the server also shows it as a message. */
  explain: "kernelscope.explain",
  /** (uri) -> {svg, kind, device, kernels}: the file's rooflines as one SVG. */
  roofline: "kernelscope.roofline",
  /** (uri, {noCache?}) -> {scheduled}; analyse now, results arrive as usual. */
  analyzeNow: "kernelscope.analyzeNow",
  /** (uri, reportPath) -> {ok, message | error}; attach an .ncu-rep to the file. */
  loadReport: "kernelscope.loadReport",
  /** (uri) -> {ok, message | error, refused?}; run the `profile` setting under ncu (trusted only). */
  profileNow: "kernelscope.profileNow",
  /** (uri, adviceId) -> the verification (re-modeled fix) as JSON, or null. */
  verifyAdvice: "kernelscope.verifyAdvice",
  /** (uri) -> {kind, lines: [{line, share, reason, kernel}]}: hot lines for the heat decoration. */
  lineHeat: "kernelscope.lineHeat",
} as const;

/** Notifications from the server. */
export const AnalysisFinished = "kernelscope/analysisFinished";

/** Notification to the server: the user granted workspace trust. */
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
