import type { BatchSettings } from "../config/settings.js";
import { clipClientValue, controlCharacterIn, quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import type { StructureLimits } from "../core/structure-limits.js";
import { parseJsonBody } from "../http/read-json.js";

/** The endpoints a batch may run. */
export const BATCH_ENDPOINTS = ["/v1/chat/completions", "/v1/embeddings"] as const;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];

/** Longest custom_id accepted (OpenAI's own limit is not published; ids are echoed in every output line). */
const MAX_CUSTOM_ID_CHARS = 512;

/** One request of a batch file: `{custom_id, method, url, body}`. */
export interface BatchFileLine {
  /** 1-based, counting every line of the file (blank ones too), as an editor shows it. */
  readonly line: number;
  readonly customId: string;
  readonly url: BatchEndpoint;
  readonly body: Record<string, unknown>;
}

const invalid = (line: number, why: string) => new GatewayError("invalid_request", `file: line ${line}: ${why}`, { field: "file" });

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** Reads a batch file's lines one at a time, keeping only what spans lines: the count and the custom_ids seen. */
export interface BatchLineReader {
  /** Checks line `n` (1-based, without its newline); undefined for a blank line. Throws `invalid_request` naming the line. */
  line(raw: string, n: number): BatchFileLine | undefined;
  /** The file ended: throws when it held no request. */
  end(): void;
  /** Requests read so far. */
  readonly count: number;
}

/**
 * The checks of a batch file (JSONL), a line at a time, as an upload and
 * a batch need them: each line one JSON object with a unique string
 * `custom_id` (no control character: it is stored), `method` POST, `url`
 * an endpoint batches run, `body` an object; at most `maxLines` lines of
 * at most `maxLineBytes` each. Blank lines are skipped. The file itself is
 * never held: an upload checks it as it streams in, in a worker thread
 * (upload-check.ts), a batch as it is read back in chunks.
 */
export function createBatchLineReader(settings: Pick<BatchSettings, "maxLines" | "maxLineBytes">, limits: StructureLimits): BatchLineReader {
  const seen = new Set<string>();
  let count = 0;
  return {
    get count() {
      return count;
    },
    line(text, n) {
      const ended = text.endsWith("\r") ? text.slice(0, -1) : text;
      // A byte-order mark before the first line is the file's, not the JSON's.
      const raw = n === 1 && ended.startsWith("\uFEFF") ? ended.slice(1) : ended;
      if (raw.trim() === "") return undefined;
      if (count >= settings.maxLines) throw new GatewayError("invalid_request", `file: more than ${settings.maxLines} requests (batch.maxLines)`, { field: "file" });
      const bytes = Buffer.from(raw, "utf8");
      if (bytes.length > settings.maxLineBytes) throw invalid(n, `longer than ${settings.maxLineBytes} bytes (batch.maxLineBytes)`);
      let json: unknown;
      try {
        json = parseJsonBody(bytes, limits);
      } catch (error) {
        throw invalid(n, error instanceof GatewayError ? error.message.replace(/^request body /, "") : "not valid JSON");
      }
      if (!isObject(json)) throw invalid(n, "not a JSON object");
      const { custom_id: customId, method, url, body } = json;
      if (typeof customId !== "string" || customId === "") throw invalid(n, "custom_id: must be a non-empty string");
      if (customId.length > MAX_CUSTOM_ID_CHARS) throw invalid(n, `custom_id: longer than ${MAX_CUSTOM_ID_CHARS} characters`);
      const control = controlCharacterIn(customId);
      if (control !== undefined) throw invalid(n, `custom_id: holds a control character (${control}), which an id may not`);
      if (seen.has(customId)) throw invalid(n, `custom_id ${quoteClientValue(customId)} appears more than once`);
      seen.add(customId);
      if (method !== "POST") throw invalid(n, "method: must be POST");
      if (typeof url !== "string" || !(BATCH_ENDPOINTS as readonly string[]).includes(url)) {
        throw invalid(n, `url: ${typeof url === "string" ? quoteClientValue(url) : "missing"} is not served in batches (${BATCH_ENDPOINTS.join(", ")})`);
      }
      if (!isObject(body)) throw invalid(n, "body: must be a JSON object");
      for (const key of Object.keys(json)) {
        if (!["custom_id", "method", "url", "body"].includes(key)) throw invalid(n, `unknown field ${quoteClientValue(clipClientValue(key))}`);
      }
      count++;
      return { line: n, customId, url: url as BatchEndpoint, body };
    },
    end() {
      if (count === 0) throw new GatewayError("invalid_request", "file: no requests in it", { field: "file" });
    },
  };
}

/** A whole batch file's requests (small files, tests): the reader over its lines. */
export function readBatchFile(content: string, settings: Pick<BatchSettings, "maxLines" | "maxLineBytes">, limits: StructureLimits): BatchFileLine[] {
  const reader = createBatchLineReader(settings, limits);
  const lines = content.split("\n").flatMap((text, i) => reader.line(text, i + 1) ?? []);
  reader.end();
  return lines;
}

/** Lines read between two turns of the event loop at most, when a file is read back (each is parsed JSON). */
export const LINES_PER_TURN = 200;
/**
 * Characters of lines read between two turns at most: parsing (and, for a
 * batch, decoding each body as its endpoint's request) costs by the byte,
 * and 200 lines of up to a MiB each would be a stall of seconds. About
 * 256 KiB of JSON is a millisecond or two of work.
 */
export const CHARS_PER_TURN = 256 * 1024;

/**
 * A stored file's requests, read from its chunks (each ends at a line's
 * end), in pages of at most `LINES_PER_TURN` lines and about
 * `CHARS_PER_TURN` characters, yielding to the event loop between pages:
 * a 48,000-line file, or one of a hundred 1 MiB lines, never holds the
 * loop, and is never whole in memory.
 */
export async function* batchLinesOf(chunks: AsyncIterable<string>, reader: BatchLineReader): AsyncGenerator<BatchFileLine[]> {
  let n = 0;
  let page: BatchFileLine[] = [];
  let chars = 0;
  let carry = "";
  for await (const chunk of chunks) {
    const texts = (carry + chunk).split("\n");
    // A chunk ends at a line's end; a file's last line may have no newline, and an older file is one chunk.
    carry = texts.pop() ?? "";
    for (const text of texts) {
      const line = reader.line(text, ++n);
      chars += text.length;
      if (line) page.push(line);
      if (page.length >= LINES_PER_TURN || chars >= CHARS_PER_TURN) {
        if (page.length > 0) yield page;
        page = [];
        chars = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  }
  if (carry !== "") {
    const line = reader.line(carry, ++n);
    if (line) page.push(line);
  }
  reader.end();
  if (page.length > 0) yield page;
}
