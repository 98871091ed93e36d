import type { ModelRoute } from "../src/config/config.js";
import { resolveConfig } from "../src/config/config.js";
import type { ChatMessage, ChatRequest } from "../src/core/chat-request.js";
import { promptTokenBound } from "../src/routing/request-needs.js";
import { routeByNeed } from "../src/routing/route-by-need.js";
import { createRandom } from "../src/simulator/random.js";
import { countedInputTokens } from "../src/usage/prompt-size.js";
import { tokenCounter } from "../src/usage/token-count.js";
import type { LoadSpec } from "./load.js";
import type { NeedsSizes } from "./modes.js";
import type { Proc } from "./procs.js";
import { table } from "./report.js";
import { round, summary } from "./stats.js";

/**
 * Routing by need's speed goals (issue #29). (a) On a gateway of its own:
 * TTFT of a 4 KiB prompt through an alias whose targets carry capabilities
 * (one declared, one from the built-in table: the filter and the byte bound
 * run on every request) against an alias on a model id the table does not
 * know (every window unknown: the filter has nothing to drop and the bound
 * is never taken), requests alternated, samples pooled. Beside it,
 * routeByNeed itself on the same two routes, timed in this process.
 * (b) In this process: the tokenizer's count of a ~100k-token conversation
 * (countedInputTokens, o200k), beside the byte bound routeByNeed takes
 * instead and JSON.stringify of the same request, timed in turn.
 */

/** Sentences of an ordinary English prompt, cycled into the 4 KiB one. */
const PROSE = [
  "Please read the notes below and summarise what changed in the billing service this week.",
  "The team moved the invoice job to a queue, so a slow customer no longer holds up the others.",
  "Two customers reported that their receipts showed the old address after they had updated it.",
  "We traced that to a cache that kept account details for an hour instead of five minutes.",
  "The fix shortens the lifetime and clears the entry whenever the account is saved.",
  "Refunds are now issued within one working day, down from three, for cards and bank transfers alike.",
  "Support asked whether the monthly statement could list discounts on a line of their own.",
  "That needs a change to the template and to the export that finance reads every morning.",
  "Finally, the on-call rota for December is in the shared calendar; swap shifts there, not by email.",
  "Answer in plain sentences, keep it under two hundred words, and say what is still open.",
];

const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text).length;

/** An English prompt of exactly `bytes` UTF-8 bytes: the sentences above, cycled, then dots up to the size. */
export function needsPrompt(bytes: number): string {
  const lines: string[] = [];
  for (let i = 0; ; i++) {
    const line = PROSE[i % PROSE.length]!;
    if (bytesOf([...lines, line].join("\n")) > bytes) break;
    lines.push(line);
  }
  const text = lines.join("\n");
  return text + ".".repeat(bytes - bytesOf(text));
}

// Mixed English for the long conversation: prose from a vocabulary, numbers, dates, identifiers, code and lists.
const SUBJECTS = [
  "the gateway",
  "our billing team",
  "the new release",
  "a customer in Lyon",
  "the scheduler",
  "each worker",
  "the audit log",
  "the mobile app",
  "this quarter's report",
  "the search index",
  "every replica",
  "the support desk",
  "the nightly export",
  "a long conversation",
  "the load balancer",
];
const VERBS = ["rejected", "summarised", "rewrote", "measured", "delayed", "forwarded", "cached", "validated", "retried", "archived", "compared", "counted", "scheduled", "dropped", "translated", "approved"];
const OBJECTS = [
  "the pending invoices",
  "three failed payments",
  "the weekly metrics",
  "an unexpected timeout",
  "the oldest tickets",
  "a malformed request",
  "the draft contract",
  "every stale entry",
  "the latency budget",
  "two duplicate orders",
  "the onboarding checklist",
  "a refund of 240 euros",
  "the access tokens",
  "the quarterly forecast",
];
const CLAUSES = [
  "before anyone noticed",
  "after the deploy on Tuesday",
  "because the limit was too low",
  "while the database was being migrated",
  "without telling the on-call engineer",
  "so that nobody had to wait",
  "even though the tests had passed",
  "as the runbook says it should",
  "although the numbers looked wrong at first",
  "once the backlog had cleared",
];
const WORDS = ["however", "meanwhile", "in practice", "for example", "as a result", "on the other hand", "to be fair", "in short", "by contrast", "at the same time"];
const CODE = [
  "const total = items.reduce((sum, item) => sum + item.price * item.quantity, 0);",
  "if (response.status === 429) await sleep(retryAfterMs ?? 1000);",
  "SELECT customer_id, SUM(amount) FROM payments WHERE created_at > NOW() - INTERVAL '7 days' GROUP BY customer_id;",
  'logger.info({ requestId, durationMs: Date.now() - started }, "request finished");',
  "for (const [key, value] of Object.entries(config.models)) validate(key, value);",
  "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n            return fn()\n        except TimeoutError:\n            time.sleep(2 ** i)",
];

