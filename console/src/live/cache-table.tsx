import type { AliasCacheTally } from "../../../gen/sluice/admin/v1/stats_pb.js";
import { count, usd } from "../format.js";

/** A share as people read it: "50 %"; "–" before the first lookup. */
function percent(rate: number, looked: bigint): string {
  if (looked === 0n) return "–";
  const p = rate * 100;
  return `${Number.isInteger(p) ? p : p.toFixed(1)} %`;
}

/** The response cache per alias on this replica: how often it answered, and what that saved. */
export function CacheTable({ caches }: { readonly caches: readonly AliasCacheTally[] }) {
  return (
    <table data-testid="caches">
      <thead>
        <tr>
          <th>alias</th>
          <th>hit rate</th>
          <th>hits (semantic)</th>
          <th>misses</th>
          <th>errors</th>
          <th>skipped by caller</th>
          <th>saved</th>
        </tr>
      </thead>
      <tbody>
        {caches.map((c) => (
          <tr key={c.alias}>
            <td>{c.alias}</td>
            <td data-testid={`cache-${c.alias}-rate`}>{percent(c.hitRate, c.hits + c.misses + c.errors)}</td>
            <td data-testid={`cache-${c.alias}-hits`}>
              {count(c.hits)} ({count(c.semanticHits)})
            </td>
            <td>{count(c.misses)}</td>
            <td class={c.errors === 0n ? "" : "bad"}>{count(c.errors)}</td>
            <td>{count(c.bypasses)}</td>
            <td data-testid={`cache-${c.alias}-saved`}>{usd(c.savedUsdMicros)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
