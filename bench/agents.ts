import { Agent, request } from "undici";
import { createSseDecoder } from "../src/sse/decoder.js";
import type { Proc } from "./procs.js";
import { table } from "./report.js";
import { round, summary } from "./stats.js";

/**
 * Coding agents' requests (issue #44): what the Messages and Responses
 * edges add to time to first token for a request the size Claude Code and
 * Codex send (about 40 KB: 20 tools, 3 system blocks) beside a minimal
 * one, and what carrying their cache marks, betas and metadata costs: the
 * same large request with and without them, interleaved request by request
 * in each lane (A B C C B A …) so that machine noise hits all alike. The
 * simulator's own Messages endpoint, asked the same, is the direct path.
 */

export interface AgentDeps {
  /** A gateway of the benchmark's own, its `sim` provider on the simulator's Anthropic wire. */
  readonly startGateway: (models: Record<string, unknown>, provider: Record<string, unknown>) => Promise<{ proc: Proc; url: string }>;
  readonly simOrigin: string;
  readonly log: (line: string) => void;
}

export interface AgentSizes {
  readonly levels: readonly number[];
  /** Streams per variant at each level (a quarter at concurrency 1), after `warmUp` untimed ones. */
  readonly streams: number;
  readonly warmUp: number;
}

const DESCRIPTION = "Runs the operation described by its input on the user's workspace and returns its output. ".repeat(14);

function toolSchemas(n: number) {
  return Array.from({ length: n }, (_, i) => ({
    name: `tool_${i}`,
    description: DESCRIPTION,
    schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Absolute path of the file to act on." },
        content: { type: "string", description: "What to write, when writing." },
        mode: { type: "string", enum: ["read", "write", "append", "list"] },
        limit: { type: "integer", minimum: 1, maximum: 2000 },
      },
      required: ["path", "mode"],
    },
  }));
}

const SYSTEM = ["You are an agent for software engineering tasks.", "Follow the repository's conventions. ".repeat(120), "Environment: linux, a git repository, today's date."];

type Variant = "minimal" | "agent" | "agent-marked";
const VARIANTS: readonly Variant[] = ["minimal", "agent", "agent-marked"];

/** A Messages body of each variant: `agent-marked` is `agent` with Claude Code's cache marks, metadata and thinking display. */
export function messagesBody(variant: Variant, model: string, prompt: string): Record<string, unknown> {
  if (variant === "minimal") return { model, max_tokens: 64, stream: true, messages: [{ role: "user", content: prompt }] };
  const marked = variant === "agent-marked";
  const mark = marked ? { cache_control: { type: "ephemeral" } } : {};
  const tools = toolSchemas(20);
  return {
    model,
    max_tokens: 32_000,
    stream: true,
    system: SYSTEM.map((text, i) => ({ type: "text", text, ...(i > 0 ? mark : {}) })),
    tools: tools.map((t, i) => ({ name: t.name, description: t.description, input_schema: t.schema, ...(marked && i === tools.length - 1 ? mark : {}) })),
    messages: [{ role: "user", content: [{ type: "text", text: prompt, ...mark }] }],
    ...(marked ? { metadata: { user_id: "user_bench_session_0001" } } : {}),
  };
}

/** The headers Claude Code sends beside a marked body. */
export const MARKED_HEADERS = {
  "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,fine-grained-tool-streaming-2025-05-14",
  "x-claude-code-session-id": "bench-session",
};

/** A Responses body of each variant: `agent-marked` adds Codex's prompt_cache_key, client_metadata and include. */
export function responsesBody(variant: Variant, model: string, prompt: string): Record<string, unknown> {
  if (variant === "minimal") return { model, stream: true, input: prompt };
  return {
    model,
    stream: true,
    instructions: SYSTEM.join("\n"),
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: prompt }] }],
    tools: toolSchemas(20).map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.schema, strict: false })),
    tool_choice: "auto",
    parallel_tool_calls: true,
    ...(variant === "agent-marked" ? { prompt_cache_key: "bench-session", client_metadata: { originator: "bench" }, include: ["reasoning.encrypted_content"], store: false } : {}),
  };
}

type Path = "messages" | "responses" | "direct";
const FIRST_TEXT: Record<Path, string> = { messages: "content_block_delta", responses: "response.output_text.delta", direct: "content_block_delta" };

async function firstTextMs(dispatcher: Agent, url: string, headers: Record<string, string>, body: Record<string, unknown>, path: Path): Promise<number> {
  const started = performance.now();
  const res = await request(url, { method: "POST", dispatcher, headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers }, body: JSON.stringify(body) });
  if (res.statusCode !== 200) throw new Error(`${path}: status ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`);
  const decoder = createSseDecoder({ maxEventSize: 1 << 24 });
  let first: number | undefined;
  for await (const bytes of res.body) {
    if (first !== undefined) continue;
    for (const event of decoder.push(bytes as Uint8Array)) {
      if (event.data.includes(`"type":"${FIRST_TEXT[path]}"`)) {
        first = performance.now() - started;
        break;
      }
    }
  }
  if (first === undefined) throw new Error(`${path}: no text`);
  return first;
}

