import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { mcpGoals, mcpSection } from "./mcp.js";
import { type Mode, resultsName } from "./modes.js";
import { publicProfileGoals, publicProfileSection } from "./public-profile.js";
import { table } from "./report.js";
import { type Result, writeReport } from "./results-report.js";
import { resumableSummary, resumeSection } from "./resume.js";
import { admissionScenario, admissionSection } from "./scenarios/admission.js";
import { agentsRun } from "./scenarios/agents.js";
import { batchRun } from "./scenarios/batch.js";
import { cacheScenario } from "./scenarios/cache.js";
import { cancelScenario } from "./scenarios/cancel.js";
import { capacityScenario } from "./scenarios/capacity.js";
import { failoverScenario } from "./scenarios/failover.js";
import { headOfLineRun } from "./scenarios/head-of-line.js";
import { hedgeScenario } from "./scenarios/hedge.js";
import { keyFloodScenario } from "./scenarios/key-flood.js";
import { ledgerScenario } from "./scenarios/ledger.js";
import { mcpRun } from "./scenarios/mcp.js";
import { needsRun } from "./scenarios/needs.js";
import { pgliteThreadRun } from "./scenarios/pglite-thread.js";
import { piiRun } from "./scenarios/pii.js";
import { publicProfileScenario } from "./scenarios/public-profile.js";
import { responsesStateRun } from "./scenarios/responses-state.js";
import { runResume } from "./scenarios/resume.js";
import { semanticRun } from "./scenarios/semantic.js";
import { sizingScenario } from "./scenarios/sizing.js";
import { slowScenario } from "./scenarios/slow.js";
import { telemetryScenario } from "./scenarios/telemetry.js";
import { throughputScenario } from "./scenarios/throughput.js";
import { ttftScenario } from "./scenarios/ttft.js";
import { uploadRun } from "./scenarios/upload.js";
import { log, machine, RESULTS, type Services, startServices } from "./services.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "no-peer": { type: "boolean", default: false },
    /** Run one scenario alone (`admission`, `resume`, `public-profile`, `mcp`, `ttft`, `throughput`, `capacity`, `cancel`, `slow`, `telemetry`, `pii`, `needs`, …), written to bench/results/<mode>-<name>.json (admission and resume also .md). */
    only: { type: "string" },
    /** Write the report (.md, chart, goals) again from a full or quick run's JSON, measuring nothing: after a change to how results are shown. */
    render: { type: "string" },
  },
});
const MODE: Mode = args.quick ? "quick" : "full";

