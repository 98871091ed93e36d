import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { startSluice } from "../src/app.js";
import { readConfigFile, resolveConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { CHART, deployToolsInstalled, FULL_VALUES, helm, type K8sObject, one, render, schemaProblems } from "./helpers/helm-chart.js";

// deploy/helm/sluice, checked offline: helm lint and template (helm 3.17 from deploy/tools), every rendered object
// against the Kubernetes schemas, and the rendered configuration against the gateway itself. No cluster runs here.

const runFile = promisify(execFile);

interface Container {
  readonly name: string;
  readonly args?: string[];
  readonly ports?: { name: string; containerPort: number }[];
  readonly readinessProbe?: { httpGet: { path: string; port: string; scheme: string } };
  readonly livenessProbe?: { httpGet: { path: string; port: string; scheme: string } };
  readonly startupProbe?: { httpGet: { path: string; port: string } };
  readonly lifecycle?: { preStop: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  readonly securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
  readonly volumeMounts?: { name: string; mountPath: string }[];
  readonly envFrom?: { secretRef: { name: string } }[];
}
interface PodSpec {
  readonly terminationGracePeriodSeconds: number;
  readonly securityContext: { runAsNonRoot: boolean; runAsUser: number };
  readonly containers: Container[];
  readonly initContainers?: Container[];
  readonly volumes: { name: string; emptyDir?: unknown; configMap?: { name: string } }[];
}

const podSpec = (objects: readonly K8sObject[]): PodSpec => (one(objects, "Deployment").spec as { template: { spec: PodSpec } }).template.spec;
const podAnnotations = (objects: readonly K8sObject[]): Record<string, string> => (one(objects, "Deployment").spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations;
const gateway = (objects: readonly K8sObject[]): Container => podSpec(objects).containers.find((c) => c.name === "sluice")!;
const configOf = (objects: readonly K8sObject[]): Record<string, Record<string, unknown>> => parse((one(objects, "ConfigMap").data as Record<string, string>)["sluice.yaml"]!);
/** The chart's Secret decoded: the variables a pod gets. */
const secretEnv = (objects: readonly K8sObject[]): Record<string, string> =>
  Object.fromEntries(Object.entries((one(objects, "Secret").data as Record<string, string>) ?? {}).map(([name, value]) => [name, Buffer.from(value, "base64").toString("utf8")]));
/** Seconds the preStop hook holds the pod before SIGTERM, whichever handler renders it (the image has no `sleep`: node waits). */
function preStopSeconds(container: Container): number {
  const preStop = container.lifecycle!.preStop;
  if (preStop.sleep) return preStop.sleep.seconds;
  const [command, flag, script] = preStop.exec!.command;
  expect([command, flag]).toEqual(["node", "-e"]);
  return Number(/^setTimeout\(\(\) => \{\}, (\d+)\)$/.exec(script!)![1]) / 1000;
}

let defaults: K8sObject[];
let full: K8sObject[];
let scratch: string;

beforeAll(async () => {
  if (!deployToolsInstalled()) throw new Error("deploy/tools is not installed: npm ci --prefix deploy/tools (npm test installs it)");
  scratch = await mkdtemp(join(tmpdir(), "sluice-helm-"));
  [defaults, full] = await Promise.all([render(), render(["-f", FULL_VALUES])]);
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("the Helm chart (deploy/helm/sluice)", () => {
  it("passes helm lint --strict with the default values and with values-full.yaml, and its schema refuses a misspelt value", async () => {
    const [plain, withFull, misspelt] = await Promise.all([helm(["lint", "--strict", CHART]), helm(["lint", "--strict", CHART, "-f", FULL_VALUES]), helm(["lint", "--strict", CHART, "--set", "replicaCont=3"])]);
    expect(plain.stdout + plain.stderr).toContain("0 chart(s) failed");
    expect(plain.code).toBe(0);
    expect(withFull.code).toBe(0);
    expect(misspelt.code).not.toBe(0);
    expect(misspelt.stdout + misspelt.stderr).toContain("replicaCont");
  });

  it("renders only objects that are valid against the Kubernetes schemas (and the ServiceMonitor's)", async () => {
    expect(defaults.map((o) => o.kind).sort()).toEqual(["ConfigMap", "Deployment", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount"]);
    expect(full.map((o) => o.kind).sort()).toEqual(["ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Ingress", "PodDisruptionBudget", "Secret", "Service", "Service", "ServiceAccount", "ServiceMonitor"]);
    const problems = (await Promise.all([...defaults, ...full].map(schemaProblems))).flat();
    expect(problems).toEqual([]);
    // The check itself rejects a broken object: a port as a string.
    const broken = structuredClone(one(defaults, "Deployment")) as unknown as { spec: { template: { spec: PodSpec } } };
    (broken.spec.template.spec.containers[0]!.ports![0] as { containerPort: unknown }).containerPort = "8080";
    expect((await schemaProblems(broken as unknown as K8sObject)).join()).toContain("containerPort must be integer");
  });

  it("probes /readyz and /healthz on the port the configuration listens on, and the gateway started from that configuration answers both", async () => {
    const container = gateway(defaults);
    const port = container.ports!.find((p) => p.name === "http")!.containerPort;
    expect(container.readinessProbe!.httpGet).toEqual({ path: "/readyz", port: "http", scheme: "HTTP" });
    expect(container.livenessProbe!.httpGet).toEqual({ path: "/healthz", port: "http", scheme: "HTTP" });
    expect(container.startupProbe!.httpGet).toMatchObject({ path: "/healthz", port: "http" });
    const config = configOf(defaults);
    expect(config.server).toMatchObject({ host: "0.0.0.0", port });
    // The image's entrypoint passes --host 0.0.0.0 and sets PORT, which override the file: the chart passes the file's values after them.
    expect(container.args).toEqual(["--config", "/etc/sluice/sluice.yaml", "--host", "0.0.0.0", "--port", String(port)]);
    expect((container as unknown as { env: { name: string; value: string }[] }).env).toContainEqual({ name: "PORT", value: String(port) });
    expect(container.volumeMounts).toContainEqual({ name: "config", mountPath: "/etc/sluice", readOnly: true });

    // The same file, with a provider key, started for real on loopback: the probes' paths answer 200 there.
    const env = { OPENAI_API_KEY: "sk-test-0123456789" };
    const sluice = await startSluice({ config: resolveConfig(config, env), host: "127.0.0.1", port: 0, env, logger: createLogger("silent") });
    try {
      for (const probe of [container.readinessProbe!, container.livenessProbe!, container.startupProbe!]) {
        const answer = await fetch(`${sluice.server.url}${probe.httpGet.path}`, { signal: AbortSignal.timeout(10_000) });
        expect(answer.status, probe.httpGet.path).toBe(200);
      }
      expect((await fetch(`${sluice.server.url}/ready`, { signal: AbortSignal.timeout(10_000) })).status).toBe(404);
    } finally {
      await sluice.close();
    }
  });

  it("gives the pod longer to stop than the preStop sleep and the gateway's drain together, and writes that drain into the configuration", async () => {
    for (const [objects, drainSeconds] of [
      [defaults, 30],
      [full, 120],
    ] as const) {
      const pod = podSpec(objects);
      const drainMs = configOf(objects).server!.drainMs as number;
      expect(drainMs).toBe(drainSeconds * 1000);
      expect(preStopSeconds(gateway(objects)) + drainMs / 1000).toBeLessThan(pod.terminationGracePeriodSeconds);
      // Room after the drain for the gateway's own shutdown: leftover streams end (1 s), its records are written.
      expect(pod.terminationGracePeriodSeconds - preStopSeconds(gateway(objects)) - drainMs / 1000).toBeGreaterThanOrEqual(15);
    }
    expect(gateway(full).lifecycle!.preStop.sleep).toEqual({ seconds: 10 });
    const [longer, short] = await Promise.all([render(["--set", "drain.seconds=300"]), render(["--set", "drain.preStopSleepSeconds=1"])]);
    expect(podSpec(longer).terminationGracePeriodSeconds).toBe(podSpec(defaults).terminationGracePeriodSeconds + 270);
    // The preStop command as the kubelet would run it: it waits its seconds, then exits 0.
    const [, ...args] = gateway(short).lifecycle!.preStop.exec!.command;
    const started = performance.now();
    await runFile(process.execPath, args, { timeout: 30_000 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
  });

  it("rolls the pods when the configuration or a secret changes, and only then", async () => {
    const [again, debug, rotated] = await Promise.all([render(), render(["--set", "config.log.level=debug"]), render(["--set-string", "secrets.providerKeys.OPENAI_API_KEY=sk-rotated-0123456789"])]);
    const before = podAnnotations(defaults);
    expect(before["checksum/config"]).toMatch(/^[0-9a-f]{64}$/);
    expect(podAnnotations(again)).toEqual(before);
    expect(podAnnotations(debug)["checksum/config"]).not.toBe(before["checksum/config"]);
    expect(podAnnotations(debug)["checksum/secret"]).toBe(before["checksum/secret"]);
    expect(podAnnotations(rotated)["checksum/secret"]).not.toBe(before["checksum/secret"]);
    expect(podAnnotations(rotated)["checksum/config"]).toBe(before["checksum/config"]);
  });

  it("puts every secret value in the Secret only: the ConfigMap names variables and holds placeholders for the store URLs", () => {
    const secrets = secretEnv(full);
    expect(Object.keys(secrets).sort()).toEqual(["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SLUICE_ADMIN_KEY", "SLUICE_POSTGRES_URL", "SLUICE_REDIS_URL", "TEAM_A_KEY"]);
    for (const object of full.filter((o) => o.kind !== "Secret")) {
      const text = JSON.stringify(object);
      for (const [name, value] of Object.entries(secrets)) expect(text.includes(value), `${name}'s value in ${object.kind}`).toBe(false);
      // Nor the passwords alone, as they sit in the URLs.
      expect(text).not.toMatch(/placeholder-password/);
    }
    const store = configOf(full).store as { redis: { url: string }; postgres: { url: string } };
    const placeholder = (name: string) => "$" + `{${name}}`;
    expect(store.redis.url).toBe(placeholder("SLUICE_REDIS_URL"));
    expect(store.postgres.url).toBe(placeholder("SLUICE_POSTGRES_URL"));
    for (const container of [gateway(full), ...podSpec(full).initContainers!]) expect(container.envFrom).toEqual([{ secretRef: { name: "sluice" } }]);
  });

  it("reads a Secret of the operator's own with existingSecret, and renders none", async () => {
    const objects = await render(["-f", FULL_VALUES, "--set", "secrets.existingSecret=llm-secrets"]);
    expect(objects.some((o) => o.kind === "Secret")).toBe(false);
    for (const container of [gateway(objects), ...podSpec(objects).initContainers!]) expect(container.envFrom).toEqual([{ secretRef: { name: "llm-secrets" } }]);
    expect(Object.keys(podAnnotations(objects))).not.toContain("checksum/secret");
    for (const value of Object.values(secretEnv(full))) expect(JSON.stringify(objects).includes(value)).toBe(false);
  });

  it("writes the store URLs in at pod start, into memory, and the gateway accepts the file it gets", async () => {
    const pod = podSpec(full);
    const init = pod.initContainers!.find((c) => c.name === "render-config")!;
    expect(init.securityContext).toEqual(gateway(full).securityContext);
    expect(pod.volumes.find((v) => v.name === "config")).toEqual({ name: "config", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } });
    // Run the init container's script (from the ConfigMap) as the pod would, with the Secret's variables.
    const data = one(full, "ConfigMap").data as Record<string, string>;
    await Promise.all([writeFile(join(scratch, "render-config.mjs"), data["render-config.mjs"]!), writeFile(join(scratch, "template.yaml"), data["sluice.yaml"]!)]);
    const env = secretEnv(full);
    const [, , , ...names] = (init as unknown as { args: string[] }).args;
    await runFile(process.execPath, [join(scratch, "render-config.mjs"), join(scratch, "template.yaml"), join(scratch, "sluice.yaml"), ...names], { env: { ...env, PATH: process.env.PATH }, timeout: 30_000 });
    const written = await readFile(join(scratch, "sluice.yaml"), "utf8");
    expect(parse(written).store.redis.url).toBe(env.SLUICE_REDIS_URL);
    expect(parse(written).store.postgres.url).toBe(env.SLUICE_POSTGRES_URL);
    const loaded = await readConfigFile(join(scratch, "sluice.yaml"), env);
    expect(loaded.ok ? "accepted" : loaded.report).toBe("accepted");
    // Without the variable the script stops the pod's start, naming the variable only.
    const missing = await runFile(process.execPath, [join(scratch, "render-config.mjs"), join(scratch, "template.yaml"), join(scratch, "other.yaml"), "SLUICE_REDIS_URL"], { env: { PATH: process.env.PATH }, timeout: 30_000 }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining("SLUICE_REDIS_URL is not set") });
  });

  it("renders the HPA and the PDB when enabled, and leaves replicas to the HPA", async () => {
    const hpa = one(full, "HorizontalPodAutoscaler").spec as { minReplicas: number; maxReplicas: number; scaleTargetRef: { kind: string; name: string } };
    expect(hpa).toMatchObject({ minReplicas: 3, maxReplicas: 12, scaleTargetRef: { kind: "Deployment", name: one(full, "Deployment").metadata.name } });
    expect((one(full, "Deployment").spec as { replicas?: number }).replicas).toBeUndefined();
    // The fail-open divisor: replicas cut off from Redis never admit more than a limit together.
    expect((configOf(full).store as { redis: { replicas: number } }).redis.replicas).toBe(12);
    expect(one(full, "PodDisruptionBudget").spec).toMatchObject({ minAvailable: 2 });
    expect(defaults.some((o) => o.kind === "HorizontalPodAutoscaler")).toBe(false);
    expect(one(defaults, "PodDisruptionBudget").spec).toMatchObject({ maxUnavailable: 1 });
    const withoutPdb = await render(["--set", "podDisruptionBudget.enabled=false"]);
    expect(withoutPdb.some((o) => o.kind === "PodDisruptionBudget")).toBe(false);
  });

  it("renders a ServiceMonitor only when enabled, scraping /metrics where the gateway serves it", async () => {
    expect(defaults.some((o) => o.kind === "ServiceMonitor")).toBe(false);
    const monitor = one(full, "ServiceMonitor").spec as { endpoints: { port: string; path: string }[]; selector: { matchLabels: Record<string, string> } };
    expect(monitor.endpoints).toEqual([expect.objectContaining({ port: "metrics", path: "/metrics" })]);
    // values-full gives /metrics a listener of its own: the Service and the container expose it, bound beyond loopback.
    const service = one(full, "Service", "sluice").spec as { ports: { name: string; port: number }[]; selector: Record<string, string> };
    expect(service.ports.map((p) => p.name)).toEqual(["http", "metrics"]);
    expect(service.selector).toEqual(monitor.selector.matchLabels);
    expect((configOf(full).telemetry as { metrics: unknown }).metrics).toEqual({ enabled: true, port: 9464, host: "0.0.0.0" });
    const onGatewayPort = await render(["--set", "serviceMonitor.enabled=true"]);
    expect((one(onGatewayPort, "ServiceMonitor").spec as typeof monitor).endpoints[0]).toMatchObject({ port: "http", path: "/metrics" });
  });

  it("runs as uid 65534 on a read-only root file system, with /tmp an emptyDir", () => {
    for (const objects of [defaults, full]) {
      const pod = podSpec(objects);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65534 });
      expect(gateway(objects).securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(gateway(objects).volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
      expect(pod.volumes.find((v) => v.name === "tmp")!.emptyDir).toBeDefined();
    }
    expect(gateway(defaults)).toMatchObject({ image: "localhost/sluice:0.1.0" });
  });

  it("refuses values that would put a password in the ConfigMap or split the drain from the grace period", async () => {
    const [url, drain] = await Promise.all([helm(["template", "sluice", CHART, "--set", "config.store.redis.url=redis://:pw@redis:6379"]), helm(["template", "sluice", CHART, "--set", "config.server.drainMs=600000"])]);
    expect(url.code).not.toBe(0);
    expect(url.stderr).toContain("config.store.redis.url would put a password in the ConfigMap");
    expect(url.stderr).not.toContain(":pw@");
    expect(drain.code).not.toBe(0);
    expect(drain.stderr).toContain("config.server.drainMs is set by the chart");
  });
});