export interface AgentResult {
  /** path → concurrency → variant → TTFT summary (ms). */
  readonly ttft: Record<string, Record<number, Record<string, { p50: number; p99: number; n: number }>>>;
  /** path → concurrency → p50(agent-marked) − p50(agent), ms: what carrying the marks costs. */
  readonly carryMs: Record<string, Record<number, number>>;
  /** path → concurrency → p50(agent) − direct p50(agent), ms: what the edge adds for an agent-sized request. */
  readonly overheadMs: Record<string, Record<number, number>>;
  readonly errors: number;
}

export async function agentScenario(sizes: AgentSizes, deps: AgentDeps): Promise<AgentResult> {
  const gateway = await deps.startGateway({ agent: { provider: "sim", model: "sim-1?tokens=2" } }, { kind: "anthropic", baseUrl: `${deps.simOrigin}/v1` });
  const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 30_000, headersTimeout: 600_000, bodyTimeout: 600_000 });
  const urls: Record<Path, string> = { messages: `${gateway.url}/v1/messages`, responses: `${gateway.url}/v1/responses`, direct: `${deps.simOrigin}/v1/messages` };
  const bodyOf = (path: Path, variant: Variant, prompt: string) => (path === "responses" ? responsesBody(variant, "agent", prompt) : messagesBody(variant, path === "direct" ? "sim-1?tokens=2" : "agent", prompt));
  const headersOf = (variant: Variant): Record<string, string> => (variant === "agent-marked" ? MARKED_HEADERS : {});
  const ttft: AgentResult["ttft"] = {};
  const carryMs: AgentResult["carryMs"] = {};
  const overheadMs: AgentResult["overheadMs"] = {};
  let errors = 0;
  try {
    for (const concurrency of sizes.levels) {
      const perLane = Math.max(1, Math.ceil((concurrency === 1 ? sizes.streams / 4 : sizes.streams) / concurrency));
      for (const path of ["messages", "responses", "direct"] as const) {
        const samples: Record<Variant, number[]> = { minimal: [], agent: [], "agent-marked": [] };
        const one = async (variant: Variant, prompt: string, timed: boolean) => {
          try {
            const ms = await firstTextMs(dispatcher, urls[path], headersOf(variant), bodyOf(path, variant, prompt), path);
            if (timed) samples[variant].push(ms);
          } catch (error) {
            errors++;
            if (errors <= 3) deps.log(`agents: ${(error as Error).message}`);
          }
        };
        await Promise.all(
          Array.from({ length: concurrency }, async (_, lane) => {
            for (let i = 0; i < sizes.warmUp; i++) await one(VARIANTS[i % 3]!, `warm ${lane} ${i}`, false);
            for (let i = 0; i < perLane; i++) {
              // A B C C B A: no variant is always the one after another.
              const order = i % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
              for (const variant of order) await one(variant, `Fix the failing test. (${lane}-${i})`, true);
            }
          }),
        );
        const byVariant = Object.fromEntries(VARIANTS.map((v) => [v, summary(samples[v])]));
        (ttft[path] ??= {})[concurrency] = byVariant;
        deps.log(`agents c=${concurrency} ${path}: ${VARIANTS.map((v) => `${v} p50 ${round(byVariant[v]!.p50)} ms`).join(", ")}`);
      }
      for (const path of ["messages", "responses"] as const) {
        const at = ttft[path]![concurrency]!;
        (carryMs[path] ??= {})[concurrency] = at["agent-marked"]!.p50 - at.agent!.p50;
      }
      (overheadMs.messages ??= {})[concurrency] = ttft.messages![concurrency]!.agent!.p50 - ttft.direct![concurrency]!.agent!.p50;
    }
  } finally {
    await dispatcher.close();
    await gateway.proc.stop();
  }
  return { ttft, carryMs, overheadMs, errors };
}

/** The report's section. */
export function agentSection(r: AgentResult): string {
  const rows: Array<Array<string | number>> = [];
  for (const [path, levels] of Object.entries(r.ttft)) {
    for (const [c, v] of Object.entries(levels)) {
      rows.push([path, c, v.minimal!.p50, v.agent!.p50, v["agent-marked"]!.p50, path === "direct" ? "—" : round(r.carryMs[path]![Number(c)]!), path === "messages" ? round(r.overheadMs.messages![Number(c)]!) : "—"]);
    }
  }
  return [
    "## Coding agents' requests (issue #44)",
    "",
    "TTFT p50 (ms) of a minimal request, a Claude Code/Codex-sized one (about 40 KB: 20 tools, 3 system blocks) without and with its cache marks, betas and metadata, interleaved in each lane. `carry` is marked − unmarked; `edge` is the Messages edge − the simulator asked directly, for the agent-sized request.",
    "",
    table(["path", "streams", "minimal", "agent", "agent, marked", "carry", "edge"], rows),
    "",
    `Errors: ${r.errors}.`,
  ].join("\n");
}
