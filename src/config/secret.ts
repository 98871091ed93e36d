import { inspect } from "node:util";

/**
 * A credential that cannot leak by accident: it prints, serializes and
 * inspects as "[redacted]". Only `reveal()` gives the value, and only the
 * code that builds an upstream request's headers calls it.
 */
export interface Secret {
  reveal(): string;
}

const REDACTED = "[redacted]";

export function createSecret(value: string): Secret {
  return {
    reveal: () => value,
    toString: () => REDACTED,
    toJSON: () => REDACTED,
    [inspect.custom]: () => REDACTED,
  } as Secret;
}
