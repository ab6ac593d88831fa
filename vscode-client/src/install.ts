// What a user sees when the server cannot start: the reason, and one click to the fix.

import * as vscode from "vscode";

/** Installing into the environment the server runs from; kernelscope is installed from a checkout. */
export const PIP_COMMAND = "python -m pip install /path/to/kernelscope";

export async function installHelp(context: vscode.ExtensionContext, output: vscode.OutputChannel,
  message: string): Promise<void> {
  const action = await vscode.window.showErrorMessage(message, "How to install", "Open Settings", "Show Output");
  if (action === "How to install") {
    // The extension's README (shipped in the .vsix) has the install steps and discovery order.
    const readme = vscode.Uri.joinPath(context.extensionUri, "README.md");
    try {
      await vscode.commands.executeCommand("markdown.showPreview", readme);
    } catch {
      output.appendLine(`Install kernelscope into a Python >= 3.10 environment: ${PIP_COMMAND}`);
      output.show();
    }
  } else if (action === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "kernelscope.server");
  } else if (action === "Show Output") {
    output.show();
  }
}
