import { randomBytes } from "node:crypto";
import type { UsageRecord } from "../../../src/usage/usage-record.js";
import { baseUrlFor, type Harness, type HarnessOptions, startHarness } from "../../helpers/harness.js";
import { type TenancyEvents, tenancyEvents } from "../../helpers/tenancy-events.js";

/** The upstream wires a client's request can be served over (the gateway's provider kinds). */
export type Wire = "openai" | "anthropic" | "gemini" | "openai-responses";
export const WIRES: readonly Wire[] = ["openai", "anthropic", "gemini", "openai-responses"];

/** The simulator model behind the alias the clients use: short answers, a tool loop that ends (issue 44 §4). */
export const AGENT_MODEL = "sim-1?tokens=8&tools=1";

/**
 * A price of one micro-dollar per request whatever its size (the smallest
 * price the gateway represents: a cost is rounded up per request), and a
 * budget of one micro-dollar: the first request is admitted and spends it,
 * the next is refused with 402. Whatever the client's prompt, max_tokens
 * or tool list weigh, the refusal comes on its second request, mid-session.
 */
const MICRO_PRICE = { inputPerMTok: 0.000001, outputPerMTok: 0.000001 };

/** Budget tests a file may hold per gateway: each spends its own key's budget. */
const TIGHT_KEYS = 4;

export interface ClientGateway {
  readonly h: Harness;
  readonly url: string;
  /** A virtual key without limits. */
  readonly key: string;
  /** Virtual keys whose budget pays for one request each: one per budget test of a file. */
  readonly tightKeys: readonly string[];
  readonly events: TenancyEvents;
  /** Usage records of one key (`key`, or one of `tightKeys`), in the order they were written. */
  records(key: string): UsageRecord[];
  close(): Promise<void>;
}

/**
 * The gateway the clients talk to: the real simulator behind one upstream
 * `wire`, aliases `agent` (tool loop) and `embed`, and two virtual keys.
 */
export async function startClientGateway(wire: Wire, options: Pick<HarnessOptions, "responses"> = {}): Promise<ClientGateway> {
  const key = `sk-client-${randomBytes(12).toString("hex")}`;
  const tightKeys = Array.from({ length: TIGHT_KEYS }, () => `sk-client-tight-${randomBytes(12).toString("hex")}`);
  const names = new Map<string, string>([[key, "client"], ...tightKeys.map((k, i): [string, string] => [k, `tight-${i}`])]);
  const events = tenancyEvents();
  const h = await startHarness({
    routing: (sim) => ({
      providers: {
        simulator: { kind: wire, baseUrl: baseUrlFor(sim, wire), breaker: { failures: 10_000 } },
        embedder: { kind: "openai", baseUrl: sim.openAiBaseUrl },
      },
      models: {
        agent: { provider: "simulator", model: AGENT_MODEL, price: MICRO_PRICE },
        // The same loop with reasoning first: signed thinking on the Anthropic wire, reasoning on the others.
        "agent-thinking": { provider: "simulator", model: `${AGENT_MODEL}&reasoning=6`, price: MICRO_PRICE },
        embed: { provider: "embedder", model: "sim-embed", price: MICRO_PRICE },
      },
    }),
    env: Object.fromEntries([["CLIENT_KEY", key], ...tightKeys.map((k, i) => [`TIGHT_KEY_${i}`, k])]),
    auth: {
      keys: [{ name: "client", keyEnv: "CLIENT_KEY" }, ...tightKeys.map((_, i) => ({ name: `tight-${i}`, keyEnv: `TIGHT_KEY_${i}`, budget: { usd: 0.000001, period: "month" as const } }))],
    },
    observer: events.observer,
    ...options,
  });
  return {
    h,
    url: h.url,
    key,
    tightKeys,
    events,
    records: (k) => events.usage.map((e) => e.record).filter((r) => r.key === names.get(k)),
    close: () => h.close(),
  };
}

/** A fresh nonce a tool prints: finding it in the client's answer proves the tool ran and its output came back. */
export const nonce = (label: string) => `${label}-${randomBytes(6).toString("hex")}`;
