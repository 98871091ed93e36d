import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import type { GetMcpOverviewResponse, McpGrantHolder } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { adminProblem } from "../admin-problem.js";
import { admin } from "../api.js";
import { count, ms, usd } from "../format.js";
import { utcDateTime } from "../time-format.js";

/** How often the page reads the overview again while it is shown. */
const REFRESH_MS = 5_000;
/** Recent calls shown. */
const CALLS = 50;

const LEVEL_NAMES: Readonly<Record<string, string>> = { business_line: "business line", team: "team", key: "key" };
const GOOD_STATES: ReadonlySet<string> = new Set(["up"]);
const GOOD_OUTCOMES: ReadonlySet<string> = new Set(["ok"]);

const list = (items: readonly string[], none: string) => (items.length === 0 ? none : items.join(", "));

/** What a grant lets through, in one line: its servers, then its allow and deny globs. */
function grantText(g: McpGrantHolder): string {
  const parts = [`servers: ${list(g.servers, "all")}`];
  if (g.allow.length > 0) parts.push(`allow: ${g.allow.join(", ")}`);
  if (g.deny.length > 0) parts.push(`deny: ${g.deny.join(", ")}`);
  return parts.join("; ");
}

function bytes(n: bigint): string {
  const v = Number(n);
  return v >= 1024 * 1024 ? `${(v / 1024 / 1024).toFixed(1)} MiB` : v >= 1024 ? `${(v / 1024).toFixed(1)} KiB` : `${v} B`;
}

/**
 * The MCP page: the servers behind `/mcp` with their health and the tools
 * they expose, who holds a grant (business lines, teams and keys,
 * configured and runtime), and the latest tool calls, all through
 * AdminService.GetMcpOverview, read again every few seconds while the
 * page is open.
 */
export function McpView() {
  const [overview, setOverview] = useState<GetMcpOverviewResponse | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  useEffect(() => {
    let current = true;
    const load = () =>
      admin.getMcpOverview({ recentCalls: CALLS }).then(
        (answer) => {
          if (!current) return;
          setProblem(undefined);
          setOverview(answer);
        },
        (error: unknown) => current && setProblem(adminProblem(error, "mcp")),
      );
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, []);

  if (problem !== undefined)
    return (
      <p class="bad" data-testid="mcp-problem">
        {problem}
      </p>
    );
  if (!overview) return <p class="muted">Reading the MCP gateway…</p>;
  if (overview.servers.length === 0)
    return (
      <p class="muted" data-testid="mcp-empty">
        No MCP server is configured (mcp.servers; docs/mcp.md).
      </p>
    );
  return (
    <>
      <section>
        <h2>Servers</h2>
        <table data-testid="mcp-servers">
          <thead>
            <tr>
              <th>server</th>
              <th>transport</th>
              <th>identity</th>
              <th>health</th>
              <th>tools</th>
            </tr>
          </thead>
          <tbody>
            {overview.servers.map((s) => (
              <tr key={s.name} data-testid={`mcp-server-${s.name}`}>
                <td>{s.name}</td>
                <td>{s.transport}</td>
                <td>{s.authMode === "per-key" ? "per-key token" : "gateway's secret"}</td>
                <td class={s.state === "" ? "" : GOOD_STATES.has(s.state) ? "ok" : "bad"} data-testid={`mcp-health-${s.name}`} title={s.lastError}>
                  {s.state === "" ? "not connected" : s.state.replace("_", " ")}
                  {s.restarts > 0 ? ` (${s.restarts} restarts)` : ""}
                </td>
                <td class="target" data-testid={`mcp-tools-${s.name}`}>
                  {s.tools.length === 0 ? "–" : `${count(s.tools.length)}: ${s.tools.join(", ")}`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section>
        <h2>Grants</h2>
        {overview.grants.length === 0 ? (
          <p class="muted" data-testid="mcp-no-grants">
            No key, team or business line holds a grant: no key sees any tool.
          </p>
        ) : (
          <table data-testid="mcp-grants">
            <thead>
              <tr>
                <th>level</th>
                <th>name</th>
                <th>defined in</th>
                <th>grant</th>
              </tr>
            </thead>
            <tbody>
              {overview.grants.map((g) => (
                <tr key={`${g.level}/${g.id}`} data-testid={`mcp-grant-${g.level}-${g.name}`}>
                  <td>{LEVEL_NAMES[g.level] ?? g.level}</td>
                  <td title={g.id}>{g.name}</td>
                  <td>{g.source === "runtime" ? "admin API" : "configuration"}</td>
                  <td class="target">{grantText(g)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section>
        <h2>Recent tool calls, newest first</h2>
        {overview.recentCalls.length === 0 ? (
          <p class="muted" data-testid="mcp-no-calls">
            No tool call on this replica yet.
          </p>
        ) : (
          <table data-testid="mcp-calls">
            <thead>
              <tr>
                <th>time</th>
                <th>key</th>
                <th>tool</th>
                <th>outcome</th>
                <th>duration</th>
                <th>result</th>
                <th>price</th>
                <th>via</th>
              </tr>
            </thead>
            <tbody>
              {overview.recentCalls.map((c, i) => (
                <tr key={i} data-testid="mcp-call">
                  <td>{c.time ? utcDateTime(timestampDate(c.time).getTime()) : "–"}</td>
                  <td title={c.keyId}>{c.keyName || c.keyId || "–"}</td>
                  <td>{c.tool}</td>
                  <td class={GOOD_OUTCOMES.has(c.outcome) ? "ok" : "bad"}>{c.outcome.replace("_", " ")}</td>
                  <td>{ms(Number(c.durationMs))}</td>
                  <td>{bytes(c.resultBytes)}</td>
                  <td>{usd(c.priceUsdMicros)}</td>
                  <td>{c.via}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
