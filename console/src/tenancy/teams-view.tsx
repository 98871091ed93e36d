import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import { KeySource, type TeamInfo } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { adminProblem, refusal } from "../admin-problem.js";
import { admin } from "../api.js";
import { count } from "../format.js";
import { utcDateTime } from "../time-format.js";
import { ConfirmButton } from "./confirm-button.js";
import { budgetText, fieldsOf, limitsText, sourceText } from "./level-fields.js";
import { LevelForm } from "./level-form.js";

interface Listing {
  readonly teams: readonly TeamInfo[];
  readonly lines: readonly string[];
  /** Keys per team: a team with keys cannot be deleted, so the page says how many. */
  readonly keys: ReadonlyMap<string, number>;
}

async function list(): Promise<Listing> {
  const [{ teams }, { businessLines }, { keys }] = await Promise.all([admin.listTeams({}), admin.listBusinessLines({}), admin.listKeys({})]);
  const perTeam = new Map<string, number>();
  for (const key of keys) if (key.team) perTeam.set(key.team, (perTeam.get(key.team) ?? 0) + 1);
  return { teams, lines: businessLines.map((l) => l.name), keys: perTeam };
}

/**
 * The Teams page: every team with its business line, limits, budget and
 * number of keys; forms to create a team, to change a runtime team's
 * business line, limits and budget, and to delete one (the gateway refuses
 * while a key belongs to it, and the page shows why).
 */
export function TeamsView() {
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
      (error: unknown) => current && setProblem(adminProblem(error, "teams")),
    );
    return () => {
      current = false;
    };
  }, [generation]);

  if (problem !== undefined)
    return (
      <p class="bad" role="alert" data-testid="teams-problem">
        {problem}
      </p>
    );
  if (!listing) return <p class="muted">Reading the teams…</p>;
  const remove = (name: string) =>
    admin.deleteTeam({ name }).then(
      () => {
        setActionProblem(undefined);
        reload();
      },
      (error: unknown) => setActionProblem(refusal(error).message),
    );

  return (
    <section>
      <h2>New team</h2>
      <LevelForm
        testid="new-team"
        submitLabel="Create team"
        withName
        parent={{ label: "Business line", options: listing.lines, initial: "" }}
        onSubmit={async (v) => {
          await admin.createTeam({ name: v.name, businessLine: v.parent, limits: v.limits, ...(v.budget ? { budget: v.budget } : {}) }).catch((error: unknown) => Promise.reject(refusal(error)));
          reload();
        }}
      />
      <h2>Teams</h2>
      <p class="muted">A team's limits and budget are shared by all its keys, checked with each key's own.</p>
      {actionProblem !== undefined && (
        <p class="error" role="alert" data-testid="teams-action-problem">
          {actionProblem}
        </p>
      )}
      {listing.teams.length === 0 ? (
        <p class="muted" data-testid="teams-empty">
          No team yet.
        </p>
      ) : (
        <table data-testid="teams">
          <thead>
            <tr>
              <th>name</th>
              <th>business line</th>
              <th>keys</th>
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
            {listing.teams.map((team) => {
              const row = `team-${team.name}`;
              return [
                <tr key={team.name} data-testid={row}>
                  <td>{team.name}</td>
                  <td data-testid={`${row}-line`}>{team.businessLine || "–"}</td>
                  <td data-testid={`${row}-keys`}>{count(listing.keys.get(team.name) ?? 0)}</td>
                  <td data-testid={`${row}-limits`}>{limitsText(team.limits)}</td>
                  <td data-testid={`${row}-budget`}>{budgetText(team.budget)}</td>
                  <td>{sourceText(team.source)}</td>
                  <td>{team.createdAt ? utcDateTime(timestampDate(team.createdAt).getTime()) : "–"}</td>
                  <td class="actions">
                    {team.source === KeySource.RUNTIME ? (
                      <>
                        <button type="button" onClick={() => setEditing(editing === team.name ? undefined : team.name)} aria-expanded={editing === team.name} data-testid={`${row}-edit`}>
                          Edit
                        </button>
                        <ConfirmButton label="Delete" question={`Delete team ${team.name}?`} testid={`${row}-delete`} onConfirm={() => void remove(team.name)} />
                      </>
                    ) : (
                      <span class="muted">change in the configuration</span>
                    )}
                  </td>
                </tr>,
                editing === team.name && (
                  <tr key={`${team.name}-edit`}>
                    <td colSpan={8}>
                      <LevelForm
                        testid={`edit-${row}`}
                        submitLabel={`Save ${team.name}`}
                        parent={{ label: "Business line", options: listing.lines, initial: team.businessLine }}
                        initial={fieldsOf(team.limits, team.budget)}
                        onCancel={() => setEditing(undefined)}
                        onSubmit={async (v) => {
                          await admin
                            .updateTeam({ name: team.name, updateMask: { paths: ["business_line", "limits", "budget"] }, businessLine: v.parent, limits: v.limits, ...(v.budget ? { budget: v.budget } : {}) })
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
