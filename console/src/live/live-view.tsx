import type { ComponentChildren } from "preact";
import { BreakerState, type WatchStatsResponse } from "../../../gen/sluice/admin/v1/stats_pb.js";
import { count, ms, rate, usd } from "../format.js";
import type { Feed } from "../use-stats.js";
import { CacheTable } from "./cache-table.js";
import { TtftChart } from "./ttft-chart.js";

function Tile(props: { readonly label: string; readonly testid: string; readonly children: ComponentChildren }) {
  return (
    <div class="tile">
      <div class="label">{props.label}</div>
      <div class="value" data-testid={props.testid}>
        {props.children}
      </div>
    </div>
  );
}

const BREAKER_NAMES: Record<BreakerState, string> = {
  [BreakerState.UNSPECIFIED]: "unknown",
  [BreakerState.CLOSED]: "closed",
  [BreakerState.HALF_OPEN]: "half-open",
  [BreakerState.OPEN]: "open",
};

/** What is left of a per-minute limit, "3 of 10"; "no limit" without one, "–" when the store could not say. */
function left(remaining: number | bigint | undefined, limit: number | bigint | undefined): string {
  if (limit === undefined) return "no limit";
  return `${remaining === undefined ? "–" : count(remaining)} of ${count(limit)}`;
}

function Section(props: { readonly title: string; readonly empty: boolean; readonly emptyText: string; readonly children: ComponentChildren }) {
  return (
    <section>
      <h2>{props.title}</h2>
      {props.empty ? <p class="muted">{props.emptyText}</p> : props.children}
    </section>
  );
}

function Numbers({ s }: { readonly s: WatchStatsResponse }) {
  const attempts = s.attempts;
  return (
    <div class="tiles">
      <Tile label="Active streams" testid="active-streams">
        {count(s.activeStreams)}
      </Tile>
      <Tile label="Deltas/s" testid="deltas-per-second">
        {rate(s.deltasPerSecond)}
      </Tile>
      <Tile label={`TTFT p50 (${s.ttft?.windowSeconds ?? 60} s)`} testid="ttft-p50">
        {ms(s.ttft?.p50Ms)}
      </Tile>
      <Tile label={`TTFT p99 (${s.ttft?.windowSeconds ?? 60} s)`} testid="ttft-p99">
        {ms(s.ttft?.p99Ms)}
      </Tile>
      <Tile label="Client aborts" testid="client-aborts">
        {count(s.clientAborts)}
      </Tile>
      <Tile label="Retries / failovers" testid="retries">
        {count(attempts?.retries ?? 0n)} / {count(attempts?.failovers ?? 0n)}
      </Tile>
      <Tile label="Hedges won / started" testid="hedges">
        {count(attempts?.hedgesWon ?? 0n)} / {count(attempts?.hedgesStarted ?? 0n)}
      </Tile>
    </div>
  );
}

/** The live page: what WatchStats sent last, redrawn every second. */
export function LiveView({ feed }: { readonly feed: Feed }) {
  const s = feed.snapshot;
  if (!s) return <p class="muted">Connecting to the gateway…</p>;
  return (
    <div class="live">
      <Numbers s={s} />
      <section>
        <h2>Time to first token and deltas per second, last five minutes (UTC)</h2>
        <TtftChart series={s.series} />
      </section>
      <div class="columns">
        <Section title="Streams by outcome" empty={s.outcomes.length === 0} emptyText="No stream has ended yet.">
          <table data-testid="outcomes">
            <thead>
              <tr>
                <th>outcome</th>
                <th>last minute</th>
                <th>since start</th>
              </tr>
            </thead>
            <tbody>
              {s.outcomes.map((o) => (
                <tr key={o.outcome} data-testid={`outcome-${o.outcome}`}>
                  <td class={o.outcome === "ok" ? "ok" : "bad"}>{o.outcome}</td>
                  <td>{count(o.lastMinute)}</td>
                  <td data-testid={`outcome-${o.outcome}-total`}>{count(o.total)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
        <Section title="Circuit breakers" empty={s.breakers.length === 0} emptyText="No target has been used yet.">
          <table data-testid="breakers">
            <thead>
              <tr>
                <th>alias</th>
                <th>target</th>
                <th>state</th>
              </tr>
            </thead>
            <tbody>
              {s.breakers.map((b) => (
                <tr key={b.target} data-testid={`breaker-${b.target}`}>
                  {/* Named as callers name it; a target several aliases share has one breaker. */}
                  <td data-testid={`breaker-${b.target}-aliases`}>{b.aliases.length > 0 ? b.aliases.join(", ") : "(no alias now)"}</td>
                  <td class="muted target">{b.target}</td>
                  <td class={b.state === BreakerState.CLOSED ? "ok" : "bad"}>{BREAKER_NAMES[b.state]}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
        <Section title="Provider queues" empty={s.queues.length === 0} emptyText="No provider has been used yet.">
          <table data-testid="queues">
            <thead>
              <tr>
                <th>provider</th>
                <th>in flight</th>
                <th>waiting</th>
              </tr>
            </thead>
            <tbody>
              {s.queues.map((q) => (
                <tr key={q.provider}>
                  <td>{q.provider}</td>
                  <td>{count(q.inFlight)}</td>
                  <td>{count(q.waiting)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      </div>
      <Section title="Keys (current period)" empty={s.keys.length === 0} emptyText="No virtual keys: the gateway runs without tenancy keys.">
        <table data-testid="keys">
          <thead>
            <tr>
              <th>key</th>
              <th>requests</th>
              <th>tokens in / out</th>
              <th>spend</th>
              <th>budget left</th>
              <th>left this minute (requests, tokens)</th>
              <th>streams in use / limit</th>
            </tr>
          </thead>
          <tbody>
            {s.keys.map((k) => (
              <tr key={k.name}>
                <td>{k.name}</td>
                <td>{count(k.requests)}</td>
                <td>
                  {count(k.inputTokens)} / {count(k.outputTokens)}
                </td>
                <td>{usd(k.spendUsdMicros)}</td>
                <td>{k.budgetUsdMicros === undefined ? "no budget" : `${usd(k.budgetRemainingUsdMicros)} of ${usd(k.budgetUsdMicros)}`}</td>
                <td data-testid={`key-${k.name}-left`}>
                  {left(k.requestsRemaining, k.requestsPerMinute)}, {left(k.tokensRemaining, k.tokensPerMinute)}
                </td>
                <td data-testid={`key-${k.name}-streams`}>
                  {k.streamsActive === undefined ? "–" : count(k.streamsActive)} / {k.concurrentStreams === undefined ? "no limit" : count(k.concurrentStreams)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      <Section title="Response cache (this replica, since start)" empty={s.caches.length === 0} emptyText="No alias has a response cache.">
        <CacheTable caches={s.caches} />
      </Section>
    </div>
  );
}
