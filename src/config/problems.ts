import type { z } from "zod";
import { configSchema, type ConfigFile } from "./schema.js";
import { sha256Hex } from "./key-hash.js";
import { readTlsFiles, type TlsCredentials } from "./tls-files.js";
import type { ConfigProblem } from "./config-problem.js";
import { PII_KINDS } from "./pii-kinds.js";

export { type ConfigProblem, formatPath } from "./config-problem.js";

/** zod's issues, one problem each; an unknown key is named by its own path. */
function schemaProblems(issues: readonly z.core.$ZodIssue[]): ConfigProblem[] {
  return issues.flatMap((issue) =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((key) => ({ path: [...issue.path, key], message: "unknown key" }))
      : [{ path: issue.path, message: issue.message }],
  );
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The provider names an alias refers to, with where: its inline `provider` or each of its `targets`. */
function providerRefs(alias: string, model: Record<string, unknown>): Array<{ provider: unknown; path: PropertyKey[] }> {
  if (Array.isArray(model.targets)) {
    return model.targets.map((target: unknown, i) => ({ provider: isRecord(target) ? target.provider : undefined, path: ["models", alias, "targets", i, "provider"] }));
  }
  return [{ provider: model.provider, path: ["models", alias, "provider"] }];
}

/**
 * Aliases that name a provider the file does not define. Read from the
 * input as written, so it is reported in the same run as any schema
 * problem (a zod refinement runs only once everything else is valid).
 */
function referenceProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.models)) return [];
  const providers = isRecord(input.providers) ? input.providers : {};
  return Object.entries(input.models).flatMap(([alias, model]) =>
    isRecord(model)
      ? providerRefs(alias, model).flatMap(({ provider, path }) =>
          typeof provider === "string" && provider !== "" && !Object.hasOwn(providers, provider) ? [{ path, message: `unknown provider "${provider}"` }] : [],
        )
      : [],
  );
}

/**
 * `thinking` set where no Anthropic request will read it: on a provider of
 * another kind, or on a target whose provider is one. Read from the input
 * as written, like the references above, so it comes in the same report.
 */
function thinkingProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input)) return [];
  const providers = isRecord(input.providers) ? input.providers : {};
  const kindOf = (name: unknown): unknown => {
    const provider = typeof name === "string" && Object.hasOwn(providers, name) ? providers[name] : undefined;
    return isRecord(provider) ? provider.kind : undefined;
  };
  const notAnthropic = (kind: unknown) => typeof kind === "string" && kind !== "anthropic";
  const problems: ConfigProblem[] = [];
  for (const [name, provider] of Object.entries(providers)) {
    if (isRecord(provider) && provider.thinking !== undefined && notAnthropic(provider.kind)) {
      problems.push({ path: ["providers", name, "thinking"], message: `only for providers of kind anthropic (this one is ${String(provider.kind)})` });
    }
  }
  const models = isRecord(input.models) ? input.models : {};
  for (const [alias, model] of Object.entries(models)) {
    if (!isRecord(model) || !Array.isArray(model.targets)) continue;
    model.targets.forEach((target: unknown, i) => {
      if (!isRecord(target) || target.thinking === undefined) return;
      const kind = kindOf(target.provider);
      if (notAnthropic(kind)) {
        problems.push({ path: ["models", alias, "targets", i, "thinking"], message: `only for targets on an anthropic provider ("${String(target.provider)}" is ${String(kind)})` });
      }
    });
  }
  return problems;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Shortest virtual or admin key accepted from the environment: anything shorter can be guessed. */
export const MIN_KEY_CHARS = 16;

/** A key variable that is unset (or, for virtual and admin keys, too short to be a secret). */
function variableProblem(variable: unknown, env: NodeJS.ProcessEnv, path: PropertyKey[], minChars = 1): ConfigProblem[] {
  if (typeof variable !== "string" || !ENV_NAME.test(variable)) return [];
  const value = env[variable];
  if (value === undefined || value === "") return [{ path, message: `environment variable ${variable} is not set` }];
  // The message names the variable and the rule, never the value.
  if (value.length < minChars) return [{ path, message: `environment variable ${variable} holds a key shorter than ${minChars} characters` }];
  return [];
}

