/** A stream entry as Redis sends it: its id, then its fields and values in turn. */
export type RawStreamEntry = [id: string, fields: string[]];

/** A stream entry's fields and values in turn, as an object. */
export function fieldsOf(flat: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
  return fields;
}

/** One stream entry, its fields as an object. */
export interface StreamMessage {
  readonly id: string;
  readonly message: Readonly<Record<string, string>>;
}

/** Entries as XRANGE returns them; an entry XAUTOCLAIM found deleted (nil) is left out. */
export function messagesOf(entries: ReadonlyArray<RawStreamEntry | null> | null | undefined): StreamMessage[] {
  return (entries ?? []).flatMap((e) => (e === null ? [] : [{ id: e[0], message: fieldsOf(e[1]) }]));
}

/** The first stream's entries of an XREAD or XREADGROUP reply (nil when there were none). */
export function firstStreamOf(reply: unknown): StreamMessage[] {
  const streams = reply as Array<[key: string, entries: RawStreamEntry[]]> | null;
  return messagesOf(streams?.[0]?.[1]);
}