/** Seeded mixed English text of about `chars` characters (cut at the last space before it). */
function mixedText(seed: number, chars: number): string {
  const next = createRandom(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!;
  const int = (n: number) => Math.floor(next() * n);
  const sentence = () => {
    const s = `${pick(SUBJECTS)} ${pick(VERBS)} ${pick(OBJECTS)} ${pick(CLAUSES)}`;
    const lead = next() < 0.3 ? `${pick(WORDS)}, ` : "";
    const tail = next() < 0.25 ? ` (ticket ${1000 + int(90_000)}, ${2020 + int(7)}-${String(1 + int(12)).padStart(2, "0")}-${String(1 + int(28)).padStart(2, "0")})` : "";
    const text = `${lead}${s}${tail}.`;
    return text[0]!.toUpperCase() + text.slice(1);
  };
  const paragraphs: string[] = [];
  let length = 0;
  while (length < chars) {
    const kind = next();
    let p: string;
    if (kind < 0.1) p = `\`\`\`\n${pick(CODE)}\n\`\`\``;
    else if (kind < 0.2) p = Array.from({ length: 3 + int(4) }, (_, i) => `${i + 1}. ${sentence()}`).join("\n");
    else if (kind < 0.25) p = `| region | orders | revenue |\n|---|---|---|\n${Array.from({ length: 4 }, () => `| eu-${pick(["west", "north", "central"])}-${1 + int(3)} | ${int(10_000)} | ${int(1_000_000) / 100} |`).join("\n")}`;
    else p = Array.from({ length: 3 + int(5) }, sentence).join(" ");
    paragraphs.push(p);
    length += p.length + 2;
  }
  const all = paragraphs.join("\n\n");
  return all.slice(0, all.lastIndexOf(" ", chars));
}

function request(model: string, messages: ChatMessage[]): ChatRequest {
  return { model, messages, tools: [], sampling: { stop: [] }, metadata: { labels: {} } };
}

const text = (role: ChatMessage["role"], value: string): ChatMessage => ({ role, content: [{ type: "text", text: value }] });

/** A system prompt and `turns` user and assistant turns of mixed English, about `charsPerTurn` each. */
export function conversation(turns: number, charsPerTurn: number): ChatRequest {
  const messages = [text("system", "You are a careful assistant for an operations team. Answer from the conversation; say so when it does not tell.")];
  for (let i = 0; i < turns; i++) messages.push(text(i % 2 === 0 ? "user" : "assistant", mixedText(29 + i, charsPerTurn)));
  return request("long", messages);
}

/** (b) What a request's count costs: countedInputTokens against the byte bound and JSON.stringify of the same request, in turn, after a warm-up. */
async function countCost(sizes: NeedsSizes) {
  const t0 = performance.now();
  await tokenCounter(); // the encoding, loaded on first use (nothing before has, in a fresh process)
  const loadMs = performance.now() - t0;
  // Sized to ~100k tokens: a first draft's rate, then corrections until within 0.2 % (each count also warms the encoder up).
  const turns = 20;
  let charsPerTurn = 20_000;
  let long = conversation(turns, charsPerTurn);
  const t1 = performance.now();
  let tokens = await countedInputTokens(long);
  const firstMs = performance.now() - t1;
  const firstTokens = tokens;
  for (let i = 0; i < 4 && Math.abs(tokens - sizes.countTokens) > sizes.countTokens / 500; i++) {
    charsPerTurn = Math.round((charsPerTurn * sizes.countTokens) / tokens);
    long = conversation(turns, charsPerTurn);
    tokens = await countedInputTokens(long); // the last is the timed prompt's warm-up
  }
  const countMs: number[] = [];
  const boundMs: number[] = [];
  const stringifyMs: number[] = [];
  let bound = 0;
  for (let i = 0; i < sizes.countRuns; i++) {
    const a = performance.now();
    const n = await countedInputTokens(long);
    const b = performance.now();
    bound = promptTokenBound(long);
    const c = performance.now();
    JSON.stringify(long);
    const d = performance.now();
    if (n !== tokens) throw new Error(`needs: the count changed between runs (${tokens} then ${n})`);
    countMs.push(b - a);
    boundMs.push(c - b);
    stringifyMs.push(d - c);
  }
  const countS = summary(countMs);
  const boundS = summary(boundMs);
  const stringifyS = summary(stringifyMs);
  const texts = long.messages.map((m) => (m.content[0]!.type === "text" ? m.content[0]!.text : ""));
  return {
    tokens,
    /** The byte bound routeByNeed takes first (≥ tokens), and the prompt's characters and UTF-8 bytes. */
    bound,
    chars: texts.reduce((n, t) => n + t.length, 0),
    bytes: texts.reduce((n, t) => n + bytesOf(t), 0),
    messages: long.messages.length,
    runs: sizes.countRuns,
    /** Loading the encoding (the first tokenCounter() in this process), and the first count after it (a draft of the same kind). */
    loadMs,
    firstMs,
    firstTokens,
    countMs: { p50: countS.p50, p99: countS.p99, max: countS.max },
    boundMs: { p50: boundS.p50 },
    stringifyMs: { p50: stringifyS.p50 },
    /** count ÷ bound and count ÷ JSON.stringify, p50s of the same loop. */
    boundRatio: countS.p50 / boundS.p50,
    stringifyRatio: countS.p50 / stringifyS.p50,
  };
}

export interface NeedsDeps {
  /** A gateway of the benchmark's own, with these aliases on the simulator (provider `sim`). */
  readonly startGateway: (models: Record<string, unknown>) => Promise<{ proc: Proc; url: string }>;
  readonly load: <T>(spec: LoadSpec) => Promise<T>;
  readonly simReset: () => Promise<void>;
  readonly log: (line: string) => void;
}

type Arm = "capable" | "unknown";

/**
 * The two aliases. `capable`: a target that declares capabilities over the
 * table's `gpt-4o` entry, and one that takes the entry as it is (windows of
 * 128,000: the byte bound is computed for every request). `unknown`: a model
 * id the table does not know and no capabilities (every window unknown).
 * Model strings of the same length; the simulator serves any id (knobs
 * after `?`), and `script` only keeps each target's counter its own.
 */
const MODELS: Readonly<Record<Arm, unknown>> = {
  capable: {
    targets: [
      { provider: "sim", model: "gpt-4o-mini?tokens=2&script=need-a1", capabilities: { vision: false, contextWindow: 128_000 } },
      { provider: "sim", model: "gpt-4o-mini?tokens=2&script=need-a2" },
    ],
  },
  unknown: {
    targets: [
      { provider: "sim", model: "sim-need-01?tokens=2&script=need-b1" },
      { provider: "sim", model: "sim-need-01?tokens=2&script=need-b2" },
    ],
  },
};

/** The aliases as the gateway resolves them from the same configuration. */
function routes(): Record<Arm, ModelRoute> {
  const config = resolveConfig({ providers: { sim: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } }, models: MODELS }, {}, "needs scenario");
  return { capable: config.models.get("capable")!, unknown: config.models.get("unknown")! };
}