/** Every key variable that is unset, not only the first: providers', virtual keys' and the admin key's. */
function environmentProblems(input: unknown, env: NodeJS.ProcessEnv): ConfigProblem[] {
  if (!isRecord(input)) return [];
  const providers = isRecord(input.providers)
    ? Object.entries(input.providers).flatMap(([name, provider]) =>
        variableProblem(isRecord(provider) ? provider.apiKeyEnv : undefined, env, ["providers", name, "apiKeyEnv"]),
      )
    : [];
  const auth = isRecord(input.auth) ? input.auth : {};
  const keys = Array.isArray(auth.keys)
    ? auth.keys.flatMap((key: unknown, i) => variableProblem(isRecord(key) ? key.keyEnv : undefined, env, ["auth", "keys", i, "keyEnv"], MIN_KEY_CHARS))
    : [];
  const webhook = isRecord(input.alerts) && isRecord(input.alerts.webhook) ? input.alerts.webhook : {};
  return [
    ...providers,
    ...keys,
    ...variableProblem(auth.adminKeyEnv, env, ["auth", "adminKeyEnv"], MIN_KEY_CHARS),
    ...variableProblem(webhook.secretEnv, env, ["alerts", "webhook", "secretEnv"], MIN_KEY_CHARS),
  ];
}

/**
 * Virtual keys that name an alias the file does not define, share a name
 * with another key, or are the same key as another (same variable value or
 * hash): a key must identify exactly one tenant.
 */
function keyProblems(input: unknown, env: NodeJS.ProcessEnv): ConfigProblem[] {
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
function hierarchyProblems(input: unknown): ConfigProblem[] {
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
        if (firstId !== undefined && first === undefined) problems.push({ path: ["auth", path, i, typeof item.id === "string" ? "id" : "name"], message: `id "${id}" is also auth.${path}.${firstId}'s (a level's id is its name when it has no id)` });
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

/**
 * Every detector a PII policy names is a built-in one or a custom pattern
 * of compliance.patterns, and an alias that must stay local has a local
 * target: either mistake would otherwise show only on the first request.
 */
function complianceProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input)) return [];
  const problems: ConfigProblem[] = [];
  const compliance = isRecord(input.compliance) ? input.compliance : {};
  const known = new Set<string>(PII_KINDS);
  if (Array.isArray(compliance.patterns)) for (const p of compliance.patterns) if (isRecord(p) && typeof p.name === "string") known.add(p.name);
  const checkPolicy = (policy: unknown, path: readonly PropertyKey[]) => {
    if (!isRecord(policy) || !Array.isArray(policy.detectors)) return;
    policy.detectors.forEach((name: unknown, i) => {
      if (typeof name === "string" && !known.has(name)) problems.push({ path: [...path, "pii", "detectors", i], message: `unknown detector "${name}" (built in: ${PII_KINDS.join(", ")}; or a compliance.patterns name)` });
    });
  };
  const auth = isRecord(input.auth) ? input.auth : {};
  for (const list of ["keys", "teams"] as const) {
    const items = auth[list];
    if (Array.isArray(items)) items.forEach((item: unknown, i) => isRecord(item) && checkPolicy(item.pii, ["auth", list, i]));
  }
  const providers = isRecord(input.providers) ? input.providers : {};
  if (isRecord(input.models)) {
    for (const [alias, model] of Object.entries(input.models)) {
      if (!isRecord(model)) continue;
      checkPolicy(model.pii, ["models", alias]);
      const context = isRecord(model.context) ? model.context : undefined;
      if (context?.strategy === "summarize") {
        if (typeof context.summarizer !== "string") problems.push({ path: ["models", alias, "context", "summarizer"], message: "is required with strategy summarize" });
        else if (!isRecord(input.models) || !isRecord(input.models[context.summarizer])) problems.push({ path: ["models", alias, "context", "summarizer"], message: `unknown alias "${context.summarizer}"` });
        else if (context.summarizer === alias) problems.push({ path: ["models", alias, "context", "summarizer"], message: "cannot be the alias itself" });
      }
      const shadow = isRecord(model.shadow) ? model.shadow : undefined;
      if (shadow && typeof shadow.alias === "string") {
        if (!isRecord(input.models[shadow.alias])) problems.push({ path: ["models", alias, "shadow", "alias"], message: `unknown alias "${shadow.alias}"` });
        else if (shadow.alias === alias) problems.push({ path: ["models", alias, "shadow", "alias"], message: "cannot be the alias itself" });
      }
      if (shadow) {
        const keys = Array.isArray(auth.keys) ? auth.keys.filter(isRecord) : [];
        if (typeof shadow.key === "string" && !keys.some((k) => k.name === shadow.key)) problems.push({ path: ["models", alias, "shadow", "key"], message: `unknown key "${shadow.key}" (a configured key's name)` });
        else if (shadow.key === undefined && keys.length > 0) problems.push({ path: ["models", alias, "shadow", "key"], message: "is required when keys are configured: the key mirrored calls run as and are charged to" });
      }
      if (model.localOnly !== true) continue;
      const written = Array.isArray(model.targets) ? model.targets : [model];
      const providerLocal = (name: unknown) => {
        const provider = typeof name === "string" ? providers[name] : undefined;
        return isRecord(provider) && provider.local === true;
      };
      const local = written.some((t: unknown) => isRecord(t) && (t.local === undefined ? providerLocal(t.provider) : t.local === true));
      if (!local) problems.push({ path: ["models", alias, "localOnly"], message: "no target of this alias is local (targets[].local or providers.<name>.local)" });
    }
  }
  return problems;
}

