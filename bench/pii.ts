import type { RequestPolicy } from "../src/compliance/pii-policy.js";
import { restoringSink } from "../src/compliance/restoring-sink.js";
import { screenRequest } from "../src/compliance/screen-request.js";
import { PII_KINDS } from "../src/config/pii-kinds.js";
import type { ChatRequest } from "../src/core/chat-request.js";
import type { Delta } from "../src/core/delta.js";
import type { DeltaSink } from "../src/core/delta-sink.js";
import type { LoadSpec } from "./load.js";
import type { PiiSizes } from "./modes.js";
import type { Proc } from "./procs.js";
import { table } from "./report.js";
import { round, summary } from "./stats.js";

/**
 * PII redaction's speed goals (issue #28). (a) In this process: what
 * screening (detection and redaction) costs a 4 KiB prompt, beside what
 * an edge's decode of the same request costs (JSON.stringify + JSON.parse),
 * timed in turn in the same loop. (b) On a gateway of its own: gateway CPU
 * per upstream delta through an alias with `pii: { mode: redact }` against
 * a plain alias on the same simulator, rounds interleaved (ABAB).
 */

/** A customer-support thread in English and Chinese, with near-misses (versions, dates, ticket numbers) the detectors must pass over. */
const PLAIN_LINES = [
  "Hi team, following up on the ticket from last week about the delayed refund.",
  "您好，我上周提交的退款申请到现在还没有处理，麻烦帮忙看一下进度。",
  "Build 20261203.4 passed all checks, so the fix for the billing page should be live now.",
  "版本 3.2.1 已发布，但是我的账户页面还是显示旧的余额。",
  "Ticket #48213 was closed without an answer, which is why I am writing again.",
  "The meeting is at 10:30 on 2026-12-03; please send the minutes to everyone on the thread.",
  "我们在第 42 页讨论过这个问题，合同里写的是三十天内退款。",
  "The log line said: user=785-0510 status=ok, so the payment itself went through.",
  "If you need to reach the office, alice at corp.example.cn is the shared inbox.",
  "订单号是 2026-1187-55，金额为 1,299.00 元，付款方式是信用卡。",
  "Could you also check whether the discount code was applied? The receipt does not show it.",
  "另外，发票抬头需要改成公司名称，税号我稍后补充。",
  "Thanks for your patience; we know the end of the quarter is a busy time for support.",
  "如果需要更多信息，请直接回复这封邮件，我会尽快处理。",
];

/** A handful of values (from test/fixtures/pii-set.jsonl): an email, a phone number, a card, a China ID. */
const PII_LINES = [
  "You can write to me at li_na70@example.com or call +44 20 8049 0560 during office hours.",
  "付款用的卡号是 5180 3633 8829 3337，请核对一下。",
  "身份证号码：510107196209088988，用于核实身份。",
  "Please contact me at zhang-san42@corp.example.cn about the invoice.",
];

const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text).length;

/**
 * A user prompt of exactly `bytes` UTF-8 bytes: the thread's lines with a
 * value every eighth line, cycled, then dots up to the size. No leading or
 * trailing space and no `#sim` line, so the simulator's echo says back
 * exactly this text.
 */
export function piiPrompt(bytes: number): string {
  const lines: string[] = [];
  for (let i = 0; ; i++) {
    const line = i % 8 === 4 ? PII_LINES[Math.floor(i / 8) % PII_LINES.length]! : PLAIN_LINES[i % PLAIN_LINES.length]!;
    if (bytesOf([...lines, line].join("\n")) > bytes) break;
    lines.push(line);
  }
  const text = lines.join("\n");
  return text + ".".repeat(bytes - bytesOf(text));
}

/** Redact over every built-in kind, as `pii: { mode: redact }` without `detectors` makes it. */
const REDACT_ALL: RequestPolicy = { mode: "redact", kinds: new Set(PII_KINDS), custom: [], localOnly: false, keptLocal: false };

function chatRequest(prompt: string): ChatRequest {
  return {
    model: "redact",
    messages: [
      { role: "system", content: [{ type: "text", text: "You are a helpful support assistant." }] },
      { role: "user", content: [{ type: "text", text: prompt }] },
    ],
    tools: [],
    sampling: { stop: [] },
    metadata: { labels: {} },
  };
}

/** The user turn as providers receive it under REDACT_ALL: placeholders instead of values. */
function redacted(prompt: string): string {
  const part = screenRequest(chatRequest(prompt), REDACT_ALL).request.messages[1]!.content[0]!;
  return part.type === "text" ? part.text : "";
}

/** Median µs of one call of `work`, over `times` timed calls after as many unmeasured. */
function medianUs(times: number, work: () => void): number {
  const samples: number[] = [];
  for (let i = 0; i < 2 * times; i++) {
    const t0 = performance.now();
    work();
    if (i >= times) samples.push((performance.now() - t0) * 1000);
  }
  return summary(samples).p50;
}