/** µs per routeByNeed call on each route, batches of 100 alternated, after as many unmeasured. */
async function routeUs(prompt: string, batches: number) {
  const r = routes();
  const req = request("needs", [text("user", prompt)]);
  const samples: Record<Arm, number[]> = { capable: [], unknown: [] };
  for (let i = 0; i < 2 * batches; i++) {
    for (const arm of i % 2 === 0 ? (["capable", "unknown"] as const) : (["unknown", "capable"] as const)) {
      const t0 = performance.now();
      for (let j = 0; j < 100; j++) await routeByNeed(req, r[arm]);
      if (i >= batches) samples[arm].push((performance.now() - t0) * 10); // ms per 100 calls → µs per call
    }
  }
  const capable = summary(samples.capable).p50;
  const unknown = summary(samples.unknown).p50;
  const kept = (await routeByNeed(req, r.capable)).route.targets.length;
  return { capable, unknown, addedUs: capable - unknown, capableTargetsKept: kept };
}

/**
 * (a) TTFT p50 through each alias, one stream at a time: each round one
 * load-generator run whose requests alternate between the aliases (A B B A …),
 * the first alias swapped every round; samples pooled. Runs of one alias
 * after the other (ABAB by run) left a ±0.1 ms difference between two
 * identical aliases on this machine (each run's own process); alternating
 * request by request, +0.006 ms.
 */
