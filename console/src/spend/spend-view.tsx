import { useEffect, useState } from "preact/hooks";
import { adminProblem } from "../admin-problem.js";
import { count, usd } from "../format.js";
import { BudgetGauges } from "./budget-gauges.js";
import { SpendChart } from "./spend-chart.js";
import { type Grouping, loadSpend, type Range, type Ranked, type SpendData } from "./spend-data.js";

function Top({ title, rows, testid }: { readonly title: string; readonly rows: readonly (Ranked & { readonly server?: string })[]; readonly testid: string }) {
  const withServer = rows.some((r) => r.server !== undefined);
  return (
    <section>
      <h2>{title}</h2>
      {rows.length === 0 ? (
        <p class="muted">Nothing spent in this range.</p>
      ) : (
        <table data-testid={testid}>
          <thead>
            <tr>
              <th>name</th>
              {withServer && <th>server</th>}
              <th>{withServer ? "calls" : "requests"}</th>
              <th>spend</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.name}>
                <td>{r.name}</td>
                {withServer && <td>{r.server}</td>}
                <td>{count(r.requests)}</td>
                <td data-testid={`${testid}-${r.name}`}>{usd(r.costMicros)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/**
 * The Spend page: the ledger through GetSpendReport. Spend over time
 * stacked by business line or team, the top keys and aliases, what MCP
 * tool calls spent and on which tools (by server), what the cache saved,
 * and every budget's gauge with the alert thresholds.
 */
export function SpendView() {
  const [range, setRange] = useState<Range>("24h");
  const [grouping, setGrouping] = useState<Grouping>("team");
  const [reload, setReload] = useState(0);
  const [data, setData] = useState<SpendData | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  useEffect(() => {
    let current = true;
    setProblem(undefined);
    loadSpend(range, grouping).then(
      (loaded) => current && setData(loaded),
      (error: unknown) => current && setProblem(adminProblem(error, "spend")),
    );
    return () => {
      current = false;
    };
  }, [range, grouping, reload]);

  return (
    <div class="spend">
      <div class="controls">
        <label>
          Range{" "}
          <select data-testid="spend-range" value={range} onChange={(e) => setRange((e.target as HTMLSelectElement).value as Range)}>
            <option value="24h">last 24 hours</option>
            <option value="7d">last 7 days</option>
            <option value="30d">last 30 days</option>
          </select>
        </label>
        <label>
          Stack by{" "}
          <select data-testid="spend-grouping" value={grouping} onChange={(e) => setGrouping((e.target as HTMLSelectElement).value as Grouping)}>
            <option value="team">team</option>
            <option value="business_line">business line</option>
          </select>
        </label>
        <button type="button" data-testid="spend-refresh" onClick={() => setReload((n) => n + 1)}>
          Refresh
        </button>
      </div>
      {problem !== undefined ? (
        <p class="bad" data-testid="spend-problem">
          {problem}
        </p>
      ) : !data ? (
        <p class="muted">Reading the ledger…</p>
      ) : (
        <>
          <div class="tiles">
            <div class="tile">
              <div class="label">Spend</div>
              <div class="value" data-testid="spend-total">
                {usd(data.totals.costMicros)}
              </div>
            </div>
            <div class="tile">
              <div class="label">Requests</div>
              <div class="value" data-testid="spend-requests">
                {count(data.totals.requests)}
              </div>
            </div>
            <div class="tile">
              <div class="label">MCP tool calls</div>
              <div class="value" data-testid="spend-tools">
                {usd(data.tools.costMicros)}
              </div>
              <div class="muted">{count(data.tools.requests)} calls</div>
            </div>
            <div class="tile">
              <div class="label">Saved by the cache</div>
              <div class="value" data-testid="spend-saved">
                {usd(data.totals.savedMicros)}
              </div>
            </div>
          </div>
          <section>
            <h2>Spend over time (UTC), by {grouping === "team" ? "team" : "business line"}</h2>
            <SpendChart series={data.series} />
          </section>
          <section>
            <h2>Budgets this period</h2>
            {data.gauges.length === 0 ? <p class="muted">No key, team or business line has a budget.</p> : <BudgetGauges gauges={data.gauges} thresholds={data.thresholds} />}
          </section>
          <div class="pair">
            <Top title="Top keys" rows={data.topKeys} testid="top-keys" />
            <Top title="Top aliases" rows={data.topAliases} testid="top-aliases" />
          </div>
          <Top title="Top MCP tools" rows={data.topTools} testid="top-tools" />
        </>
      )}
    </div>
  );
}
