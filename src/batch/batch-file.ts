import { clipClientValue, controlCharacterIn, quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import type { StructureLimits } from "../core/structure-limits.js";
import type { BatchSettings } from "../config/config.js";
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

/**
 * The requests of a batch file (JSONL), checked as an upload and a batch
 * need them: each line one JSON object with a unique string `custom_id`,
 * `method` POST, `url` an endpoint batches run, `body` an object; at most
 * `maxLines` lines of at most `maxLineBytes` each. Blank lines are
 * skipped. Throws `invalid_request` naming the first line at fault.
 */
export function readBatchFile(content: string, settings: Pick<BatchSettings, "maxLines" | "maxLineBytes">, limits: StructureLimits): BatchFileLine[] {
  const lines: BatchFileLine[] = [];
  const seen = new Set<string>();
  const text = content.split("\n");
  for (let i = 0; i < text.length; i++) {
    const raw = text[i]!.endsWith("\r") ? text[i]!.slice(0, -1) : text[i]!;
    if (raw.trim() === "") continue;
    const n = i + 1;
    if (lines.length >= settings.maxLines) throw new GatewayError("invalid_request", `file: more than ${settings.maxLines} requests (batch.maxLines)`, { field: "file" });
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
    lines.push({ line: n, customId, url: url as BatchEndpoint, body });
  }
  if (lines.length === 0) throw new GatewayError("invalid_request", "file: no requests in it", { field: "file" });
  return lines;
}
