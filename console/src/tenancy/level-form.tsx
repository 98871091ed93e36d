import { useState } from "preact/hooks";
import { EMPTY_FIELDS, type FieldName, type LevelFields, type LevelValues, nameProblem, parseLevel, parseModels } from "./level-fields.js";

/** What a valid form hands over: everything parsed, nothing left as text. */
export interface LevelSubmit extends LevelValues {
  readonly name: string;
  /** The team (keys) or business line (teams) picked; "" for none. */
  readonly parent: string;
  readonly models: readonly string[];
}

export interface LevelFormProps {
  /** Prefix of every data-testid in the form, e.g. "new-key" or "edit-team-search". */
  readonly testid: string;
  readonly submitLabel: string;
  /** Asks for a name (create forms); an edit form changes a named level. */
  readonly withName?: boolean;
  /** A select of the level above: a key's team, a team's business line. */
  readonly parent?: { readonly label: string; readonly options: readonly string[]; readonly initial: string };
  /** Asks for the aliases a key may use. */
  readonly withModels?: boolean;
  readonly initial?: LevelFields;
  /** Rejects with the message to show; resolves when the form's work is done. */
  onSubmit(values: LevelSubmit): Promise<void>;
  onCancel?(): void;
}

const LIMITS: ReadonlyArray<{ readonly field: FieldName; readonly label: string; readonly hint: string }> = [
  { field: "rpm", label: "Requests per minute", hint: "1 to 1,000,000" },
  { field: "tpm", label: "Tokens per minute", hint: "1 to 1,000,000,000" },
  { field: "streams", label: "Concurrent streams", hint: "1 to 1,000,000" },
  { field: "usd", label: "Budget (US dollars)", hint: "e.g. 25 or 7.50" },
];

/**
 * The one form for a key's, a team's or a business line's limits and budget,
 * to create one or change one. It checks what the admin API would refuse
 * for certain (names, ranges, decimals) before any call; what only the
 * gateway knows (a name in use, a team that does not exist) comes back as
 * the call's error, shown in the form that made it.
 */
export function LevelForm(props: LevelFormProps) {
  const [name, setName] = useState("");
  const [parent, setParent] = useState(props.parent?.initial ?? "");
  const [models, setModels] = useState("");
  const [fields, setFields] = useState<LevelFields>(props.initial ?? EMPTY_FIELDS);
  const [problems, setProblems] = useState<Partial<Record<string, string>>>({});
  const [refusal, setRefusal] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const id = (part: string) => `${props.testid}-${part}`;
  const set = (field: FieldName) => (e: { currentTarget: { value: string } }) => setFields({ ...fields, [field]: e.currentTarget.value });
  const problem = (field: string) =>
    problems[field] ? (
      <span class="error" id={id(`${field}-problem`)} data-testid={id(`${field}-problem`)}>
        {problems[field]}
      </span>
    ) : undefined;
  const described = (field: string) => (problems[field] ? { "aria-invalid": true, "aria-describedby": id(`${field}-problem`) } : {});

  const submit = async (event: Event) => {
    event.preventDefault();
    const parsed = parseLevel(fields);
    const found: Partial<Record<string, string>> = parsed.ok ? {} : { ...parsed.problems };
    const trimmed = name.trim();
    if (props.withName) {
      const bad = nameProblem(trimmed);
      if (bad) found.name = bad;
    }
    setProblems(found);
    setRefusal(undefined);
    if (!parsed.ok || Object.keys(found).length > 0) return;
    setBusy(true);
    try {
      await props.onSubmit({ ...parsed.value, name: trimmed, parent, models: parseModels(models) });
      // A create form starts over for the next one; an edit form is closed by its owner.
      if (!props.initial) {
        setName("");
        setModels("");
        setParent(props.parent?.initial ?? "");
        setFields(EMPTY_FIELDS);
      }
    } catch (error) {
      setRefusal(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="level-form" noValidate onSubmit={(e) => void submit(e)} data-testid={props.testid}>
      <div class="row">
        {props.withName && (
          <label>
            Name
            <input value={name} onInput={(e) => setName(e.currentTarget.value)} autocomplete="off" data-testid={id("name")} {...described("name")} />
            {problem("name")}
          </label>
        )}
        {props.parent && (
          <label>
            {props.parent.label}
            <select value={parent} onChange={(e) => setParent(e.currentTarget.value)} data-testid={id("parent")}>
              <option value="">(none)</option>
              {props.parent.options.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          </label>
        )}
        {props.withModels && (
          <label>
            Aliases (empty: every alias)
            <input value={models} onInput={(e) => setModels(e.currentTarget.value)} placeholder="demo, fast" data-testid={id("models")} />
          </label>
        )}
      </div>
      <div class="row">
        {LIMITS.map(({ field, label, hint }) => (
          <label key={field}>
            {label}
            <input inputMode={field === "usd" ? "decimal" : "numeric"} value={fields[field]} onInput={set(field)} placeholder={hint} size={field === "tpm" ? 16 : 12} data-testid={id(field)} {...described(field)} />
            {problem(field)}
          </label>
        ))}
        <label>
          Budget period
          <select value={fields.period} onChange={(e) => setFields({ ...fields, period: e.currentTarget.value as LevelFields["period"] })} data-testid={id("period")}>
            <option value="day">day (UTC)</option>
            <option value="week">week (ISO, UTC)</option>
            <option value="month">month (UTC)</option>
          </select>
        </label>
      </div>
      {refusal !== undefined && (
        <p class="error" role="alert" data-testid={id("refused")}>
          {refusal}
        </p>
      )}
      <div class="row">
        <button type="submit" disabled={busy} data-testid={id("submit")}>
          {props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" onClick={props.onCancel} data-testid={id("cancel")}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}
