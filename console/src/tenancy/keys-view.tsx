import { useEffect, useState } from "preact/hooks";
import { type KeyInfo, KeySource, type TeamInfo } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { adminProblem, refusal } from "../admin-problem.js";
import { admin } from "../api.js";
import { usd } from "../format.js";
import { ConfirmButton } from "./confirm-button.js";
import { budgetText, fieldsOf, limitsText, periodName, sourceText } from "./level-fields.js";
import { LevelForm } from "./level-form.js";
import { NewKeySecret } from "./new-key-secret.js";

interface Spend {
  readonly micros: bigint;
  readonly period: string;
}

interface Listing {
  readonly keys: readonly KeyInfo[];
  readonly teams: readonly TeamInfo[];
  /** This period's spend by key name; a key whose usage could not be read is absent. */
  readonly spend: ReadonlyMap<string, Spend>;
}

/** Every key, the teams to pick from, and each key's spend in its budget's period (one GetUsage a key, read from the store). */
async function list(): Promise<Listing> {
  const [{ keys }, { teams }] = await Promise.all([admin.listKeys({}), admin.listTeams({})]);
  const usage = await Promise.all(
    keys.map((key) =>
      admin.getUsage({ name: key.name }).then(
        (u): [string, Spend] => [key.name, { micros: u.spendUsdMicros, period: periodName(u.period) }],
        () => undefined,
      ),
    ),
  );
  return { keys, teams, spend: new Map(usage.filter((u) => u !== undefined)) };
}

function status(key: KeyInfo, spend: Spend | undefined): string {
  return key.budget && spend && spend.micros >= key.budget.usdMicros ? "budget spent" : "active";
}

/**
 * The Keys page: every virtual key with its team, business line, limits,
 * budget and this period's spend; a form to create one (its secret shown
 * once, then forgotten), to change a runtime key's team, limits and budget,
 * and to revoke it. Keys from the configuration are shown, not changed:
 * the admin API refuses that, and the page does not offer it.
 */
export function KeysView() {
  const [listing, setListing] = useState<Listing | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [actionProblem, setActionProblem] = useState<string | undefined>();
  const [created, setCreated] = useState<{ readonly name: string; readonly secret: string } | undefined>();
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
      (error: unknown) => current && setProblem(adminProblem(error, "keys")),
    );
    return () => {
      current = false;
    };
  }, [generation]);

  if (problem !== undefined)
    return (
      <p class="bad" role="alert" data-testid="keys-problem">
        {problem}
      </p>
    );
  if (!listing) return <p class="muted">Reading the keys…</p>;
  const teamNames = listing.teams.map((t) => t.name);
  const lineOf = new Map(listing.teams.map((t) => [t.name, t.businessLine]));
  const revoke = (name: string) =>
    admin.revokeKey({ name }).then(
      () => {
        setActionProblem(undefined);
        reload();
      },
      (error: unknown) => setActionProblem(refusal(error).message),
    );

  return (
    <section>
      {created && <NewKeySecret name={created.name} secret={created.secret} onDone={() => setCreated(undefined)} />}
      <h2>New key</h2>
      <LevelForm
        testid="new-key"
        submitLabel="Create key"
        withName
        withModels
        parent={{ label: "Team", options: teamNames, initial: "" }}
        onSubmit={async (v) => {
          const answer = await admin.createKey({ name: v.name, team: v.parent, models: [...v.models], limits: v.limits, ...(v.budget ? { budget: v.budget } : {}) }).catch((error: unknown) => Promise.reject(refusal(error)));
          setCreated({ name: answer.info?.name ?? v.name, secret: answer.key });
          reload();
        }}
      />
      <h2>Keys</h2>
      {actionProblem !== undefined && (
        <p class="error" role="alert" data-testid="keys-action-problem">
          {actionProblem}
        </p>
      )}
      {listing.keys.length === 0 ? (
        <p class="muted" data-testid="keys-empty">
          No key yet.
        </p>
      ) : (
        <table data-testid="keys">
          <thead>
            <tr>
              <th>name</th>
              <th>id</th>
              <th>team</th>
              <th>business line</th>
              <th>aliases</th>
              <th>limits</th>
              <th>budget</th>
              <th>spend</th>
              <th>status</th>
              <th>defined in</th>
              <th>
                <span class="visually-hidden">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {listing.keys.map((key) => {
              const spend = listing.spend.get(key.name);
              const row = `key-${key.name}`;
              return [
                <tr key={key.name} data-testid={row}>
                  <td>{key.name}</td>
                  <td>
                    <code>{key.id}</code>
                  </td>
                  <td data-testid={`${row}-team`}>{key.team || "–"}</td>
                  <td data-testid={`${row}-line`}>{(key.team && lineOf.get(key.team)) || "–"}</td>
                  <td>{key.models.length > 0 ? key.models.join(", ") : "every"}</td>
                  <td data-testid={`${row}-limits`}>{limitsText(key.limits)}</td>
                  <td data-testid={`${row}-budget`}>{budgetText(key.budget)}</td>
                  <td data-testid={`${row}-spend`}>{spend ? `${usd(spend.micros)} this ${spend.period}` : "–"}</td>
                  <td data-testid={`${row}-status`}>{status(key, spend)}</td>
                  <td>{sourceText(key.source)}</td>
                  <td class="actions">
                    {key.source === KeySource.RUNTIME ? (
                      <>
                        <button type="button" onClick={() => setEditing(editing === key.name ? undefined : key.name)} aria-expanded={editing === key.name} data-testid={`${row}-edit`}>
                          Edit
                        </button>
                        <ConfirmButton label="Revoke" question={`Revoke ${key.name}? Every replica refuses it from its next request.`} testid={`${row}-revoke`} onConfirm={() => void revoke(key.name)} />
                      </>
                    ) : (
                      <span class="muted">change in the configuration</span>
                    )}
                  </td>
                </tr>,
                editing === key.name && (
                  <tr key={`${key.name}-edit`}>
                    <td colSpan={11}>
                      <LevelForm
                        testid={`edit-${row}`}
                        submitLabel={`Save ${key.name}`}
                        parent={{ label: "Team", options: teamNames, initial: key.team }}
                        initial={fieldsOf(key.limits, key.budget)}
                        onCancel={() => setEditing(undefined)}
                        onSubmit={async (v) => {
                          await admin
                            .updateKey({ name: key.name, updateMask: { paths: ["team", "limits", "budget"] }, team: v.parent, limits: v.limits, ...(v.budget ? { budget: v.budget } : {}) })
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
