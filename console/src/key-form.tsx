import { useState } from "preact/hooks";

export interface KeyFormProps {
  readonly refused: boolean;
  onKey(key: string): void;
}

/** Asks for the admin key. It goes to this tab's session storage only, and is checked by the gateway on the next call. */
export function KeyForm(props: KeyFormProps) {
  const [value, setValue] = useState("");
  return (
    <form
      class="key-form"
      onSubmit={(event) => {
        event.preventDefault();
        if (value.trim()) props.onKey(value.trim());
        setValue("");
      }}
    >
      <h2>Admin key</h2>
      <p>
        This console is protected. Enter the gateway's admin key (the value of the variable named by <code>auth.adminKeyEnv</code>).
      </p>
      {props.refused && (
        <p class="error" role="alert" data-testid="key-refused">
          The gateway refused that admin key.
        </p>
      )}
      <label>
        Admin key
        <input type="password" name="admin-key" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} data-testid="admin-key" />
      </label>
      <button type="submit">Unlock</button>
    </form>
  );
}