/**
 * What the redact arm adds per delta, timed in this process without a
 * gateway around it: screening the prompt once per stream, and every
 * 3-character piece of the answer through restoringSink into a sink that
 * drops it. Over the plain arm's gateway CPU per delta, an estimate of the
 * ratio that the noise of whole gateway runs on a shared machine hides.
 */
function inProcessUsPerDelta(prompt: string, deltasPerStream: number) {
  const request = chatRequest(prompt);
  const { vault } = screenRequest(request, REDACT_ALL);
  const answer = redacted(prompt);
  const pieces = Array.from({ length: deltasPerStream }, (_, i) => answer.slice(3 * i, 3 * i + 3));
  const drop: DeltaSink<Delta> = { push: () => true, end: () => undefined };
  const screen = medianUs(50, () => screenRequest(request, REDACT_ALL)) / deltasPerStream;
  const restore =
    medianUs(50, () => {
      const sink = restoringSink(drop, vault!);
      for (const text of pieces) sink.push({ type: "text", text }, false);
      sink.end();
    }) / deltasPerStream;
  return { screen, restore };
}

/** (a) screenRequest against JSON.stringify + JSON.parse of the same request, alternated in one loop after a warm-up. */
function screenCost(iterations: number) {
  const prompt = piiPrompt(4 * 1024);
  const request = chatRequest(prompt);
  const screen: number[] = [];
  const decode: number[] = [];
  const warmUp = Math.max(200, iterations / 4);
  for (let i = 0; i < warmUp + iterations; i++) {
    const t0 = performance.now();
    screenRequest(request, REDACT_ALL);
    const t1 = performance.now();
    JSON.parse(JSON.stringify(request));
    const t2 = performance.now();
    if (i < warmUp) continue;
    screen.push(t1 - t0);
    decode.push(t2 - t1);
  }
  const screenMs = summary(screen);
  const decodeMs = summary(decode);
  return {
    promptBytes: bytesOf(prompt),
    promptChars: prompt.length,
    found: screenRequest(request, REDACT_ALL).found ?? {},
    iterations,
    screenMs: { p50: screenMs.p50, p99: screenMs.p99 },
    decodeMs: { p50: decodeMs.p50, p99: decodeMs.p99 },
    screenRatio: screenMs.p50 / decodeMs.p50,
  };
}

export interface PiiDeps {
  /** A gateway of the benchmark's own, with these aliases on the simulator (provider `sim`). */
  readonly startGateway: (models: Record<string, unknown>) => Promise<{ proc: Proc; url: string }>;
  readonly load: <T>(spec: LoadSpec) => Promise<T>;
  readonly simReset: () => Promise<void>;
  /** Text deltas the simulator wrote since its last reset. */
  readonly upstreamDeltas: () => Promise<number>;
  readonly log: (line: string) => void;
}

type Arm = "plain" | "redact";
const STREAMS = 10;
/** The simulator says back the prompt in 3-character pieces. */
const MODEL = "sim-1?echo=1";

/**
 * (b) Both aliases on one gateway, 10 streams at a time of a prompt that
 * gives about `tokens` deltas each. The redact arm sends the values and
 * its answer is restored; the plain arm sends the prompt as the redact arm's
 * provider receives it (placeholders), so both upstream streams are the
 * same text: the same deltas, and the difference is screening and restoring.
 */
