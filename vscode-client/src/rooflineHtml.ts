// The roofline webview's HTML, kept free of `vscode` imports so it can be unit tested.
// The page runs no script at all; the CSP still names a nonce for the one <style> element,
// so nothing the SVG might carry (inline styles, scripts, remote images) is applied.

import { randomBytes } from "node:crypto";

export type RooflineView =
  | { state: "svg"; file: string; svg: string; kind?: string }
  | { state: "message"; file: string; message: string };

export function nonce(): string {
  return randomBytes(16).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

export function csp(n: string): string {
  return `default-src 'none'; style-src 'nonce-${n}'; img-src data:; font-src 'none'; script-src 'none'`;
}

export function rooflineHtml(view: RooflineView, n: string = nonce()): string {
  const body = view.state === "svg"
    ? `<div class="chart">${stripActive(view.svg)}</div>` +
      (view.kind ? `<p class="kind">${escape(view.kind)} profile</p>` : "")
    : `<p class="message">${escape(view.message)}</p>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp(n)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Roofline</title>
<style nonce="${n}">
  body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1em; }
  /* The SVG draws dark ink on no background: give it a light card in every theme. */
  .chart { background: #fff; display: inline-block; padding: 8px; border-radius: 4px; }
  .chart svg { max-width: 100%; height: auto; }
  .kind, .message { color: var(--vscode-descriptionForeground); }
</style>
</head>
<body>
<h3>Roofline: ${escape(view.file)}</h3>
${body}
</body>
</html>`;
}

/** Defence in depth: the CSP already blocks scripts, but a <script> or on* handler has no place in a chart. */
export function stripActive(svg: string): string {
  return svg
    .replace(/<\?xml[^>]*\?>/g, "")
    .replace(/<script[\s\S]*?<\/script>/gi, "")
    .replace(/\son[a-z]+\s*=\s*("[^"]*"|'[^']*')/gi, "");
}

export function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