async function main(): Promise<void> {
  const started = performance.now();
  await mkdir(RESULTS, { recursive: true });
  if (args.render !== undefined) {
    const { goals: _goals, ...measured } = JSON.parse(await readFile(args.render, "utf8")) as Result & { goals?: unknown };
    await writeReport(measured);
    return;
  }
  const s = await startServices(MODE, { peer: !args["no-peer"] });
  log(`simulator ${s.simOrigin}, gateway ${s.gatewayUrl}${s.peerUrl ? `, peer ${s.peerUrl}` : ""}, limited gateway ${s.limitedUrl}`);
  try {
    if (args.only === "admission") {
      const admission = await admissionScenario(s);
      const name = resultsName(MODE, "admission");
      const md = [`# Sluice benchmark: admission with Redis limits (${MODE})`, "", `Machine: ${JSON.stringify(machine())}`, "", admissionSection(admission)].join("\n");
      await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ machine: machine(), admission }, null, 2)}\n`);
      await writeFile(join(RESULTS, `${name}.md`), md);
      process.stdout.write(`${md}\n`);
      return;
    }
    if (args.only === "resume") {
      const resume = await runResume(s);
      const name = resultsName(MODE, "resume");
      const md = [`# Sluice benchmark: resumable streams (${MODE})`, "", `Machine: ${JSON.stringify(machine())}`, "", resumeSection(resume)].join("\n");
      await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ machine: machine(), resume, resumable: resumableSummary(resume) }, null, 2)}\n`);
      await writeFile(join(RESULTS, `${name}.md`), md);
      process.stdout.write(`${md}\n`);
      return;
    }
    if (args.only === "public-profile") {
      const profile = await publicProfileScenario(s);
      const goalList = publicProfileGoals(profile);
      const name = resultsName(MODE, "public-profile");
      const goalRows = goalList.map((g) => [g.name, g.target, g.measured, g.met ? "yes" : "**no**"]);
      const md = [`# Sluice benchmark: public streaming profile (${MODE})`, "", `Machine: ${JSON.stringify(machine())}`, "", table(["goal", "target", "measured", "met"], goalRows), "", publicProfileSection(profile)].join("\n");
      await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ machine: machine(), publicProfile: profile, goals: goalList }, null, 2)}\n`);
      await writeFile(join(RESULTS, `${name}.md`), md);
      process.stdout.write(`${md}\n`);
      return;
    }
    if (args.only === "mcp") {
      const mcp = await mcpRun(s);
      const goalList = mcpGoals(mcp);
      const name = resultsName(MODE, "mcp");
      const goalRows = goalList.map((g) => [g.name, g.target, g.measured, g.met ? "yes" : "**no**"]);
      const md = [`# Sluice benchmark: MCP gateway (${MODE})`, "", `Machine: ${JSON.stringify(machine())}`, "", table(["goal", "target", "measured", "met"], goalRows), "", mcpSection(mcp)].join("\n");
      await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ machine: machine(), mcp, goals: goalList }, null, 2)}\n`);
      await writeFile(join(RESULTS, `${name}.md`), md);
      process.stdout.write(`${md}\n`);
      return;
    }
    const single: Record<string, (s: Services) => Promise<unknown>> = {
      ttft: ttftScenario,
      throughput: throughputScenario,
      capacity: capacityScenario,
      cancel: cancelScenario,
      slow: slowScenario,
      telemetry: telemetryScenario,
      cache: cacheScenario,
      semantic: semanticRun,
      ledger: ledgerScenario,
      pii: piiRun,
      needs: needsRun,
      batch: batchRun,
      upload: uploadRun,
      agents: agentsRun,
      "responses-state": responsesStateRun,
      "key-flood": keyFloodScenario,
      "head-of-line": headOfLineRun,
      "pglite-thread": pgliteThreadRun,
      sizing: sizingScenario,
    };
    const run = args.only === undefined ? undefined : single[args.only];
    if (run) {
      // For iteration: one scenario's raw figures (the log lines carry the per-path summary).
      const result = await run(s);
      await writeFile(join(RESULTS, `${resultsName(MODE, args.only)}.json`), `${JSON.stringify({ machine: machine(), [args.only!]: result }, null, 2)}\n`);
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return;
    }
    if (args.only !== undefined) throw new Error(`unknown scenario for --only: ${args.only} (known: admission, resume, public-profile, mcp, ${Object.keys(single).join(", ")})`);
    const ttft = await ttftScenario(s);
    const throughput = await throughputScenario(s);
    const cancel = await cancelScenario(s);
    const slow = await slowScenario(s);
    const failover = await failoverScenario(s);
    const hedge = await hedgeScenario(s);
    const telemetry = await telemetryScenario(s);
    const admission = await admissionScenario(s);
    const ledger = await ledgerScenario(s);
    const pii = await piiRun(s);
    const needs = await needsRun(s);
    const batch = await batchRun(s);
    const upload = await uploadRun(s);
    const resume = await runResume(s);
    const cache = await cacheScenario(s);
    const semantic = await semanticRun(s);
    const keyFlood = await keyFloodScenario(s);
    const headOfLine = await headOfLineRun(s);
    const capacity = await capacityScenario(s);
    const publicProfile = await publicProfileScenario(s);
    const mcp = await mcpRun(s);
    const result = {
      mode: MODE,
      machine: machine(),
      ttft,
      throughput,
      capacity,
      cancel,
      slow,
      failover,
      hedge,
      telemetry,
      admission,
      ledger,
      pii,
      needs,
      batch,
      upload,
      resume,
      resumable: resumableSummary(resume),
      cache,
      semantic,
      publicProfile,
      keyFlood,
      headOfLine,
      mcp,
      durationS: (performance.now() - started) / 1000,
    };
    await writeReport(result);
  } finally {
    await Promise.all([s.gateway.stop(), s.limited.stop(), s.sim.stop(), s.peer?.stop(), s.floor.stop(), s.grpcFloor.stop()]);
    await s.redis?.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
