import { useState } from "preact/hooks";

export interface ConfirmButtonProps {
  /** What the first button says, e.g. "Revoke". */
  readonly label: string;
  /** The question asked before acting: what will happen, in words. */
  readonly question: string;
  /** data-testid of the first button; the confirming one is `<testid>-confirm`. */
  readonly testid: string;
  onConfirm(): void;
}

/**
 * A destructive action asked twice, in the page rather than with
 * window.confirm: the question stays readable, reachable by keyboard and
 * by screen readers, and a test can see it.
 */
export function ConfirmButton(props: ConfirmButtonProps) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class="danger" onClick={() => setAsking(true)} data-testid={props.testid}>
        {props.label}
      </button>
    );
  return (
    <fieldset class="confirm" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
        data-testid={`${props.testid}-confirm`}
      >
        Yes, {props.label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)} data-testid={`${props.testid}-cancel`}>
        Cancel
      </button>
    </fieldset>
  );
}
