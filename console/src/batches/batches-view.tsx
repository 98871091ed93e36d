import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import type { KeyBatch } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { BatchStatus } from "../../../gen/sluice/v1/batch_service_pb.js";
import { adminProblem } from "../admin-problem.js";
import { admin } from "../api.js";
import { count } from "../format.js";
import { utcDateTime } from "../time-format.js";

/** How often the page reads the list again while it is shown. */
const REFRESH_MS = 5_000;
const PAGE = 50;

const STATUS_NAMES: Readonly<Record<number, string>> = {
  [BatchStatus.VALIDATING]: "validating",
  [BatchStatus.IN_PROGRESS]: "in progress",
  [BatchStatus.FINALIZING]: "finalizing",
  [BatchStatus.COMPLETED]: "completed",
  [BatchStatus.FAILED]: "failed",
  [BatchStatus.CANCELLING]: "cancelling",
  [BatchStatus.CANCELLED]: "cancelled",
  [BatchStatus.EXPIRED]: "expired",
};

function Progress({ entry }: { readonly entry: KeyBatch }) {
  const counts = entry.batch?.requestCounts;
  const total = counts?.total ?? 0;
  const completed = counts?.completed ?? 0;
  const failed = counts?.failed ?? 0;
  const share = (n: number) => (total === 0 ? 0 : (n / total) * 100);
  const id = entry.batch?.id ?? "";
  return (
    <div class="batch-progress" data-testid={`batch-progress-${id}`}>
      <div class="gauge-bar" title={`${completed} completed, ${failed} failed of ${total}`}>
        <div class="gauge-fill" style={{ width: `${share(completed)}%` }} />
        <div class="gauge-fill failed" style={{ left: `${share(completed)}%`, width: `${share(failed)}%` }} />
      </div>
      <span class="muted" data-testid={`batch-counts-${id}`}>
        {count(completed + failed)} / {count(total)}
        {failed > 0 ? ` (${count(failed)} failed)` : ""}
      </span>
    </div>
  );
}

/**
 * The Batches page: every key's batches through AdminService.ListAllBatches,
 * newest first, with their progress, read again every few seconds while
 * the page is open. Evaluation replays show as batches of endpoint
 * sluice/replay, their candidate in the metadata.
 */
export function BatchesView() {
  const [batches, setBatches] = useState<readonly KeyBatch[] | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  useEffect(() => {
    let current = true;
    const load = () =>
      admin.listAllBatches({ limit: PAGE }).then(
        (page) => {
          if (!current) return;
          setProblem(undefined);
          setBatches(page.batches);
        },
        (error: unknown) => current && setProblem(adminProblem(error, "batches")),
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
      <p class="bad" data-testid="batches-problem">
        {problem}
      </p>
    );
  if (!batches) return <p class="muted">Reading the batches…</p>;
  if (batches.length === 0)
    return (
      <p class="muted" data-testid="batches-empty">
        No batch yet.
      </p>
    );
  return (
    <section>
      <h2>Batches, newest first</h2>
      <table data-testid="batches">
        <thead>
          <tr>
            <th>batch</th>
            <th>key</th>
            <th>endpoint</th>
            <th>status</th>
            <th>progress</th>
            <th>created</th>
          </tr>
        </thead>
        <tbody>
          {batches.map((entry) => {
            const b = entry.batch!;
            const candidate = b.metadata.candidate;
            return (
              <tr key={b.id} data-testid={`batch-${b.id}`}>
                <td>{b.id}</td>
                <td>{entry.key || "–"}</td>
                <td>{candidate ? `${b.endpointPath} → ${candidate}` : b.endpointPath}</td>
                <td data-testid={`batch-status-${b.id}`}>{STATUS_NAMES[b.status] ?? "unknown"}</td>
                <td>
                  <Progress entry={entry} />
                </td>
                <td data-testid={`batch-created-${b.id}`}>{b.createdAt ? utcDateTime(timestampDate(b.createdAt).getTime()) : "–"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
