import { useRef, useState } from "preact/hooks";

export interface NewKeySecretProps {
  readonly name: string;
  /** The key itself, as CreateKey answered it: held in this component's state only. */
  readonly secret: string;
  onDone(): void;
}

/**
 * The one time a new key can be seen. The gateway keeps only its SHA-256,
 * and the page keeps it only here, in memory: not in storage, not in the
 * URL, gone on Done, on another page and on reload.
 */
export function NewKeySecret(props: NewKeySecretProps) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<"yes" | "no" | undefined>();
  const copy = () => {
    field.current?.select();
    navigator.clipboard.writeText(props.secret).then(
      () => setCopied("yes"),
      () => setCopied("no"),
    );
  };
  return (
    <section class="secret" role="status" aria-labelledby="new-key-title" data-testid="new-key-secret">
      <h2 id="new-key-title">New key {props.name}</h2>
      <p>
        <strong>Copy it now: you will not see it again.</strong> The gateway keeps only its hash, and this page forgets it when you leave.
      </p>
      <div class="row">
        <label class="grow">
          Key
          <input ref={field} readOnly value={props.secret} onFocus={(e) => e.currentTarget.select()} spellcheck={false} autocomplete="off" data-testid="new-key-value" />
        </label>
        <button type="button" onClick={copy} data-testid="new-key-copy">
          Copy
        </button>
        <button type="button" onClick={props.onDone} data-testid="new-key-done">
          Done
        </button>
      </div>
      {copied === "yes" && <p class="muted">Copied to the clipboard.</p>}
      {copied === "no" && <p class="error">The browser did not allow copying: the key is selected, press Ctrl+C (⌘C).</p>}
    </section>
  );
}
