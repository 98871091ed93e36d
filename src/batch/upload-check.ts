import type { BatchSettings } from "../config/settings.js";
import { GatewayError } from "../core/errors.js";
import type { StructureLimits } from "../core/structure-limits.js";
import { createBatchLineReader } from "./batch-file.js";

/** What an upload's check is configured with: plain data, so that it crosses into a worker thread as it is. */
export interface UploadCheckConfig {
  readonly settings: Pick<BatchSettings, "maxLines" | "maxLineBytes" | "maxFileBytes">;
  readonly limits: StructureLimits;
  /** Characters of checked text gathered before a piece is handed on to be stored. */
  readonly chunkChars: number;
}

/** Bytes in, checked line-aligned text out: pieces of about `chunkChars` to store, none when not that much is checked yet. */
export interface UploadCheck {
  /** The next bytes of the file. Throws a GatewayError at the first fault (`file: line N: …`, or the file too large). */
  push(bytes: Uint8Array): string[];
  /** The file ended: its last line (with no newline) is checked, and what is left is handed on. Throws when it held no request. */
  end(): string[];
}

const NEWLINE = 0x0a;

/**
 * The check of a batch file as its bytes come, with no I/O and no timer:
 * bytes are split at newlines, each line decoded (UTF-8, strict) and
 * checked (batch-file.ts), and the checked text handed back a piece of
 * about `chunkChars` at a time, each ending at a line's end. The bytes are
 * kept as they came (a BOM and `\r\n` included), so the stored file reads
 * back byte for byte. Only a line in progress and the piece being gathered
 * are held. It runs in an upload's worker thread (upload-worker.ts): this
 * is the CPU-heavy part of an upload, and none of it touches the event
 * loop that relays streams.
 */
export function createUploadCheck(config: UploadCheckConfig): UploadCheck {
  const { settings } = config;
  const reader = createBatchLineReader(settings, config.limits);
  // fatal: a byte that is not UTF-8 is refused, not replaced; ignoreBOM: the BOM stays in the text stored.
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  let total = 0;
  let n = 0;
  let gathered = "";
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let out: string[] = [];

  const take = (bytes: Buffer, ending: string) => {
    n++;
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      throw new GatewayError("invalid_request", `file: line ${n}: not UTF-8 text`, { field: "file" });
    }
    reader.line(text, n);
    gathered += text + ending;
    if (gathered.length >= config.chunkChars) {
      out.push(gathered);
      gathered = "";
    }
  };
  const handOn = () => {
    const pieces = out;
    out = [];
    return pieces;
  };

  return {
    push(bytes) {
      total += bytes.byteLength;
      if (total > settings.maxFileBytes) throw new GatewayError("payload_too_large", `file: larger than ${settings.maxFileBytes} bytes (batch.maxFileBytes)`, { field: "file" });
      const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      let from = 0;
      for (let at = buffer.indexOf(NEWLINE); at >= 0; at = buffer.indexOf(NEWLINE, from)) {
        const piece = buffer.subarray(from, at);
        const line = partial.length === 0 ? piece : Buffer.concat([...partial, piece]);
        partial = [];
        partialBytes = 0;
        from = at + 1;
        take(line, "\n");
      }
      if (from < buffer.length) {
        partial.push(buffer.subarray(from));
        partialBytes += buffer.length - from;
        // A line longer than any line may be (its \r included) is refused before it is all held.
        if (partialBytes > settings.maxLineBytes + 1) throw new GatewayError("invalid_request", `file: line ${n + 1}: longer than ${settings.maxLineBytes} bytes (batch.maxLineBytes)`, { field: "file" });
      }
      return handOn();
    },
    end() {
      if (partialBytes > 0) take(Buffer.concat(partial), "");
      partial = [];
      partialBytes = 0;
      reader.end();
      if (gathered !== "") out.push(gathered);
      gathered = "";
      return handOn();
    },
  };
}
