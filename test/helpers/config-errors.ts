import { expect } from "vitest";
import { ConfigError, resolveConfig } from "../../src/config/config.js";

/** The report a configuration that must be refused produces; fails the test if it is accepted or fails otherwise. */
export function configErrors(input: unknown, env: NodeJS.ProcessEnv = {}): string {
  try {
    resolveConfig(input, env, "test.yaml");
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("expected a ConfigError");
}