async function ttftCost(sizes: NeedsSizes, deps: NeedsDeps) {
  const prompt = needsPrompt(sizes.promptBytes);
  const gw = await deps.startGateway(MODELS as Record<string, unknown>);
  const target = (arm: Arm) => ({ kind: "sluice-grpc" as const, url: gw.url, model: arm });
  const samples: Record<Arm, number[]> = { capable: [], unknown: [] };
  const roundP50: Record<Arm, number[]> = { capable: [], unknown: [] };
  const errors: Record<Arm, number> = { capable: 0, unknown: 0 };
  type Pair = { samples: number[]; errors: number; alternateSamples: number[]; alternateErrors: number };
  try {
    await deps.load({ scenario: "ttft", target: target("capable"), alternate: target("unknown"), concurrency: 1, perLane: 2 * sizes.warmUp, prompt });
    for (let i = 0; i < sizes.rounds; i++) {
      const [a, b] = i % 2 === 0 ? (["capable", "unknown"] as const) : (["unknown", "capable"] as const);
      const r = await deps.load<Pair>({ scenario: "ttft", target: target(a), alternate: target(b), concurrency: 1, perLane: 2 * sizes.streamsPerRound, prompt });
      for (const [arm, got, failed] of [
        [a, r.samples, r.errors],
        [b, r.alternateSamples, r.alternateErrors],
      ] as const) {
        samples[arm].push(...got);
        roundP50[arm].push(summary(got).p50);
        errors[arm] += failed;
      }
      await deps.simReset();
    }
  } finally {
    await gw.proc.stop();
  }
  const capable = summary(samples.capable);
  const unknown = summary(samples.unknown);
  const roundAddedMs = roundP50.capable.map((p, i) => p - roundP50.unknown[i]!);
  return {
    promptBytes: bytesOf(prompt),
    rounds: sizes.rounds,
    streamsPerRound: sizes.streamsPerRound,
    results: { capable: { ...capable, errors: errors.capable }, unknown: { ...unknown, errors: errors.unknown } },
    /** Pooled TTFT p50, capable − unknown (ms) and capable ÷ unknown. */
    addedMs: capable.p50 - unknown.p50,
    ratio: capable.p50 / unknown.p50,
    /** Each round's p50 difference (capable − unknown, both from the same run), in round order, and their median. */
    roundAddedMs,
    medianRoundAddedMs: summary(roundAddedMs).p50,
    /** routeByNeed on the two routes in this process, µs per call. */
    inProcessUs: await routeUs(prompt, sizes.routeBatches),
  };
}

export type NeedsResult = { ttft: Awaited<ReturnType<typeof ttftCost>>; count: Awaited<ReturnType<typeof countCost>> };

