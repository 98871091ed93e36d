import { isRecord } from "./check-input.js";
import type { ConfigProblem } from "./config-problem.js";
import { sha256Hex } from "./key-hash.js";

/**
 * Virtual keys that name an alias the file does not define, share a name
 * with another key, or are the same key as another (same variable value or
 * hash): a key must identify exactly one tenant.
 */
export function keyProblems(input: unknown, env: NodeJS.ProcessEnv): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.auth) || !Array.isArray(input.auth.keys)) return [];
  const models = isRecord(input.models) ? input.models : {};
  const names = new Map<string, number>();
  const hashes = new Map<string, number>();
  const problems: ConfigProblem[] = [];
  input.auth.keys.forEach((key: unknown, i) => {
    if (!isRecord(key)) return;
    if (Array.isArray(key.models)) {
      key.models.forEach((alias: unknown, j) => {
        if (typeof alias === "string" && !Object.hasOwn(models, alias)) problems.push({ path: ["auth", "keys", i, "models", j], message: `unknown model alias "${alias}"` });
      });
    }
    if (typeof key.name === "string") {
      const first = names.get(key.name);
      if (first !== undefined) problems.push({ path: ["auth", "keys", i, "name"], message: `duplicate key name "${key.name}" (also auth.keys.${first})` });
      else names.set(key.name, i);
    }
    const value = typeof key.keyEnv === "string" ? env[key.keyEnv] : undefined;
    const hash = typeof key.sha256 === "string" ? key.sha256.toLowerCase() : value ? sha256Hex(value) : undefined;
    if (hash !== undefined) {
      const first = hashes.get(hash);
      if (first !== undefined) problems.push({ path: ["auth", "keys", i], message: `the same key as auth.keys.${first}` });
      else hashes.set(hash, i);
    }
  });
  return problems;
}

/**
 * Teams and business lines: names unique within their kind, every team's
 * business line and every key's team defined in the same file (a key
 * whose team is missing would escape the team's budget).
 */
export function hierarchyProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.auth)) return [];
  const { auth } = input;
  const problems: ConfigProblem[] = [];
  const namesOf = (list: unknown, path: string): Set<string> => {
    const names = new Map<string, number>();
    // Two levels under one id would share their counters and spend: an id (its name when none is given) is one level's.
    const ids = new Map<string, number>();
    if (Array.isArray(list)) {
      list.forEach((item: unknown, i) => {
        if (!isRecord(item) || typeof item.name !== "string") return;
        const first = names.get(item.name);
        if (first !== undefined) problems.push({ path: ["auth", path, i, "name"], message: `duplicate name "${item.name}" (also auth.${path}.${first})` });
        else names.set(item.name, i);
        const id = typeof item.id === "string" ? item.id : item.name;
        const firstId = ids.get(id);
        if (firstId !== undefined && first === undefined)
          problems.push({ path: ["auth", path, i, typeof item.id === "string" ? "id" : "name"], message: `id "${id}" is also auth.${path}.${firstId}'s (a level's id is its name when it has no id)` });
        else if (firstId === undefined) ids.set(id, i);
      });
    }
    return new Set(names.keys());
  };
  const lines = namesOf(auth.businessLines, "businessLines");
  const teams = namesOf(auth.teams, "teams");
  const refs = (list: unknown, path: string, field: string, known: Set<string>, what: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((item: unknown, i) => {
      if (isRecord(item) && typeof item[field] === "string" && !known.has(item[field])) problems.push({ path: ["auth", path, i, field], message: `unknown ${what} "${item[field]}"` });
    });
  };
  refs(auth.teams, "teams", "businessLine", lines, "business line");
  refs(auth.keys, "keys", "team", teams, "team");
  return problems;
}

/** A console protected by the admin key needs an admin key. */
export function consoleProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.console) || input.console.access !== "admin") return [];
  const auth = isRecord(input.auth) ? input.auth : {};
  return auth.adminKeyEnv === undefined ? [{ path: ["console", "access"], message: "admin needs auth.adminKeyEnv (the key the console asks for)" }] : [];
}
