import type { AuthCheck, AuthRefusal } from "./wire.js";

/** What the simulator remembers of the keys it was sent: the newest this many, for tests to assert on. */
const MAX_SEEN = 10_000;

/** An OpenAI-wire credential check that takes only the listed bearer keys, and remembers every key it was sent. */
export interface ExpectedKeyCheck {
  check(request: AuthCheck): AuthRefusal | undefined;
  /** Every key sent (the bearer token, or "" without one), oldest first; refused ones included. */
  seen(): readonly string[];
}

/**
 * OpenAI's answer to a key it does not know: 401 `invalid_api_key`. Off
 * unless the simulator is started with `acceptKeys`, so the wire suites
 * need no key; on, it lets a test see which key a gateway sent and what it
 * does with a refusal (provider keys rotated at run time).
 */
export function expectedKeyCheck(accepted: readonly string[]): ExpectedKeyCheck {
  const seen: string[] = [];
  return {
    check(request) {
      const header = request.headers.authorization;
      const value = typeof header === "string" && header.startsWith("Bearer ") ? header.slice("Bearer ".length) : "";
      seen.push(value);
      if (seen.length > MAX_SEEN) seen.shift();
      return accepted.includes(value) ? undefined : { status: 401, message: "Incorrect API key provided" };
    },
    seen: () => [...seen],
  };
}
