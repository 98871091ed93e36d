import { GatewayError } from "../core/errors.js";

/** One part's headers, as far as a form needs them. */
export interface PartHeaders {
  /** The form field's name (Content-Disposition `name`). */
  readonly name: string;
  /** The file's name, for a file part. */
  readonly filename?: string;
}

/** What the parser reports, in order; `data` slices point into the pushed chunk and are valid until the next push. */
export type MultipartEvent = { readonly type: "part"; readonly headers: PartHeaders } | { readonly type: "data"; readonly bytes: Buffer } | { readonly type: "end" };

export interface MultipartParser {
  /** Feeds the next chunk of the body; returns what it completed. Throws `invalid_request` for a body that is not multipart. */
  push(chunk: Buffer): MultipartEvent[];
  /** The body ended: throws unless the closing delimiter was seen. */
  end(): void;
}

/** Bytes of one part's headers at most. */
const MAX_HEADER_BYTES = 8 * 1024;
/** Parts of one form at most (a file and its purpose; some room for what SDKs add). */
const MAX_PARTS = 16;

const malformed = () => new GatewayError("invalid_request", "request body is not valid multipart/form-data", { field: "file" });

/** The boundary of a `multipart/form-data` content type, or undefined. */
export function boundaryOf(contentType: string): string | undefined {
  if (!/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

function headersOf(block: string): PartHeaders {
  let name: string | undefined;
  let filename: string | undefined;
  for (const line of block.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0 || line.slice(0, colon).trim().toLowerCase() !== "content-disposition") continue;
    const value = line.slice(colon + 1);
    name = /;\s*name="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? /;\s*name=([^\s;]+)/i.exec(value)?.[1];
    filename = /;\s*filename="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? /;\s*filename=([^\s;]+)/i.exec(value)?.[1];
  }
  if (name === undefined) throw malformed();
  return { name: name.replace(/\\(.)/g, "$1"), ...(filename === undefined ? {} : { filename: filename.replace(/\\(.)/g, "$1") }) };
}

/**
 * A streaming `multipart/form-data` parser (RFC 7578): it holds at most a
 * part's headers and a delimiter's length of the body, never a part, so a
 * 100 MiB file flows through in the chunks it arrived in. The body is read
 * as if preceded by CRLF, so the first delimiter needs no special case;
 * the preamble and epilogue are ignored.
 */
export function createMultipartParser(boundary: string): MultipartParser {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  let state: "preamble" | "after-delimiter" | "headers" | "body" | "done" = "preamble";
  let held: Buffer = Buffer.from("\r\n");
  let parts = 0;

  return {
    push(chunk) {
      const events: MultipartEvent[] = [];
      let buffer = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      held = Buffer.alloc(0);
      for (;;) {
        if (state === "done") return events;
        if (state === "preamble" || state === "body") {
          const at = buffer.indexOf(delimiter);
          if (at < 0) {
            // Everything but what could be the start of a delimiter is body.
            const keep = Math.min(buffer.length, delimiter.length - 1);
            if (state === "body" && buffer.length > keep) events.push({ type: "data", bytes: buffer.subarray(0, buffer.length - keep) });
            held = Buffer.from(buffer.subarray(buffer.length - keep));
            return events;
          }
          if (state === "body") {
            if (at > 0) events.push({ type: "data", bytes: buffer.subarray(0, at) });
            events.push({ type: "end" });
          }
          buffer = buffer.subarray(at + delimiter.length);
          state = "after-delimiter";
        }
        if (state === "after-delimiter") {
          if (buffer.length < 2) {
            held = Buffer.from(buffer);
            return events;
          }
          if (buffer[0] === 0x2d && buffer[1] === 0x2d) {
            state = "done";
            return events;
          }
          // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
          const eol = buffer.indexOf("\r\n");
          if (eol < 0) {
            if (buffer.length > 256) throw malformed();
            held = Buffer.from(buffer);
            return events;
          }
          if (buffer.subarray(0, eol).toString("latin1").trim() !== "") throw malformed();
          buffer = buffer.subarray(eol + 2);
          state = "headers";
        }
        if (state === "headers") {
          const end = buffer.indexOf("\r\n\r\n");
          if (end < 0) {
            if (buffer.length > MAX_HEADER_BYTES) throw malformed();
            held = Buffer.from(buffer);
            return events;
          }
          if (++parts > MAX_PARTS) throw new GatewayError("invalid_request", `request body: more than ${MAX_PARTS} form parts`, { field: "file" });
          events.push({ type: "part", headers: headersOf(buffer.subarray(0, end).toString("utf8")) });
          // The body starts right after its headers; it ends at the next delimiter, whose CRLF is not the body's.
          buffer = buffer.subarray(end + 4);
          state = "body";
        }
      }
    },
    end() {
      if (state !== "done") throw malformed();
    },
  };
}
