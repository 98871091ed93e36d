import { isToolDirective } from "./tool-directives.js";

/**
 * Per-request behaviour of the simulator. Knobs come from the model name
 * (`sim-1?tokens=5&delay_ms=10`, so a gateway alias can fix them) and are
 * overridden by a `#sim key=value ...` line in any message (so one test can
 * steer one request through an unmodified gateway).
 */
export interface Knobs {
  /** Text tokens to stream. */
  readonly tokens: number;
  /** Reasoning tokens streamed before the text. */
  readonly reasoning: number;
  readonly seed: number;
  /** Delay before response headers. */
  readonly headersMs: number;
  /** Delay between headers and the first event. */
  readonly ttftMs: number;
  /** Delay between events. */
  readonly delayMs: number;
  /** Parallel tool calls streamed after the text. */
  readonly tools: number;
  /** Characters each text token is padded to (for large-volume tests). */
  readonly tokenChars: number;
  /**
   * Bytes of every text token, exactly (0: the seeded words as they are): ASCII,
   * so that bytes, characters and UTF-16 units agree and a client can count
   * deltas by text length (the public streaming profile's 16-byte deltas).
   */
  readonly tokenBytes: number;
  /**
   * Tokens on a fixed clock (0: `delay_ms` after each write instead): the
   * k-th token is due `k × interval_ms` after the first, so timer lateness
   * and write time never accumulate into the cadence; a late token goes at
   * once. The public streaming profile's 20 ms between deltas.
   */
  readonly intervalMs: number;
  /** How events map to socket writes. */
  readonly chunking: "event" | "random" | "bulk";
  readonly eol: "lf" | "crlf" | "cr";
  /** A comment line every N events (0: never); also one before the first event. */
  readonly pingEvery: number;
  /** A comment line every N ms of silence (0: never), including before the first event. */
  readonly pingMs: number;
  /** Report usage: per the request's stream_options, always, or never. */
  readonly usage: "auto" | "always" | "never";
  readonly fail: Failure;
  /** Tokens written before a mid-stream failure. */
  readonly failAt: number;
  /** HTTP status for `fail=status`. */
  readonly status: number;
  /** Retry-After seconds sent with `fail=status`. */
  readonly retryAfter?: number;
  /** Size of the event sent by `fail=oversized`. */
  readonly oversizedBytes: number;
  /**
   * Tokens written before the stream holds, silent, until a test releases
   * its tag (`records.release`, `POST /_sim/release?tag=`); unset: never holds.
   */
  readonly holdAt?: number;
  /** A label tests use to find this request in the simulator's records. */
  readonly tag?: string;
  /** Redacted thinking blocks after the reasoning (Anthropic only; others have none). */
  readonly redacted: number;
  /** The class of error `fail=error_event` reports. */
  readonly inband: InBandKind;
  /** Whether the simulated model has native structured outputs; without, a schema request gets a 400. */
  readonly structured: boolean;
  /**
   * Names a sequence of requests that share a counter, for behaviour that
   * depends on earlier requests: `fail_first`, `fail_rate`, `slow_every`.
   * Defaults to the model name.
   */
  readonly script?: string;
  /** Only the first N requests of the script fail (with `fail`); later ones succeed. */
  readonly failFirst?: number;
  /** The share of the script's requests that fail (with `fail`), decided by a seeded draw per request. */
  readonly failRate?: number;
  /** Every Nth request of the script waits `slow_ttft_ms` before its first event instead of `ttft_ms`. */
  readonly slowEvery?: number;
  readonly slowTtftMs?: number;
  /** Embedding models: the dimensions of a vector when the request names none. */
  readonly dims?: number;
  /**
   * Say back the request's last text (without its `#sim` line) in pieces of
   * 3 characters, and put it in every tool call's arguments as `note`: what
   * tests of rewritten prompts (PII placeholders) read back.
   */
  readonly echo: boolean;
  /**
   * Write `tokens` whatever the request's max_tokens says: an upstream that
   * ignores the limit, what the gateway's own cut is tested against. By
   * default the simulator stops at max_tokens with finish `length`, as providers do.
   */
  readonly ignoreMaxTokens: boolean;
}

/** In-band error classes, each rendered in every format's own words. */
export type InBandKind = "server" | "rate_limit" | "quota" | "auth";

export type Failure = "none" | "status" | "reset_before_headers" | "reset" | "drop" | "stall" | "malformed" | "oversized" | "error_event";

const FAILURES: readonly Failure[] = ["none", "status", "reset_before_headers", "reset", "drop", "stall", "malformed", "oversized", "error_event"];

const DEFAULTS: Knobs = {
  tokens: 20,
  reasoning: 0,
  seed: 1,
  headersMs: 0,
  ttftMs: 0,
  delayMs: 0,
  tools: 0,
  tokenChars: 0,
  tokenBytes: 0,
  intervalMs: 0,
  chunking: "event",
  eol: "lf",
  pingEvery: 0,
  pingMs: 0,
  usage: "auto",
  fail: "none",
  failAt: 0,
  status: 500,
  oversizedBytes: 2 * 1024 * 1024,
  redacted: 0,
  inband: "server",
  structured: true,
  echo: false,
  ignoreMaxTokens: false,
};

function int(value: string, name: string, max = 10_000_000): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > max) throw new Error(`simulator knob ${name} must be an integer in 0..${max}`);
  return n;
}

