import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import { type BusinessLineInfo, KeySource } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { adminProblem, refusal } from "../admin-problem.js";
import { admin } from "../api.js";
import { count } from "../format.js";
import { utcDateTime } from "../time-format.js";
import { ConfirmButton } from "./confirm-button.js";
import { budgetText, fieldsOf, limitsText, sourceText } from "./level-fields.js";
import { LevelForm } from "./level-form.js";

interface Listing {
  readonly lines: readonly BusinessLineInfo[];
  /** Teams per business line: a line with teams cannot be deleted, so the page says how many. */
  readonly teams: ReadonlyMap<string, number>;
}

async function list(): Promise<Listing> {
  const [{ businessLines }, { teams }] = await Promise.all([admin.listBusinessLines({}), admin.listTeams({})]);
  const perLine = new Map<string, number>();
  for (const team of teams) if (team.businessLine) perLine.set(team.businessLine, (perLine.get(team.businessLine) ?? 0) + 1);
  return { lines: businessLines, teams: perLine };
}

/**
 * The Business lines page: every business line with its limits, budget and
 * number of teams; forms to create one, to change a runtime line's limits
 * and budget, and to delete one (refused while a team belongs to it).
 */
export function BusinessLinesView() {
  const [listing, setListing] = useState<Listing | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [actionProblem, setActionProblem] = useState<string | undefined>();
  const [editing, setEditing] = useState<string | undefined>();
  const [generation, setGeneration] = useState(0);
  const reload = () => setGeneration((n) => n + 1);
  useEffect(() => {
    let current = true;
    list().then(
      (l) => {
        if (!current) return;
        setProblem(undefined);
        setListing(l);
      },
      (error: unknown) => current && setProblem(adminProblem(error, "business-lines")),
    );
    return () => {
      current = false;
    };
  }, [generation]);

  if (problem !== undefined)
    return (
      <p class="bad" role="alert" data-testid="lines-problem">
        {problem}
      </p>
    );
  if (!listing) return <p class="muted">Reading the business lines…</p>;
  const remove = (name: string) =>
    admin.deleteBusinessLine({ name }).then(
      () => {
        setActionProblem(undefined);
        reload();
      },
      (error: unknown) => setActionProblem(refusal(error).message),
    );

  return (
    <section>
      <h2>New business line</h2>
      <LevelForm
        testid="new-line"
        submitLabel="Create business line"
        withName
        onSubmit={async (v) => {
          await admin.createBusinessLine({ name: v.name, limits: v.limits, ...(v.budget ? { budget: v.budget } : {}) }).catch((error: unknown) => Promise.reject(refusal(error)));
          reload();
        }}
      />
      <h2>Business lines</h2>
      <p class="muted">A business line's limits and budget are shared by all its teams' keys together.</p>
      {actionProblem !== undefined && (
        <p class="error" role="alert" data-testid="lines-action-problem">
          {actionProblem}
        </p>
      )}
      {listing.lines.length === 0 ? (
        <p class="muted" data-testid="lines-empty">
          No business line yet.
        </p>
      ) : (
        <table data-testid="lines">
          <thead>
            <tr>
              <th>name</th>
              <th>teams</th>
              <th>limits</th>
              <th>budget</th>
              <th>defined in</th>
              <th>created</th>
              <th>
                <span class="visually-hidden">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {listing.lines.map((line) => {
              const row = `line-${line.name}`;
              return [
                <tr key={line.name} data-testid={row}>
                  <td>{line.name}</td>
                  <td data-testid={`${row}-teams`}>{count(listing.teams.get(line.name) ?? 0)}</td>
                  <td data-testid={`${row}-limits`}>{limitsText(line.limits)}</td>
                  <td data-testid={`${row}-budget`}>{budgetText(line.budget)}</td>
                  <td>{sourceText(line.source)}</td>
                  <td>{line.createdAt ? utcDateTime(timestampDate(line.createdAt).getTime()) : "–"}</td>
                  <td class="actions">
                    {line.source === KeySource.RUNTIME ? (
                      <>
                        <button type="button" onClick={() => setEditing(editing === line.name ? undefined : line.name)} aria-expanded={editing === line.name} data-testid={`${row}-edit`}>
                          Edit
                        </button>
                        <ConfirmButton label="Delete" question={`Delete business line ${line.name}?`} testid={`${row}-delete`} onConfirm={() => void remove(line.name)} />
                      </>
                    ) : (
                      <span class="muted">change in the configuration</span>
                    )}
                  </td>
                </tr>,
                editing === line.name && (
                  <tr key={`${line.name}-edit`}>
                    <td colSpan={7}>
                      <LevelForm
                        testid={`edit-${row}`}
                        submitLabel={`Save ${line.name}`}
                        initial={fieldsOf(line.limits, line.budget)}
                        onCancel={() => setEditing(undefined)}
                        onSubmit={async (v) => {
                          await admin
                            .updateBusinessLine({ name: line.name, updateMask: { paths: ["limits", "budget"] }, limits: v.limits, ...(v.budget ? { budget: v.budget } : {}) })
                            .catch((error: unknown) => Promise.reject(refusal(error)));
                          setEditing(undefined);
                          reload();
                        }}
                      />
                    </td>
                  </tr>
                ),
              ];
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
