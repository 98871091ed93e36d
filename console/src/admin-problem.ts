import { Code, ConnectError } from "@connectrpc/connect";

type Page = "spend" | "batches" | "mcp" | "keys" | "teams" | "business-lines";

/** Where what the tenancy pages create lives, said once for the three of them. */
const KEPT = "created there live in the tenant store: store.redis shares them between replicas; without it they stay in this replica's memory until it restarts (docs/tenancy.md).";

const NEEDS: Record<Page, { readonly page: string; readonly also: string }> = {
  spend: { page: "Spend", also: 'Its figures come from the spend ledger, which needs store.postgres too (docs/tenancy.md, "The spend ledger").' },
  batches: { page: "Batches", also: "Batches themselves need no more: they run on the embedded database without store.postgres (docs/batches.md)." },
  mcp: { page: "MCP", also: "The MCP gateway itself needs no more: its servers are mcp.servers (docs/mcp.md)." },
  keys: { page: "Keys", also: `Keys ${KEPT}` },
  teams: { page: "Teams", also: `Teams ${KEPT}` },
  "business-lines": { page: "Business lines", also: `Business lines ${KEPT}` },
};

/**
 * What a page that reads the admin service says when it cannot: what to
 * configure. On the built-in default there is no admin key, so the admin
 * service is not served, and the page showed the RPC's own words
 * ("…GetSpendReport is not implemented").
 */
export function adminProblem(error: unknown, page: Page): string {
  const e = ConnectError.from(error);
  if (e.code !== Code.Unimplemented) return e.rawMessage;
  const { page: name, also } = NEEDS[page];
  return `The ${name} page reads the admin service, which this gateway serves only with an admin key: set auth.adminKeyEnv to the name of an environment variable holding one, and restart. ${also}`;
}

/**
 * Why the gateway refused a change, for the form that asked: its own
 * words and the status, so "already exists" and "failed precondition"
 * read differently from a lost connection.
 */
export function refusal(error: unknown): Error {
  const e = ConnectError.from(error);
  // Unknown and Unavailable are what a lost connection or a proxy's page become: no refusal by the gateway.
  const who = e.code === Code.Unknown || e.code === Code.Unavailable ? "The call failed" : "The gateway refused it";
  return new Error(`${who}: ${e.rawMessage} (${Code[e.code] ?? "error"}).`);
}
