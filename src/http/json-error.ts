import { type AnyResponse, sendJson } from "./node-http.js";

/**
 * The gateway's HTTP error body, `{"error": {message, type, param, code}}`:
 * OpenAI's shape, which the port's own routes (404, 405, 500, the console)
 * answer with too, so a caller that reaches the wrong path with an OpenAI
 * SDK reads a real error. The one place that shape is written.
 */
export interface JsonError {
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
}

export function sendJsonError(res: AnyResponse, status: number, error: JsonError, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error }, headers);
}
