// What of the `kernelscope` configuration section the server may see. Kept free of `vscode`
// imports so it can be unit tested.

/** Extension-only keys under `kernelscope`; the server's settings model forbids unknown keys. */
export const CLIENT_ONLY_KEYS = ["server", "trace", "heat"];

export function serverSettings(section: unknown): unknown {
  if (section === null || typeof section !== "object" || Array.isArray(section)) {
    return section;
  }
  const copy: Record<string, unknown> = { ...(section as Record<string, unknown>) };
  for (const k of CLIENT_ONLY_KEYS) {
    delete copy[k];
  }
  return copy;
}
