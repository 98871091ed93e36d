import { describe, expect, it } from "vitest";
import { boundaryOf, createMultipartParser, type MultipartEvent } from "../../src/http/multipart.js";

/** Feeds `body` in the given pieces; the parts as (name, filename, body) in order. */
function parse(boundary: string, pieces: readonly Buffer[]) {
  const parser = createMultipartParser(boundary);
  const parts: Array<{ name: string; filename?: string; bytes: Buffer[] }> = [];
  const take = (events: MultipartEvent[]) => {
    for (const e of events) {
      if (e.type === "part") parts.push({ name: e.headers.name, ...(e.headers.filename === undefined ? {} : { filename: e.headers.filename }), bytes: [] });
      // Copied: a slice is valid only until the next push. Decoded at the end: a piece may split a character.
      else if (e.type === "data") parts.at(-1)!.bytes.push(Buffer.from(e.bytes));
    }
  };
  for (const piece of pieces) take(parser.push(piece));
  parser.end();
  return parts.map(({ bytes, ...part }) => ({ ...part, body: Buffer.concat(bytes).toString("utf8") }));
}

const BOUNDARY = "----formdata-sluice-7f3a";
const FILE = '{"custom_id":"a"}\r\n{"custom_id":"b — é 🙂"}\n--not-the-boundary\r\n';
const BODY = Buffer.from(
  `preamble to ignore\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="my \\"big\\".jsonl"\r\nContent-Type: application/jsonl\r\n\r\n${FILE}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="empty"\r\n\r\n\r\n--${BOUNDARY}--\r\nepilogue`,
);
const EXPECTED = [
  { name: "purpose", body: "batch" },
  { name: "file", filename: 'my "big".jsonl', body: FILE },
  { name: "empty", body: "" },
];

describe("the streaming multipart parser", () => {
  it("reads the boundary of a form's content type, quoted or not, and nothing else", () => {
    expect(boundaryOf(`multipart/form-data; boundary=${BOUNDARY}`)).toBe(BOUNDARY);
    expect(boundaryOf('multipart/form-data; charset=utf-8; boundary="a b"')).toBe("a b");
    expect(boundaryOf("application/json")).toBeUndefined();
    expect(boundaryOf("multipart/form-data")).toBeUndefined();
  });

  it("gives the same parts whole, split at every byte, and byte by byte", () => {
    expect(parse(BOUNDARY, [BODY])).toEqual(EXPECTED);
    for (let at = 1; at < BODY.length; at++) expect(parse(BOUNDARY, [BODY.subarray(0, at), BODY.subarray(at)]), `split at ${at}`).toEqual(EXPECTED);
    expect(
      parse(
        BOUNDARY,
        [...BODY].map((b) => Buffer.from([b])),
      ),
    ).toEqual(EXPECTED);
  });

  it("holds no more than a delimiter of a part's body between pushes", () => {
    const parser = createMultipartParser(BOUNDARY);
    parser.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\n`));
    let seen = 0;
    for (let i = 0; i < 100; i++) for (const e of parser.push(Buffer.alloc(64 * 1024, 0x61))) if (e.type === "data") seen += e.bytes.length;
    expect(100 * 64 * 1024 - seen).toBeLessThan(BOUNDARY.length + 4);
  });

  it("refuses a body that never closes, a part without a name, and endless headers", () => {
    const open = createMultipartParser(BOUNDARY);
    open.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc`));
    expect(() => open.end()).toThrow(/not valid multipart/);
    expect(() => createMultipartParser(BOUNDARY).push(Buffer.from(`--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nx`))).toThrow(/not valid multipart/);
    const endless = createMultipartParser(BOUNDARY);
    expect(() => {
      for (let i = 0; i < 10; i++) endless.push(Buffer.from(`--${BOUNDARY}\r\nX-Pad: ${"p".repeat(1024)}`.slice(i === 0 ? 0 : BOUNDARY.length + 4)));
    }).toThrow(/not valid multipart/);
  });
});
