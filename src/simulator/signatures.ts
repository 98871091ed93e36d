import { createHmac, randomBytes } from "node:crypto";

/**
 * The simulator's thinking signatures: an HMAC under a key made at start-up,
 * so a signature verifies only if this process issued it for exactly this
 * content. Tests can then tell a faithfully replayed turn from a rebuilt or
 * tampered one, the way Anthropic and Gemini do.
 */
const KEY = randomBytes(32);

function mac(kind: string, content: string): string {
  return createHmac("sha256", KEY).update(kind).update("\0").update(content).digest("base64url");
}

export function signThinking(text: string): string {
  return `sig.${mac("thinking", text)}`;
}

export function signRedacted(index: number): string {
  return `redacted.${index}.${mac("redacted", String(index))}`;
}

export function redactedIsValid(data: string): boolean {
  const match = /^redacted\.(\d+)\./.exec(data);
  return match !== null && signRedacted(Number(match[1])) === data;
}

/** A function call's signature binds its name and arguments (as a canonical JSON text). */
export function signCall(name: string, args: unknown): string {
  return `fcsig.${mac("call", `${name}\0${JSON.stringify(args ?? {})}`)}`;
}
