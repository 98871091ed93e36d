// Runs the Helm chart's pod on podman, with the image built by
// scripts/build-image.sh (localhost/sluice:<appVersion>), as the nearest thing
// to a cluster these machines have: renders the chart with a store enabled
// (so the init container writes the Redis URL in), plays the ConfigMap and
// the Deployment with `podman kube play`, and checks what a kubelet would
// rely on: the gateway answers /readyz on the port the chart names, runs as
// uid 65534 on a read-only root with the rendered file readable by it alone,
// the preStop command runs in the image, and SIGTERM drains and exits 0.
// podman 4.3 cannot feed a Secret to envFrom, so the Secret's variables are
// written into the Deployment's env for this run only. Not part of `npm
// test` (it needs the image); usage: node scripts/helm-podman-smoke.mjs
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const release = `helm-smoke-${process.pid}`;
const READY_TIMEOUT_MS = 90_000;
const conf = join(root, "deploy", "podman", "containers.conf");
const env = { ...process.env, ...(process.env.CONTAINERS_CONF || !existsSync(conf) ? {} : { CONTAINERS_CONF: conf }) };
const podman = (args, options = {}) => execFileSync("podman", args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...options });

const values = [
  ["--set", "replicaCount=1"],
  ["--set", "podDisruptionBudget.enabled=false"],
  ["--set", "serviceAccount.create=false"],
  ["--set", "store.redis.enabled=true"],
  // Nothing listens there: the store fails open (the default), so the gateway is ready without Redis.
  ["--set-string", "secrets.redisUrl=redis://:smoke-password@127.0.0.1:1/0"],
  ["--set-string", "secrets.providerKeys.OPENAI_API_KEY=sk-smoke-0123456789"],
  ["--set", "drain.seconds=5"],
  ["--set", "drain.preStopSleepSeconds=1"],
].flat();
const rendered = execFileSync(process.execPath, [join(root, "scripts", "helm.mjs"), "template", release, join(root, "deploy", "helm", "sluice"), ...values], { encoding: "utf8" });
const objects = parseAllDocuments(rendered)
  .map((d) => d.toJS())
  .filter(Boolean);
const secret = objects.find((o) => o.kind === "Secret");
const deployment = objects.find((o) => o.kind === "Deployment");
const variables = Object.entries(secret.data).map(([name, value]) => ({ name, value: Buffer.from(value, "base64").toString("utf8") }));
const pod = deployment.spec.template.spec;
// podman 4.3 removes a "once" init container as it exits and loses the race on a busy machine ("cannot remove container … as it is running"): keep it.
deployment.metadata.annotations = { ...deployment.metadata.annotations, "io.podman.annotations.init.container.type": "always" };
for (const container of [...pod.containers, ...(pod.initContainers ?? [])]) {
  delete container.envFrom;
  container.env = [...variables, ...(container.env ?? [])];
}
const scratch = mkdtempSync(join(tmpdir(), "sluice-helm-smoke-"));
const play = join(scratch, "play.yaml");
writeFileSync(play, [objects.find((o) => o.kind === "ConfigMap"), deployment].map((o) => stringify(o)).join("---\n"));
const gateway = `${deployment.metadata.name}-pod-0-sluice`;
const port = pod.containers[0].ports[0].containerPort;

/** Runs node inside the gateway's container (the image has no shell); its stdout. */
const inPod = (script) => podman(["exec", gateway, "node", "-e", script]).trim();
const check = (ok, what) => {
  if (!ok) throw new Error(`helm podman smoke: ${what}`);
  process.stdout.write(`ok: ${what}\n`);
};

const image = pod.containers[0].image;
if (spawnSync("podman", ["image", "exists", image], { env }).status !== 0) {
  process.stderr.write(`helm podman smoke: no image ${image} here: build it first (scripts/build-image.sh)\n`);
  process.exit(2);
}

let failed = false;
try {
  podman(["kube", "play", play]);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let ready = "";
  while (Date.now() < deadline) {
    const probe = spawnSync(
      "podman",
      ["exec", gateway, "node", "-e", `fetch('http://127.0.0.1:${port}/readyz').then(async (r) => { process.stdout.write(r.status + ' ' + (await r.text())); process.exit(r.ok ? 0 : 1); }, () => process.exit(1))`],
      { env, encoding: "utf8" },
    );
    if (probe.status === 0) {
      ready = probe.stdout;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 500)); // polling a container's start-up, bounded by the deadline
  }
  check(ready.startsWith("200"), `GET /readyz on port ${port} answers 200 (${ready || "no answer"})`);
  const [user, readOnly] = podman(["inspect", gateway, "--format", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}"]).trim().split(" ");
  check(user === "65534:65534" && readOnly === "true", `runs as 65534:65534 on a read-only root (${user}, read-only ${readOnly})`);
  const file = JSON.parse(
    inPod(
      `const fs = require('fs'); const s = fs.statSync('/etc/sluice/sluice.yaml'); const t = fs.readFileSync('/etc/sluice/sluice.yaml', 'utf8'); let root = 'writable'; try { fs.writeFileSync('/app/probe', ''); } catch (e) { root = e.code; } fs.writeFileSync('/tmp/probe', ''); console.log(JSON.stringify({ uid: s.uid, mode: (s.mode & 0o777).toString(8), url: t.includes('"redis://:smoke-password@127.0.0.1:1/0"'), root }))`,
    ),
  );
  check(file.uid === 65534 && file.mode === "600" && file.url, `the init container wrote the Redis URL into /etc/sluice/sluice.yaml, mode 600, owned by 65534 (${JSON.stringify(file)})`);
  check(file.root === "EROFS", "the root file system refuses writes, /tmp takes them");
  const preStop = pod.containers[0].lifecycle.preStop.exec.command;
  podman(["exec", gateway, ...preStop]);
  check(true, `the preStop command runs in the image (${preStop.join(" ")})`);
  podman(["stop", "-t", String(pod.terminationGracePeriodSeconds), gateway]);
  const logs = podman(["logs", gateway], { stdio: ["ignore", "pipe", "pipe"] });
  const exit = podman(["inspect", gateway, "--format", "{{.State.ExitCode}}"]).trim();
  check(/"event":"server.draining"/.test(logs) && /"event":"server.stopped","drained":true/.test(logs) && exit === "0", `SIGTERM drains and exits 0 (exit ${exit})`);
} catch (error) {
  failed = true;
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  spawnSync("podman", ["logs", gateway], { env, stdio: "inherit" });
} finally {
  spawnSync("podman", ["kube", "down", play], { env, stdio: "ignore" });
  spawnSync("podman", ["volume", "rm", "-f", deployment.metadata.name], { env, stdio: "ignore" });
  rmSync(scratch, { recursive: true, force: true });
}
process.stdout.write(failed ? "helm podman smoke: FAILED\n" : "helm podman smoke: passed\n");
process.exit(failed ? 1 : 0);
