import { readFile } from "node:fs/promises";
import { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from "yaml";

/** A configuration file as read: its data, or why it could not be read, and where each path sits in it. */
export interface ConfigDocument {
  readonly source: string;
  /** The parsed data; undefined when the file could not be read or parsed. */
  readonly input: unknown;
  /** Problems that stop any further check: unreadable file, YAML syntax (every one, with its line). */
  readonly errors: readonly string[];
  /** The line of the deepest node along `path` that exists in the file. */
  lineOf(path: readonly PropertyKey[]): number | undefined;
}

/** Reads and parses a YAML configuration file; never throws. */
export async function readConfigDocument(path: string): Promise<ConfigDocument> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    return { source: path, input: undefined, errors: [`cannot read configuration file ${path}: ${code}`], lineOf: () => undefined };
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: true, lineCounter: lines });
  if (doc.errors.length > 0) {
    return { source: path, input: undefined, errors: doc.errors.map((e) => `invalid YAML in ${path}: ${e.message}`), lineOf: () => undefined };
  }
  return {
    source: path,
    input: doc.toJS() as unknown,
    errors: [],
    lineOf(keys) {
      // Walk down the keys; a key's own line, so that `server:` names the
      // line of `server`, not of its first field.
      let node: unknown = doc.contents;
      let line: number | undefined;
      for (const key of keys) {
        if (isMap(node)) {
          const pair = node.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(key));
          if (!pair) break;
          if (isNode(pair.key) && pair.key.range) line = lines.linePos(pair.key.range[0]).line;
          node = pair.value;
        } else if (isSeq(node) && typeof key === "number") {
          node = node.items[key];
          if (isNode(node) && node.range) line = lines.linePos(node.range[0]).line;
        } else break;
      }
      return line ?? (isNode(doc.contents) && doc.contents.range ? lines.linePos(doc.contents.range[0]).line : undefined);
    },
  };
}