async function restoreCost(sizes: PiiSizes, deps: PiiDeps) {
  const block = piiPrompt(4 * 1024);
  const values = Array.from({ length: Math.ceil((3 * sizes.tokens) / block.length) }, () => block).join("\n");
  const prompts: Record<Arm, string> = { redact: values, plain: redacted(values) };
  const gw = await deps.startGateway({ plain: { provider: "sim", model: MODEL }, redact: { provider: "sim", model: MODEL, pii: { mode: "redact" } } });
  const runs: Record<Arm, Array<{ cpuS: number; deltas: number; messages: number }>> = { plain: [], redact: [] };
  const checks = { sameUpstream: true, restored: true, errors: 0 };
  const run = async (arm: Arm) => {
    await deps.simReset();
    const before = gw.proc.cpuSeconds();
    const r = await deps.load<{ deltas: number; chars: number; errors: number }>({ scenario: "throughput", target: { kind: "sluice-grpc", url: gw.url, model: arm }, concurrency: STREAMS, prompt: prompts[arm] });
    const cpuS = gw.proc.cpuSeconds() - before;
    const deltas = await deps.upstreamDeltas();
    // What the client read is the prompt as it sent it: values in the redact arm (restored), placeholders in the plain one.
    checks.restored &&= r.chars === STREAMS * prompts[arm].length;
    // The upstream said back the placeholders in both arms: the redact arm's provider never saw a value.
    checks.sameUpstream &&= deltas === STREAMS * Math.ceil(prompts.plain.length / 3);
    checks.errors += r.errors;
    return { cpuS, deltas, messages: r.deltas };
  };
  try {
    for (const arm of ["plain", "redact"] as const) await run(arm); // warm-up: the JIT, and the simulator's and the gateway's pools
    for (let i = 0; i < sizes.rounds; i++) {
      for (const arm of i % 2 === 0 ? (["plain", "redact"] as const) : (["redact", "plain"] as const)) runs[arm].push(await run(arm));
    }
  } finally {
    await gw.proc.stop();
  }
  const per100k = (arm: Arm) => (runs[arm].reduce((a, r) => a + r.cpuS, 0) / runs[arm].reduce((a, r) => a + r.deltas, 0)) * 100_000;
  const gatewayCpuSPer100k = { plain: per100k("plain"), redact: per100k("redact") };
  // Each round's redact ÷ plain (adjacent runs), and their median: one round that a neighbour's burst hit does not decide it.
  const roundRatios = runs.redact.map((r, i) => r.cpuS / r.deltas / (runs.plain[i]!.cpuS / runs.plain[i]!.deltas));
  const deltasPerStream = Math.ceil(prompts.plain.length / 3);
  const inProcess = inProcessUsPerDelta(prompts.redact, deltasPerStream);
  return {
    deltasPerStream,
    streams: STREAMS,
    rounds: sizes.rounds,
    gatewayCpuSPer100k,
    cpuRatio: summary(roundRatios).p50,
    roundRatios,
    /** Each measured run's gateway CPU seconds and the text messages its client read (the gRPC edge joins deltas that arrive together), in round order. */
    runs: { plain: runs.plain.map(({ cpuS, messages }) => ({ cpuS, messages })), redact: runs.redact.map(({ cpuS, messages }) => ({ cpuS, messages })) },
    /** µs per delta in this process, and their sum as a share of the plain arm's gateway CPU per delta. */
    inProcessUsPerDelta: { ...inProcess, share: (inProcess.screen + inProcess.restore) / (gatewayCpuSPer100k.plain * 10) },
    checks,
  };
}

const foundText = (found: Readonly<Record<string, number>>) =>
  Object.entries(found)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");

export type PiiResult = ReturnType<typeof screenCost> & Awaited<ReturnType<typeof restoreCost>>;

export async function piiScenario(sizes: PiiSizes, deps: PiiDeps): Promise<PiiResult> {
  const screen = screenCost(sizes.iterations);
  deps.log(
    `pii screen, ${screen.promptBytes} B prompt (${foundText(screen.found)}): p50 ${round(screen.screenMs.p50, 3)} ms p99 ${round(screen.screenMs.p99, 3)} ms; decode p50 ${round(screen.decodeMs.p50, 3)} ms (×${round(screen.screenRatio)})`,
  );
  const restore = await restoreCost(sizes, deps);
  deps.log(
    `pii restore: gateway CPU per 100k deltas plain ${round(restore.gatewayCpuSPer100k.plain)} s, redact ${round(restore.gatewayCpuSPer100k.redact)} s (median of rounds ×${round(restore.cpuRatio, 3)}: ${restore.roundRatios.map((r) => round(r)).join(" ")}); in process, screening ${round(restore.inProcessUsPerDelta.screen, 3)} + restoring ${round(restore.inProcessUsPerDelta.restore, 3)} µs per delta (${round(restore.inProcessUsPerDelta.share * 100, 1)} % of plain); checks ${JSON.stringify(restore.checks)}`,
  );
  return { ...screen, ...restore };
}

export function piiSection(r: PiiResult): string {
  return [
    `## 9c. PII redaction (issue #28): screening a ${r.promptBytes}-byte prompt in process (${r.iterations} times); gateway CPU per delta, redact alias vs plain, gRPC edge, ${r.rounds} interleaved rounds of ${r.streams} streams × ${r.deltasPerStream} deltas`,
    table(
      ["", "p50 ms", "p99 ms"],
      [
        [`screenRequest, redact over every built-in kind (found: ${foundText(r.found)})`, String(round(r.screenMs.p50, 3)), String(round(r.screenMs.p99, 3))],
        ["JSON.stringify + JSON.parse of the same request (an edge's decode)", String(round(r.decodeMs.p50, 3)), String(round(r.decodeMs.p99, 3))],
      ],
    ),
    "",
    table(
      ["alias", "gateway CPU s / 100k deltas (all rounds)", "ratio (median of rounds)"],
      [
        ["plain (the redact alias's upstream text, placeholders)", r.gatewayCpuSPer100k.plain, "1.00"],
        [`pii: { mode: redact } (values sent, answer restored${r.checks.restored ? "" : ": **not restored**"})`, r.gatewayCpuSPer100k.redact, String(round(r.cpuRatio, 3))],
      ],
    ),
    "",
    `Round ratios: ${r.roundRatios.map((x) => round(x)).join(", ")}. Timed in process, the redact arm's own work is ${round(r.inProcessUsPerDelta.screen, 3)} µs of screening and ${round(r.inProcessUsPerDelta.restore, 3)} µs of restoring per delta, ${round(r.inProcessUsPerDelta.share * 100, 1)} % of the plain arm's gateway CPU per delta.`,
    "",
  ].join("\n");
}
