// Where the server comes from, in a fixed order (the order ruff-vscode uses, minus bundling):
// 1. the user's explicit setting, 2. the Python extension's active environment, 3. PATH.
// Only the first that exists and can start the server is used; every attempt is recorded so a
// failure message can list what was tried.

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";

export interface ServerCommand {
  command: string;
  args: string[];
  /** how it was found, for the output channel and messages */
  source: string;
}

export interface Discovery {
  found?: ServerCommand;
  tried: string[];
}

const MODULE_ARGS = ["-m", "kernelscope.server"];

export async function discover(folder: vscode.WorkspaceFolder | undefined): Promise<Discovery> {
  const tried: string[] = [];
  const cfg = vscode.workspace.getConfiguration("kernelscope.server", folder);

  const explicit = expand(cfg.get<string>("path") ?? "", folder);
  if (explicit) {
    if (isExecutable(explicit)) {
      return { found: { command: explicit, args: ["serve"], source: "setting kernelscope.server.path" }, tried };
    }
    tried.push(`kernelscope.server.path = ${explicit} (not an executable file)`);
  }
  const interpreter = expand(cfg.get<string>("interpreter") ?? "", folder);
  if (interpreter) {
    const problem = await importsServer(interpreter);
    if (problem === undefined) {
      return { found: { command: interpreter, args: MODULE_ARGS, source: "setting kernelscope.server.interpreter" }, tried };
    }
    tried.push(`kernelscope.server.interpreter = ${interpreter} (${problem})`);
  }

  const python = await pythonExtensionInterpreter(folder);
  if (python !== undefined) {
    const problem = await importsServer(python);
    if (problem === undefined) {
      return { found: { command: python, args: MODULE_ARGS, source: "the Python extension's active environment" }, tried };
    }
    tried.push(`Python extension interpreter ${python} (${problem})`);
  } else {
    tried.push("Python extension (not installed or no active environment)");
  }

  const onPath = which("kernelscope");
  if (onPath !== undefined) {
    return { found: { command: onPath, args: ["serve"], source: "PATH" }, tried };
  }
  tried.push("`kernelscope` on PATH (not found)");
  return { tried };
}

/** The Python extension's active interpreter, through its public `environments` API. */
async function pythonExtensionInterpreter(folder: vscode.WorkspaceFolder | undefined): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (ext === undefined) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    if (envs === undefined) {
      return undefined;
    }
    const active = envs.getActiveEnvironmentPath(folder?.uri);
    // `path` may be an environment folder; resolving gives the interpreter itself.
    const resolved = await envs.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath ?? active?.path;
  } catch {
    return undefined; // an older Python extension without the API: fall through to PATH
  }
}

/** undefined when `python -m kernelscope.server` can work, else why not. */
function importsServer(python: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(python, ["-c", "import kernelscope.server.app"], { timeout: 30_000 }, (err, _out, stderr) => {
      if (err === null) {
        resolve(undefined);
      } else if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        resolve("no such interpreter");
      } else {
        const last = stderr.trim().split("\n").pop() ?? "";
        resolve(last.includes("No module named") ? "kernelscope is not installed in it" : last || String(err));
      }
    });
  });
}

export function expand(p: string, folder: vscode.WorkspaceFolder | undefined): string {
  let out = p.trim();
  if (out.startsWith("~/")) {
    out = path.join(os.homedir(), out.slice(2));
  }
  if (folder !== undefined) {
    out = out.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
  }
  return out;
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

export function which(name: string): string | undefined {
  const exts = process.platform === "win32" ? (process.env.PATHEXT ?? ".EXE").split(";") : [""];
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (dir && isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}