export async function needsScenario(sizes: NeedsSizes, deps: NeedsDeps): Promise<NeedsResult> {
  const count = await countCost(sizes);
  deps.log(
    `needs count, ${count.tokens} tokens (${count.messages} messages, ${count.bytes} B): p50 ${round(count.countMs.p50)} ms p99 ${round(count.countMs.p99)} ms over ${count.runs} runs (encoding load ${round(count.loadMs)} ms, first count ${round(count.firstMs)} ms); byte bound p50 ${round(count.boundMs.p50, 3)} ms (×${round(count.boundRatio, 0)}), JSON.stringify p50 ${round(count.stringifyMs.p50)} ms (×${round(count.stringifyRatio)})`,
  );
  const ttft = await ttftCost(sizes, deps);
  const r = ttft.results;
  deps.log(
    `needs ttft, ${ttft.promptBytes} B prompt, gRPC, 1 stream, ${ttft.rounds} rounds of ${ttft.streamsPerRound} per alias, alternated request by request: capable p50 ${round(r.capable.p50, 3)} ms, unknown p50 ${round(r.unknown.p50, 3)} ms (${ttft.addedMs >= 0 ? "+" : ""}${round(ttft.addedMs, 3)} ms, ×${round(ttft.ratio, 3)}; median of rounds ${round(ttft.medianRoundAddedMs, 3)} ms); errors ${r.capable.errors}/${r.unknown.errors}; in process routeByNeed ${round(ttft.inProcessUs.capable, 2)} vs ${round(ttft.inProcessUs.unknown, 2)} µs (+${round(ttft.inProcessUs.addedUs, 2)} µs)`,
  );
  return { ttft, count };
}

/** Milliseconds to 3 decimals, as text (the table's own rounding keeps 2). */
const ms3 = (n: number) => String(round(n, 3));

export function needsSection(r: NeedsResult): string {
  const t = r.ttft;
  const c = r.count;
  return [
    `## 9d. Routing by need (issue #29): TTFT of a ${t.promptBytes}-byte prompt through an alias with capabilities vs one the table does not know, gRPC edge, 1 stream, requests alternated between the aliases (${t.rounds} runs of ${t.streamsPerRound} each); counting a ${c.tokens}-token conversation in process`,
    table(
      ["alias", "TTFT p50 ms", "p99 ms", "streams", "errors", "routeByNeed in process µs"],
      [
        ["unknown model id, no capabilities (nothing to filter, no bound)", ms3(t.results.unknown.p50), ms3(t.results.unknown.p99), t.results.unknown.n, t.results.unknown.errors, round(t.inProcessUs.unknown, 2)],
        [
          `capabilities: one declared, one from the table (filter and byte bound; ${t.inProcessUs.capableTargetsKept} of 2 kept)`,
          ms3(t.results.capable.p50),
          ms3(t.results.capable.p99),
          t.results.capable.n,
          t.results.capable.errors,
          round(t.inProcessUs.capable, 2),
        ],
        ["added (ratio)", `${t.addedMs >= 0 ? "+" : ""}${ms3(t.addedMs)} (×${round(t.ratio, 3)})`, "", "", "", round(t.inProcessUs.addedUs, 2)],
      ],
    ),
    "",
    `Each run's p50 difference (capable − unknown, ms): ${t.roundAddedMs.map((x) => round(x, 3)).join(", ")}; their median ${round(t.medianRoundAddedMs, 3)}.`,
    "",
    table(
      ["", "p50 ms", "the count ÷ this"],
      [
        [`countedInputTokens (o200k), ${c.messages} messages, ${c.chars} characters, ${c.bytes} bytes: **${c.tokens} tokens** (${c.runs} runs after a warm-up; p99 ${round(c.countMs.p99)} ms)`, round(c.countMs.p50), "—"],
        [`promptTokenBound, the byte bound routeByNeed takes first (${c.bound})`, ms3(c.boundMs.p50), `×${round(c.boundRatio, 0)}`],
        ["JSON.stringify of the same request", ms3(c.stringifyMs.p50), `×${round(c.stringifyRatio, 1)}`],
      ],
    ),
    "",
    `Loading the encoding took ${round(c.loadMs)} ms; the first count after it (${c.firstTokens} tokens of the same kind) ${round(c.firstMs)} ms.`,
    "",
  ].join("\n");
}
