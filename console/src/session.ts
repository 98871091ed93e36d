/**
 * Keys the page was given, kept for this tab only (sessionStorage): never
 * in localStorage, a cookie or a URL, never logged. The admin key unlocks
 * the live view; the API key, when the gateway requires one, is what the
 * playground calls with.
 */
export type KeyKind = "admin" | "api";

const NAMES: Record<KeyKind, string> = { admin: "sluice.adminKey", api: "sluice.apiKey" };

function storage(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

const memory = new Map<KeyKind, string>();

export function getKey(kind: KeyKind): string | undefined {
  return memory.get(kind) ?? storage()?.getItem(NAMES[kind]) ?? undefined;
}

export function setKey(kind: KeyKind, value: string | undefined): void {
  if (value === undefined || value === "") {
    memory.delete(kind);
    storage()?.removeItem(NAMES[kind]);
    return;
  }
  memory.set(kind, value);
  storage()?.setItem(NAMES[kind], value);
}
