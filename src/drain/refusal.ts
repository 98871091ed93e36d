/**
 * SQLSTATE classes that blame the record, not the database: a data
 * exception (22: a NUL in text or jsonb, a number out of range, text a
 * type cannot read), an integrity violation (23: a CHECK, a NOT NULL) or
 * a program limit (54: a value too large). Anything else (a lost
 * connection, a statement timeout, a missing table) is an outage: every
 * record waits, none is blamed.
 */
const REFUSAL_CLASSES: ReadonlySet<string> = new Set(["22", "23", "54"]);

/** The SQLSTATE of an error by which the database refused a record, or undefined for any other failure. */
export function refusalCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && REFUSAL_CLASSES.has(code.slice(0, 2)) ? code : undefined;
}