/** A console protected by the admin key needs an admin key. */
function consoleProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.console) || input.console.access !== "admin") return [];
  const auth = isRecord(input.auth) ? input.auth : {};
  return auth.adminKeyEnv === undefined ? [{ path: ["console", "access"], message: "admin needs auth.adminKeyEnv (the key the console asks for)" }] : [];
}

/** The TLS files, read when their names are there (whatever else is wrong), so their problems come in the same report. */
function tlsFiles(input: unknown): { readonly credentials?: TlsCredentials; readonly problems: readonly ConfigProblem[] } {
  const tls = isRecord(input) && isRecord(input.server) ? input.server.tls : undefined;
  if (!isRecord(tls) || typeof tls.certFile !== "string" || typeof tls.keyFile !== "string") return { problems: [] };
  const clientCaFile = typeof tls.clientCaFile === "string" ? tls.clientCaFile : undefined;
  return readTlsFiles({ certFile: tls.certFile, keyFile: tls.keyFile, ...(clientCaFile !== undefined ? { clientCaFile } : {}) });
}

export interface CheckedConfig {
  /** The validated file; only when there is no problem at all. */
  readonly file?: ConfigFile;
  /** The listener's TLS material, when the file asks for TLS. */
  readonly tls?: TlsCredentials;
  readonly problems: readonly ConfigProblem[];
}

/**
 * Everything wrong with a configuration, in one pass: schema violations,
 * references to undefined providers, Anthropic settings on another kind,
 * unset key variables, unreadable or mismatched TLS files. Start-up and
 * `sluice check-config` share it, so a file that checks clean starts.
 */
export function checkConfig(input: unknown, env: NodeJS.ProcessEnv): CheckedConfig {
  const parsed = configSchema.safeParse(input);
  const tls = tlsFiles(input);
  const problems = [
    ...(parsed.success ? [] : schemaProblems(parsed.error.issues)),
    ...referenceProblems(input),
    ...thinkingProblems(input),
    ...environmentProblems(input, env),
    ...keyProblems(input, env),
    ...hierarchyProblems(input),
    ...complianceProblems(input),
    ...consoleProblems(input),
    ...tls.problems,
  ];
  if (problems.length > 0 || !parsed.success) return { problems };
  return { file: parsed.data, ...(tls.credentials ? { tls: tls.credentials } : {}), problems };
}