function ratio(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new Error(`simulator knob ${name} must be a number in 0..1`);
  return n;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], name: string): T {
  if (!(allowed as readonly string[]).includes(value)) throw new Error(`simulator knob ${name} must be one of ${allowed.join(", ")}`);
  return value as T;
}

function apply(knobs: Knobs, pairs: Iterable<[string, string]>): Knobs {
  const k: { -readonly [P in keyof Knobs]: Knobs[P] } = { ...knobs };
  for (const [key, value] of pairs) {
    switch (key) {
      case "tokens":
        k.tokens = int(value, key);
        break;
      case "reasoning":
        k.reasoning = int(value, key);
        break;
      case "seed":
        k.seed = int(value, key, 2 ** 31);
        break;
      case "headers_ms":
        k.headersMs = int(value, key, 600_000);
        break;
      case "ttft_ms":
        k.ttftMs = int(value, key, 600_000);
        break;
      case "delay_ms":
        k.delayMs = int(value, key, 600_000);
        break;
      case "tools":
        k.tools = int(value, key, 16);
        break;
      case "token_chars":
        k.tokenChars = int(value, key, 1_000_000);
        break;
      case "token_bytes":
        k.tokenBytes = int(value, key, 1_000_000);
        break;
      case "interval_ms":
        k.intervalMs = int(value, key, 600_000);
        break;
      case "chunking":
        k.chunking = oneOf(value, ["event", "random", "bulk"], key);
        break;
      case "eol":
        k.eol = oneOf(value, ["lf", "crlf", "cr"], key);
        break;
      case "ping_every":
        k.pingEvery = int(value, key);
        break;
      case "ping_ms":
        k.pingMs = int(value, key, 600_000);
        break;
      case "usage":
        k.usage = oneOf(value, ["auto", "always", "never"], key);
        break;
      case "fail":
        k.fail = oneOf(value, FAILURES, key);
        break;
      case "fail_at":
        k.failAt = int(value, key);
        break;
      case "status":
        k.status = int(value, key, 599);
        break;
      case "retry_after":
        k.retryAfter = int(value, key, 86_400);
        break;
      case "oversized_bytes":
        k.oversizedBytes = int(value, key, 256 * 1024 * 1024);
        break;
      case "hold_at":
        k.holdAt = int(value, key);
        break;
      case "tag":
        k.tag = value;
        break;
      case "script":
        k.script = value;
        break;
      case "fail_first":
        k.failFirst = int(value, key);
        break;
      case "fail_rate":
        k.failRate = ratio(value, key);
        break;
      case "slow_every":
        k.slowEvery = int(value, key);
        break;
      case "slow_ttft_ms":
        k.slowTtftMs = int(value, key, 600_000);
        break;
      case "redacted":
        k.redacted = int(value, key, 8);
        break;
      case "inband":
        k.inband = oneOf(value, ["server", "rate_limit", "quota", "auth"], key);
        break;
      case "structured":
        k.structured = oneOf(value, ["0", "1"], key) === "1";
        break;
      case "ignore_max_tokens":
        k.ignoreMaxTokens = oneOf(value, ["0", "1"], key) === "1";
        break;
      case "echo":
        k.echo = oneOf(value, ["0", "1"], key) === "1";
        break;
      case "dims":
        k.dims = Math.max(1, int(value, key, 4_096));
        break;
      default:
        throw new Error(`unknown simulator knob ${key}`);
    }
  }
  return k;
}

const DIRECTIVE = /^#sim[ \t]+(.+)$/gm;

/** The first knob line of a text (tool directives, `#sim call=…`, are the tool loop's: tool-directives.ts). */
function knobLine(text: string): string | undefined {
  for (const match of text.matchAll(DIRECTIVE)) if (!isToolDirective(match[1]!)) return match[1]!;
  return undefined;
}

/**
 * Applies a request's place in its script: the `n`th request (from 1) with
 * the same script key. Pure, so the same sequence replays the same way.
 */
export function applyScript(knobs: Knobs, n: number, draw: (n: number) => number): Knobs {
  let k: Knobs = knobs;
  if (k.failFirst !== undefined && n > k.failFirst) k = { ...k, fail: "none" };
  if (k.failRate !== undefined && draw(n) >= k.failRate) k = { ...k, fail: "none" };
  if (k.slowEvery !== undefined && k.slowEvery > 0 && n % k.slowEvery === 0) k = { ...k, ttftMs: k.slowTtftMs ?? k.ttftMs };
  return k;
}

/** Knobs for one request, from its model name and message texts. Throws on an unknown or bad knob. */
export function parseKnobs(model: string, texts: readonly string[]): Knobs {
  let knobs = DEFAULTS;
  const q = model.indexOf("?");
  if (q >= 0) knobs = apply(knobs, new URLSearchParams(model.slice(q + 1)));
  for (const text of texts) {
    const line = knobLine(text);
    if (line !== undefined)
      knobs = apply(
        knobs,
        line
          .trim()
          .split(/[\s&]+/)
          .map((pair): [string, string] => {
            const eq = pair.indexOf("=");
            return eq < 0 ? [pair, ""] : [pair.slice(0, eq), pair.slice(eq + 1)];
          }),
      );
  }
  return knobs;
}
