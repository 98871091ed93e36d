import type { ToolAccounting, ToolCallFacts, ToolCallOutcome } from "./contract.js";

/** One settled tool call, as the console lists it: names and numbers, never arguments or results. */
export interface RecentToolCall {
  /** Epoch milliseconds, when it was admitted. */
  readonly at: number;
  readonly keyId?: string;
  readonly keyName?: string;
  readonly server: string;
  readonly tool: string;
  readonly outcome: ToolCallOutcome;
  readonly durationMs: number;
  readonly resultBytes: number;
  /** Absent on calls read back from the ledger, which does not keep it. */
  readonly via?: ToolCallFacts["via"];
  readonly priceUsd: number;
}

/** The last calls of this replica, for the console while there is no ledger to read them from. */
export interface RecentToolCalls {
  add(call: RecentToolCall): void;
  /** Newest first, at most `count`. */
  latest(count: number): RecentToolCall[];
}

/** Calls kept: enough for a page, bounded whatever the traffic. */
export const RECENT_TOOL_CALLS = 500;

/** A fixed ring: adding is O(1) and never allocates past `capacity` entries. */
export function createRecentToolCalls(capacity = RECENT_TOOL_CALLS): RecentToolCalls {
  const ring: RecentToolCall[] = [];
  let next = 0;
  return {
    add(call) {
      if (ring.length < capacity) ring.push(call);
      else ring[next] = call;
      next = (next + 1) % capacity;
    },
    latest(count) {
      const out: RecentToolCall[] = [];
      for (let i = 1; i <= Math.min(count, ring.length); i++) out.push(ring[(next - i + capacity * 2) % capacity]!);
      return out;
    },
  };
}

/**
 * Accounting that also leaves each settled call in `recent`: wraps
 * whatever ToolAccounting the toolbox is given, so the console sees calls
 * however (and whether) they are charged.
 */
export function withRecentCalls(accounting: ToolAccounting, recent: RecentToolCalls, now: () => number = Date.now): ToolAccounting {
  return {
    async admit(caller, facts, signal) {
      const charge = await accounting.admit(caller, facts, signal);
      const at = now();
      const key = caller.principal;
      return {
        settle(settlement) {
          charge.settle(settlement);
          recent.add({
            at,
            ...(key ? { keyId: key.id, keyName: key.name } : {}),
            server: facts.server,
            tool: facts.tool,
            outcome: settlement.outcome,
            durationMs: settlement.durationMs,
            resultBytes: settlement.resultBytes,
            via: facts.via,
            priceUsd: facts.priceUsd,
          });
        },
      };
    },
  };
}
