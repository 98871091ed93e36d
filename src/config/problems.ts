import type { z } from "zod";
import { catalogForInput, catalogRefProblems } from "./catalog-file.js";
import { isRecord } from "./check-input.js";
import { complianceProblems } from "./compliance-checks.js";
import type { ConfigProblem } from "./config-problem.js";
import { environmentProblems } from "./environment-checks.js";
import { mcpProblems } from "./mcp-checks.js";
import { mcpGrantProblems } from "./mcp-grant-checks.js";
import type { ModelCatalog } from "./model-catalog.js";
import { referenceProblems, thinkingProblems } from "./routing-checks.js";
import { type ConfigFile, configSchema } from "./schema.js";
import { consoleProblems, hierarchyProblems, keyProblems } from "./tenancy-checks.js";
import { readTlsFiles, type TlsCredentials } from "./tls-files.js";

export { type ConfigProblem, formatPath } from "./config-problem.js";

/** zod's issues, one problem each; an unknown key is named by its own path. */
function schemaProblems(issues: readonly z.core.$ZodIssue[]): ConfigProblem[] {
  return issues.flatMap((issue) => (issue.code === "unrecognized_keys" ? issue.keys.map((key) => ({ path: [...issue.path, key], message: "unknown key" })) : [{ path: issue.path, message: issue.message }]));
}

/** The TLS files, read when their names are there (whatever else is wrong), so their problems come in the same report. */
function tlsFiles(input: unknown): { readonly credentials?: TlsCredentials; readonly problems: readonly ConfigProblem[] } {
  const tls = isRecord(input) && isRecord(input.server) ? input.server.tls : undefined;
  if (!isRecord(tls) || typeof tls.certFile !== "string" || typeof tls.keyFile !== "string") return { problems: [] };
  const clientCaFile = typeof tls.clientCaFile === "string" ? tls.clientCaFile : undefined;
  return readTlsFiles({ certFile: tls.certFile, keyFile: tls.keyFile, ...(clientCaFile !== undefined ? { clientCaFile } : {}) });
}

/**
 * The checks across fields and against the environment, each kept beside
 * its feature's words; in this order in the report when no line numbers
 * are known.
 */
const CROSS_FIELD_CHECKS: readonly ((input: unknown, env: NodeJS.ProcessEnv) => ConfigProblem[])[] = [
  referenceProblems,
  thinkingProblems,
  environmentProblems,
  keyProblems,
  hierarchyProblems,
  complianceProblems,
  consoleProblems,
  mcpGrantProblems,
  mcpProblems,
];

export interface CheckedConfig {
  /** The validated file; only when there is no problem at all. */
  readonly file?: ConfigFile;
  /** The listener's TLS material, when the file asks for TLS. */
  readonly tls?: TlsCredentials;
  /** The model catalog in force: the built-in one, with the operator's file over it. */
  readonly catalog?: ModelCatalog;
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
  const catalog = catalogForInput(input);
  const problems = [
    ...(parsed.success ? [] : schemaProblems(parsed.error.issues)),
    ...CROSS_FIELD_CHECKS.flatMap((check) => check(input, env)),
    ...tls.problems,
    ...catalog.problems,
    ...(catalog.catalog ? catalogRefProblems(input, catalog.catalog) : []),
  ];
  if (problems.length > 0 || !parsed.success || !catalog.catalog) return { problems };
  return { file: parsed.data, ...(tls.credentials ? { tls: tls.credentials } : {}), catalog: catalog.catalog, problems };
}
