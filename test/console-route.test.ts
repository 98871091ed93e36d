import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { defaultConfig } from "../src/config/default-config.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { h2request, rawExchange, statusOf } from "./helpers/raw.js";

const SCRIPT = "export const console = 'built';\n".repeat(50);
const PAGE = '<!doctype html><script type="module" src="./app-ABCD1234.js"></script>';

/** A stand-in for dist/console: a page, a content-hashed script with its gzip copy, and files that must not be served. */
async function fakeBuild(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-console-"));
  await writeFile(join(dir, "index.html"), PAGE);
  await writeFile(join(dir, "app-ABCD1234.js"), SCRIPT);
  await writeFile(join(dir, "app-ABCD1234.js.gz"), gzipSync(SCRIPT));
  await writeFile(join(dir, "notes.bin"), "not a console file");
  await mkdir(join(dir, "nested"));
  await writeFile(join(dir, "nested", "style.css"), "body{}");
  // Outside the console folder, next to it: what a traversal would be after.
  await writeFile(`${dir}-secret.txt`, "secret");
  return dir;
}

describe("/console static files", () => {
  let h: Harness;
  let dir: string;
  beforeAll(async () => {
    dir = await fakeBuild();
    h = await startHarness({ console: { access: "open" }, consoleDir: dir });
  });
  afterAll(async () => {
    await h.close();
    await rm(dir, { recursive: true, force: true });
    await rm(`${dir}-secret.txt`, { force: true });
  });

  it("redirects /console to /console/ (the page's relative URLs need the slash)", async () => {
    const res = await fetch(`${h.url}/console`, { redirect: "manual" });
    expect(res.status).toBe(308);
    expect(res.headers.get("location")).toBe("/console/");
  });

  it("serves the page with its content type, a validator, revalidation and headers that keep it to its own code", async () => {
    const res = await fetch(`${h.url}/console/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(PAGE);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("etag")).toMatch(/^"[\w-]+"$/);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(res.headers.get("content-security-policy")).toContain("connect-src 'self'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect((await fetch(`${h.url}/console/index.html`)).headers.get("etag")).toBe(res.headers.get("etag"));
  });

  it("answers a matching If-None-Match with 304 and no body", async () => {
    const etag = (await fetch(`${h.url}/console/app-ABCD1234.js`)).headers.get("etag")!;
    const res = await fetch(`${h.url}/console/app-ABCD1234.js`, { headers: { "if-none-match": `"other", ${etag}` } });
    expect(res.status).toBe(304);
    expect(await res.text()).toBe("");
  });

  it("caches content-hashed names for a year and serves the build's gzip copy only to clients that take it", async () => {
    const gz = await rawExchange(h.url, "GET /console/app-ABCD1234.js HTTP/1.1\r\nhost: x\r\naccept-encoding: br, gzip\r\nconnection: close\r\n\r\n");
    expect(statusOf(gz)).toBe(200);
    expect(gz).toMatch(/\r\ncontent-encoding: gzip\r\n/i);
    expect(gz).toMatch(/\r\ncache-control: public, max-age=31536000, immutable\r\n/i);
    expect(gz).toMatch(/\r\ncontent-type: text\/javascript; charset=utf-8\r\n/i);
    expect(gunzipSync(Buffer.from(gz.slice(gz.indexOf("\r\n\r\n") + 4), "latin1")).toString()).toBe(SCRIPT);
    for (const accept of ["", "accept-encoding: identity\r\n", "accept-encoding: gzip;q=0\r\n"]) {
      const plain = await rawExchange(h.url, `GET /console/app-ABCD1234.js HTTP/1.1\r\nhost: x\r\n${accept}connection: close\r\n\r\n`);
      expect(plain).not.toMatch(/content-encoding/i);
      expect(plain.endsWith(SCRIPT)).toBe(true);
    }
  });

  it("answers HEAD with the headers only, other methods with 405", async () => {
    const head = await rawExchange(h.url, "HEAD /console/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    expect(statusOf(head)).toBe(200);
    expect(head).toMatch(new RegExp(`\\r\\ncontent-length: ${PAGE.length}\\r\\n`, "i"));
    expect(head.endsWith("\r\n\r\n")).toBe(true);
    const post = await fetch(`${h.url}/console/`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("serves exactly the built files: no traversal, no gzip companions as files, no unknown kinds", async () => {
    const secret = `${dir.split("/").at(-1)}-secret.txt`;
    for (const path of [
      `/console/../${secret}`,
      `/console/%2e%2e/${secret}`,
      `/console/..%2f${secret}`,
      "/console//etc/passwd",
      "/console/app-ABCD1234.js.gz",
      "/console/notes.bin",
      "/console/nested/../index.html",
      `/console/${"a".repeat(5000)}.js`,
    ]) {
      const res = await rawExchange(h.url, `GET ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
      expect(statusOf(res), path).toBe(404);
      expect(res).not.toContain("secret");
    }
    // A file in a subfolder is served under its own path.
    const nested = await fetch(`${h.url}/console/nested/style.css`);
    expect(nested.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(await nested.text()).toBe("body{}");
  });

  it("serves the same over HTTP/2", async () => {
    const res = await h2request(h.url, { ":method": "GET", ":path": "/console/app-ABCD1234.js", "accept-encoding": "gzip" });
    expect(res.headers[":status"]).toBe(200);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(res.body).toString()).toBe(SCRIPT);
  });
});

describe("/console when the console is not built, or off", () => {
  it("says it is not built (503) instead of a bare 404", async () => {
    const h = await startHarness({ console: { access: "open" }, consoleDir: join(tmpdir(), "sluice-no-console-here") });
    try {
      const res = await fetch(`${h.url}/console/`);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain("npm run build");
    } finally {
      await h.close();
    }
  });

  it("is 404 with access off, even when an admin key is configured", async () => {
    const h = await startHarness({ console: { access: "off" }, env: { ADMIN: "an-admin-key-of-enough-length" }, auth: { adminKeyEnv: "ADMIN" } });
    try {
      const res = await fetch(`${h.url}/console/`);
      await res.arrayBuffer();
      expect(res.status).toBe(404);
    } finally {
      await h.close();
    }
  });
});

describe("console configuration", () => {
  const minimal = { providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:1/v1" } }, models: { m: { provider: "p", model: "x" } } };

  it("defaults to admin access with an admin key, off without, and open for the built-in demo", () => {
    expect(resolveConfig(minimal, {}).console).toEqual({ access: "off", maxWatchers: 16 });
    const withAdmin = resolveConfig({ ...minimal, auth: { adminKeyEnv: "ADMIN" } }, { ADMIN: "an-admin-key-of-enough-length" });
    expect(withAdmin.console.access).toBe("admin");
    expect(resolveConfig(defaultConfig("http://127.0.0.1:1/v1"), {}).console.access).toBe("open");
  });

  it("refuses admin access without an admin key, and bad values, in the one report", () => {
    let message = "";
    try {
      resolveConfig({ ...minimal, console: { access: "admin", maxWatchers: 0, extra: 1 } }, {}, "sluice.yaml");
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("console.access: admin needs auth.adminKeyEnv");
    expect(message).toContain("console.maxWatchers");
    expect(message).toContain("extra");
    expect(() => resolveConfig({ ...minimal, console: { access: "public" } }, {})).toThrow(/console\.access/);
  });
});
