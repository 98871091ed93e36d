import { GatewayError } from "../core/errors.js";
import type { Database } from "../db/database.js";
import { checkSpendQuery, type SpendPage, type SpendQuery, spendReport } from "./spend-report.js";

/** The reports the admin surfaces ask (GetSpendReport, spend.csv), over the ledger. */
export interface SpendReports {
  /** One page of a report; throws `invalid_request` for a bad query, `failed_precondition` without a ledger. */
  report(query: SpendQuery): Promise<SpendPage>;
  /** The budget alert thresholds in force, for gauges. */
  thresholds(): readonly number[];
}

export function createSpendReports(options: { readonly database?: () => Promise<Database>; readonly tagKeys: () => ReadonlySet<string>; readonly thresholds: () => readonly number[] }): SpendReports {
  return {
    thresholds: options.thresholds,
    async report(query) {
      const checked = checkSpendQuery(query, options.tagKeys());
      if (!options.database) throw new GatewayError("failed_precondition", 'spend reports read the ledger, which is off: configure store.postgres (docs/tenancy.md, "The spend ledger")');
      let db: Database;
      try {
        db = await options.database();
      } catch (error) {
        throw new GatewayError("store_unavailable", "the ledger's database is unavailable; retry shortly", { cause: error, retryAfterMs: 1_000 });
      }
      try {
        return await spendReport(db, checked);
      } catch (error) {
        throw new GatewayError("store_unavailable", "the spend report could not be read from the ledger's database; retry shortly", { cause: error, retryAfterMs: 1_000 });
      }
    },
  };
}
