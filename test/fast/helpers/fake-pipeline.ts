import type { ChatRequest } from "../../../src/core/chat-request.js";
import type { Delta } from "../../../src/core/delta.js";
import { pushFrom } from "../../../src/core/delta-sink.js";
import { GatewayError } from "../../../src/core/errors.js";
import type { ChatPipeline, DeltaStream, StreamContext } from "../../../src/pipeline/chat-pipeline.js";
import type { Principal } from "../../../src/tenancy/principal.js";
import { quotaHeaders } from "../../../src/tenancy/quota-headers.js";
import type { Tenancy } from "../../../src/tenancy/tenancy.js";

/** A pipeline and a tenancy scripted in memory, for the call layer and the edges above it. */

export const REQUEST: ChatRequest = { model: "sim", messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: [], sampling: { stop: [] }, metadata: { labels: {} } };
export const KEY: Principal = { name: "team-a", id: "aaaaaaaaaaaa", sha256: "a".repeat(64), source: "config", models: ["sim"], limits: {} } as unknown as Principal;
export const ADMIN_CREDENTIAL = "Bearer admin";

export const script = (responseId: string): Delta[] => [
  { type: "start", responseId, provider: "simulator", model: "sim-1", droppedParams: ["reasoning.effort"] },
  { type: "text", text: "hello " },
  { type: "text", text: "world" },
  { type: "usage", inputTokens: 3, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 },
  { type: "finish", reason: "stop" },
];

export interface FakePipeline extends ChatPipeline {
  readonly contexts: StreamContext[];
  /** Resolved when the stream of index `i` was closed (returned or aborted). */
  closed(i: number): Promise<void>;
}

/** A pipeline that reports the key's quota, then yields its script; `hold` stops it before the last delta until its signal aborts. */
export function fakePipeline(options: { hold?: boolean; refuse?: GatewayError } = {}): FakePipeline {
  const contexts: StreamContext[] = [];
  const closers: Array<() => void> = [];
  const closedPromises: Promise<void>[] = [];
  let count = 0;
  return {
    contexts,
    closed: (i) => closedPromises[i]!,
    catalog: () => [
      { id: "sim", provider: "simulator", upstreamModel: "sim-1" },
      { id: "other", provider: "simulator", upstreamModel: "sim-2" },
    ],
    relay(request, ctx, sink) {
      const deltas = this.stream(request, ctx);
      return pushFrom(deltas, sink, deltas.buffered);
    },
    stream(_request, ctx) {
      contexts.push(ctx);
      const index = count++;
      closedPromises[index] = new Promise((resolve) => (closers[index] = resolve));
      const deltas = script(`resp_${"0".repeat(31)}${index}`);
      let pending = deltas.length;
      async function* run(): AsyncGenerator<Delta, void, undefined> {
        try {
          if (ctx.summary) Object.assign(ctx.summary.headers, quotaHeaders({ requests: { limit: 10, remaining: 9, resetMs: 60_000 } }));
          if (options.refuse) throw options.refuse;
          for (const [i, delta] of deltas.entries()) {
            if (options.hold && i === deltas.length - 1) {
              await new Promise<void>((_, reject) => {
                if (ctx.signal.aborted) reject(ctx.signal.reason);
                ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
              });
            }
            pending--;
            yield delta;
          }
        } finally {
          closers[index]!();
        }
      }
      const generator = run() as DeltaStream;
      generator.buffered = () => Math.max(0, pending - 1);
      return generator;
    },
  };
}

/** Tag keys the fake tenancy keeps for allocation. */
export const TAG_KEYS: ReadonlySet<string> = new Set(["project", "env"]);

export const fakeTenancy: Pick<Tenancy, "identify" | "viewer" | "tagKeys"> = {
  tagKeys: () => TAG_KEYS,
  async identify(credential) {
    if (credential === undefined) throw new GatewayError("unauthenticated", "missing API key");
    if (credential !== "Bearer good") throw new GatewayError("unauthenticated", "invalid API key");
    return KEY;
  },
  async viewer(credential, edge) {
    if (credential === ADMIN_CREDENTIAL) return { sees: () => true };
    const principal = await this.identify(credential, edge);
    return { principal, sees: (alias: string) => principal?.models?.includes(alias) ?? true };
  },
};
