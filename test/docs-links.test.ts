import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

/** The documentation whose links must resolve: the README, docs/, and the READMEs beside the code. */
const DOCS = [
  "README.md",
  ...readdirSync("docs")
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
  "bench/README.md",
  "src/simulator/README.md",
];

/** Markdown lines outside fenced code blocks, with inline code spans blanked (a link inside backticks is not a link). */
function prose(markdown: string): string[] {
  let fence: string | undefined;
  const lines: string[] = [];
  for (const line of markdown.split("\n")) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    if (fence === undefined) lines.push(line);
  }
  return lines;
}

/** A heading's anchor as GitHub makes it: link text kept, lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a file's headings give, duplicates numbered as GitHub numbers them (`x`, `x-1`, …). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** Targets of inline links and images, and of reference definitions. */
function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of prose(markdown)) {
    const text = line.replace(/`[^`]*`/g, "");
    for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(m[1]!);
    const definition = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(text);
    if (definition) targets.push(definition[1]!);
  }
  return targets;
}

/**
 * The relative links of one file (at `path`, with text `markdown`) that do
 * not resolve: a file or folder that does not exist, or an anchor that no
 * heading of the target file gives. Links with a scheme (https:, mailto:)
 * are not checked.
 */
function brokenLinks(path: string, markdown: string, read: (file: string) => string | undefined): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [file = "", anchor] = target.split("#", 2);
    const resolved = file === "" ? path : normalize(join(dirname(path), decodeURIComponent(file)));
    const text = resolved === path ? markdown : read(resolved);
    if (text === undefined) {
      broken.push(`${target}: ${resolved} does not exist`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith(".md") && !anchors(text).has(anchor)) broken.push(`${target}: no heading in ${resolved} gives #${anchor}`);
  }
  return broken;
}

/** A file's text, "" for a folder, undefined when nothing is there. */
function readRepoFile(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  return file.endsWith(".md") ? readFileSync(file, "utf8") : "";
}

describe("links in the documentation", () => {
  it("covers the README, every page of docs/ and the READMEs beside the code", () => {
    expect(DOCS.length).toBeGreaterThanOrEqual(10);
    for (const file of DOCS) expect(existsSync(file), file).toBe(true);
  });

  for (const file of DOCS) {
    it(`every relative link and anchor in ${file} resolves`, () => {
      expect(brokenLinks(file, readFileSync(file, "utf8"), readRepoFile)).toEqual([]);
    });
  }
});

describe("the link check", () => {
  const pages: Record<string, string> = {
    "docs/a.md": "# Page A\n\n## Stream semantics\n\n## Deployment: replicas behind a load balancer\n\n## Notes\n\n## Notes\n",
  };
  const read = (file: string) => pages[file];

  it("accepts links to files, headings as GitHub anchors them, and repeated headings", () => {
    const text = "[a](a.md) [b](a.md#stream-semantics) [c](#page-b) [d](a.md#deployment-replicas-behind-a-load-balancer) [e](a.md#notes-1) [f](https://example.com/x#y)\n\n# Page B\n";
    expect(brokenLinks("docs/b.md", text, read)).toEqual([]);
  });

  it("names a missing file and a missing anchor", () => {
    const text = "See [gone](gone.md), [bad anchor](a.md#stream-semantic) and [here](#nowhere).\n\n# Page B\n";
    expect(brokenLinks("docs/b.md", text, read)).toEqual(["gone.md: docs/gone.md does not exist", "a.md#stream-semantic: no heading in docs/a.md gives #stream-semantic", "#nowhere: no heading in docs/b.md gives #nowhere"]);
  });

  it("ignores links inside code, and headings inside code", () => {
    const text = "`[x](gone.md)`\n\n```md\n[y](gone.md)\n# Fenced\n```\n\n[z](#fenced)\n";
    expect(brokenLinks("docs/b.md", text, read)).toEqual(["#fenced: no heading in docs/b.md gives #fenced"]);
  });

  it("makes anchors as GitHub does: code and punctuation dropped, link text kept", () => {
    expect(slug("OpenAI-compatible facade (`/v1/chat/completions`)")).toBe("openai-compatible-facade-v1chatcompletions");
    expect(slug("A request's path")).toBe("a-requests-path");
    expect(slug("Node.js versions")).toBe("nodejs-versions");
    expect(slug("`auth`")).toBe("auth");
    expect(slug("See [Tenancy](tenancy.md) now")).toBe("see-tenancy-now");
  });
});

describe("what the reference pages promise to say", () => {
  /** A section of a markdown file: from its heading to the next heading of the same level. */
  const section = (file: string, heading: string) => {
    const text = readFileSync(file, "utf8");
    const start = text.indexOf(`\n${heading}\n`);
    expect(start, `${file}: ${heading}`).toBeGreaterThanOrEqual(0);
    const level = heading.split(" ")[0]!;
    const end = text.indexOf(`\n${level} `, start + heading.length + 2);
    return text.slice(start, end < 0 ? undefined : end);
  };

  it("docs/tenancy.md names every column of spend.csv and what an empty group cell is", async () => {
    const { SPEND_CSV_FIGURES } = await import("../src/edges/openai/spend-csv.js");
    const reports = section("docs/tenancy.md", "## Reports");
    for (const column of SPEND_CSV_FIGURES) expect(reports).toContain(`\`${column}\``);
    expect(reports).toMatch(/empty cell/);
  });

  it("docs/tenancy.md gives the bounds of a tag", async () => {
    const { MAX_TAG_VALUE_CHARS } = await import("../src/tenancy/tags.js");
    const tags = section("docs/tenancy.md", "## Cost allocation by tag");
    expect(tags).toContain(`| a value | ${MAX_TAG_VALUE_CHARS} characters |`);
    expect(tags).toContain("| pairs in one `sluice-tags` header | 32 |");
  });

  it("docs/configuration.md says what store.postgres holds, that only the semantic cache needs pgvector, and how batches run", () => {
    const reference = readFileSync("docs/configuration.md", "utf8");
    const row = (name: string) => reference.split("\n").find((line) => line.startsWith(`| \`${name}\` |`)) ?? "";
    for (const feature of ["spend ledger", "audit log", "batches", "evaluation", "semantic cache"]) expect(row("store.postgres")).toContain(feature);
    expect(row("store.postgres.url")).toMatch(/Only the semantic cache needs the pgvector extension/);
    expect(reference).not.toContain("in-process worker");
  });

  it("docs/evaluation.md warns that the evaluation's key reads what was replayed", () => {
    expect(section("docs/evaluation.md", "## Privacy")).toMatch(/evaluation's key reads what was replayed/);
  });
});
