import { type ClientRequest, request } from "node:http";

/** A `POST /v1/files` written by hand: the test decides when each piece of the file goes, and whether the length is declared. */
export interface RawUpload {
  readonly req: ClientRequest;
  /** Writes a piece of the file; resolves once the socket took it. */
  write(piece: string | Buffer): Promise<void>;
  /** Writes the form's tail: the upload is complete. */
  end(): void;
  /** The gateway's answer (status 0: the connection closed without one). */
  readonly answered: Promise<{ readonly status: number; readonly body: string }>;
}

const BOUNDARY = "----sluice-raw-upload";
const HEAD = `--${BOUNDARY}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="file"; filename="raw.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`;
const TAIL = `\r\n--${BOUNDARY}--\r\n`;

/** Opens the upload of a file of `fileBytes` bytes (declared as content-length), or of unknown length (chunked) when undefined. */
export function rawUpload(base: string, key: string | undefined, fileBytes: number | undefined): RawUpload {
  const url = new URL(`${base}/v1/files`);
  const headers: Record<string, string> = { "content-type": `multipart/form-data; boundary=${BOUNDARY}` };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (fileBytes !== undefined) headers["content-length"] = String(Buffer.byteLength(HEAD) + fileBytes + Buffer.byteLength(TAIL));
  const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers });
  const answered = new Promise<{ status: number; body: string }>((resolve) => {
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", () => resolve({ status: 0, body: "" }));
  });
  req.write(HEAD);
  return {
    req,
    write: (piece) => new Promise<void>((resolve, reject) => req.write(piece, (error) => (error ? reject(error) : resolve()))),
    end: () => req.end(TAIL),
    answered,
  };
}

/** Line `i` of a chat batch file, `width` bytes with its newline. */
export function chatLine(i: number, width: number, prefix = "r"): string {
  const head = JSON.stringify({ custom_id: `${prefix}-${String(i).padStart(6, "0")}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: "" }] } });
  return `${head.replace('"content":""', `"content":"${"x".repeat(Math.max(0, width - head.length - 1))}"`)}\n`;
}
