// Generates docs/configuration.md: the prose of scripts/configuration.template.md,
// then every key of the configuration schema (src/config/schema.ts) with its
// type, bounds and default as the schema says, and, from the metadata each
// key carries on its zod node (`.meta()`, see src/config/setting-meta.ts),
// what it means and whether a reload applies it. The reference cannot drift
// from the schema: `--check` (run by `npm run check`) fails when the file
// differs from what this script writes, and both modes fail when a key has
// no words or no reload class.
//
//   node scripts/gen-config-docs.mjs           write docs/configuration.md
//   node scripts/gen-config-docs.mjs --check   exit 1 if it is stale
//
// The sources are TypeScript and `npm run check` runs before any build, so
// esbuild bundles them (zod included) into one module, imported from a
// scratch folder.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadTs } from "./load-ts.mjs";

const root = new URL("..", import.meta.url).pathname;
const OUTPUT = "docs/configuration.md";
const TEMPLATE = "scripts/configuration.template.md";
const MARKER = "<!-- reference -->";

const ENTRY = `
export { z } from "zod";
export { configSchema, SETTING_GROUPS } from "./src/config/schema.ts";
`;

const loadSources = () => loadTs(ENTRY, "config-docs");

const number = (n) => n.toLocaleString("en-US");

/** `60000` (1 min), `4194304` (4 MiB): a default as written, and as a reader thinks of it. */
function literal(key, value) {
  const text = `\`${typeof value === "string" ? value : JSON.stringify(value)}\``;
  if (typeof value !== "number") return text;
  const units = key.endsWith("Ms")
    ? [
        [3_600_000, "h"],
        [60_000, "min"],
        [1_000, "s"],
      ]
    : key.endsWith("Bytes")
      ? [
          [1024 * 1024, "MiB"],
          [1024, "KiB"],
        ]
      : [];
  const unit = units.find(([size]) => value >= size && value % size === 0);
  return unit ? `${text} (${number(value / unit[0])} ${unit[1]})` : text;
}

/** zod bounds every integer by the safe range; those bounds say nothing to a reader. */
const stated = (n) => (n !== undefined && Math.abs(n) < Number.MAX_SAFE_INTEGER ? n : undefined);

function bounds(node) {
  const min = stated(node.minimum);
  const above = stated(node.exclusiveMinimum);
  const max = stated(node.maximum);
  const low = min !== undefined ? number(min) : above !== undefined ? `more than ${number(above)}` : undefined;
  const high = max !== undefined ? number(max) : undefined;
  if (low !== undefined && high !== undefined) return min !== undefined ? `, ${low} to ${high}` : `, ${low}, at most ${high}`;
  if (low !== undefined) return min !== undefined ? `, at least ${low}` : `, ${low}`;
  if (high !== undefined) return `, at most ${high}`;
  return "";
}

function lengths(min, max, unit) {
  if (min !== undefined && max !== undefined) return `, ${number(min)} to ${number(max)} ${unit}`;
  if (max !== undefined) return `, at most ${number(max)} ${unit}`;
  if (min !== undefined && min > 1) return `, at least ${number(min)} ${unit}`;
  return "";
}

/** A schema node's type as the reference shows it. */
function typeOf(node, mapKey) {
  if (node.enum) return node.enum.map((v) => `\`${v}\``).join(", ");
  switch (node.type) {
    case "boolean":
      return "boolean";
    case "integer":
    case "number":
      return `${node.type}${bounds(node)}`;
    case "string": {
      if (node.format === "uri") return "URL";
      if (node.pattern) return `string matching \`${node.pattern}\`${lengths(node.minLength, node.maxLength, "characters")}`;
      if (node.minLength === 1 && node.maxLength === undefined) return "non-empty string";
      return `string${lengths(node.minLength, node.maxLength, "characters")}`;
    }
    case "array":
      return `list of ${node.items.type === "object" ? "objects" : typeOf(node.items).replace(/^string/, "strings")}${lengths(node.minItems, node.maxItems, "items")}`;
    case "object":
      return node.properties ? "object" : `map of \`${mapKey}\` → ${typeOf(node.additionalProperties)}`;
    default:
      throw new Error(`no type shown for schema node ${JSON.stringify(node)}`);
  }
}

/** A map's entries or a list's items, as the schema node that describes one of them. */
function children(node, path) {
  if (node.type === "object" && node.properties) {
    const required = new Set(node.required ?? []);
    return Object.entries(node.properties).map(([key, child]) => ({ path: path ? `${path}.${key}` : key, key, node: child, required: required.has(key) }));
  }
  if (node.type === "object" && node.additionalProperties) {
    if (!node.mapKey) throw new Error(`${path}: a map without a placeholder for its keys (meta mapKey)`);
    return children(node.additionalProperties, `${path}.${node.mapKey}`);
  }
  if (node.type === "array" && (node.items.type === "object" || node.items.additionalProperties)) return children(node.items, `${path}[]`);
  return [];
}

function escapeCell(text) {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/** A key's words, as its schema node carries them. */
function wordsOf(node) {
  return { text: node.description ?? "", unset: node.unset, reload: node.reloadText };
}

const RELOAD = { live: "yes", restart: "restart" };

function generate({ z, configSchema, SETTING_GROUPS }) {
  const schema = z.toJSONSchema(configSchema, { io: "input" });
  const groupWords = new Map(SETTING_GROUPS.map((g) => z.toJSONSchema(g, { io: "input" })).map((node) => [node.group, node]));
  const problems = [];
  const groups = new Map();

  const doc = (child) => {
    const words = wordsOf(child.node);
    if (!words.text) problems.push(`${child.path}: in the schema without words; give its node .meta({ description })`);
    else if (child.node.group && words.text === groupWords.get(child.node.group)?.description) problems.push(`${child.path}: says only what its group says; give it words of its own`);
    return words;
  };

  /** The reload cell: the key's own words for it, else the class marked on it or on the nearest key above it. */
  const reloadOf = (child, words, inherited) => {
    if (words.reload) return words.reload;
    const reload = child.node.reload ?? inherited;
    if (!reload) problems.push(`${child.path}: no reload class on it or above it; mark its node .meta({ reload })`);
    return RELOAD[reload] ?? "";
  };

  const defaultOf = (child, words) => {
    const { node, required, path, key } = child;
    if (node.default !== undefined) {
      if (typeof node.default === "object" && !Array.isArray(node.default)) return "";
      return literal(key, node.default);
    }
    if (typeof words?.unset === "number") return literal(key, words.unset);
    if (words?.unset) return `unset: ${words.unset}`;
    if (required) return "required";
    problems.push(`${path}: optional without a default; say what leaving it out means (meta unset)`);
    return "";
  };

  const rows = (node, path, inherited) => {
    const out = [];
    for (const child of children(node, path)) {
      const words = doc(child);
      const reload = reloadOf(child, words, inherited);
      const name = child.node.group;
      if (name) {
        const group = groups.get(name) ?? { node: child.node, places: [], reloads: new Set() };
        if (JSON.stringify(shape(group.node)) !== JSON.stringify(shape(child.node))) problems.push(`${child.path}: not the same keys as ${group.places[0]}, so not one group "${name}"`);
        group.places.push(child.path);
        group.reloads.add(reload);
        groups.set(name, group);
        const title = child.node.title ?? name;
        out.push([`\`${child.path}\``, `object: see [${title}](#${slug(title)})`, defaultOf(child, words), reload, words.text]);
        continue;
      }
      out.push([`\`${child.path}\``, typeOf(child.node, child.node.mapKey), defaultOf(child, words), reload, words.text]);
      out.push(...rows(child.node, child.path, child.node.reload ?? inherited));
    }
    return out;
  };

  const table = (body) => ["| key | type | default | reload | meaning |", "|---|---|---|---|---|", ...body.map((cells) => `| ${cells.map(escapeCell).join(" | ")} |`)].join("\n");

  const sections = [];
  for (const top of children(schema, "")) {
    const words = doc(top);
    const absent = words.unset ? ` Absent: ${words.unset}.` : "";
    sections.push(`### \`${top.path}\`\n\n${words.text}${absent}\n\n${table(rows(top.node, top.path, top.node.reload))}`);
  }

  for (const [name, group] of groups) {
    const words = groupWords.get(name);
    if (!words) {
      problems.push(`group "${name}" (${group.places.join(", ")}): not in SETTING_GROUPS (src/config/schema.ts)`);
      continue;
    }
    if (group.reloads.size !== 1) problems.push(`group "${name}": its places differ in whether a reload applies them`);
    const [reload] = group.reloads;
    const body = children(words, "").map((child) => {
      const keyWords = wordsOf(child.node);
      if (!keyWords.text) problems.push(`${name}.${child.key}: in the schema without words; give its node .meta({ description })`);
      return [`\`${child.key}\``, typeOf(child.node), defaultOf({ ...child, path: `${name}.${child.key}` }, keyWords), reload, keyWords.text];
    });
    const places = group.places.map((p) => `\`${p}\``).join(", ");
    sections.push(`### ${words.title}\n\n${words.description} Used at ${places}.\n\n${table(body)}`);
  }
  for (const name of groupWords.keys()) if (!groups.has(name)) problems.push(`group "${name}": no key of the schema uses it`);

  if (problems.length > 0) {
    console.error(`the configuration reference cannot be generated:\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }

  const reference = [
    "## Reference",
    "Every key of the file, generated from the schema (`src/config/schema.ts`), where each key is declared with its words and its reload class. " +
      "**reload** says whether a reload (`kill -HUP`, or a change to a watched file) applies a changed value to the running gateway, " +
      "or whether it waits for a restart (see [Reloading the configuration](operations.md#reloading-the-configuration)).",
    ...sections,
  ].join("\n\n");

  const template = readFileSync(join(root, TEMPLATE), "utf8");
  if (template.split(MARKER).length !== 2) throw new Error(`${TEMPLATE} must hold ${MARKER} exactly once`);
  const notice = `<!-- Generated by scripts/gen-config-docs.mjs from ${TEMPLATE}, src/config/schema.ts (each key's .meta()): edit those, then run npm run docs. -->\n`;
  return notice + template.replace(MARKER, () => reference);
}

/** A group's node as every place shares it: without what each place says of it. */
function shape(node) {
  const { default: _default, description: _description, unset: _unset, reload: _reload, reloadText: _reloadText, ...rest } = node;
  return rest;
}

/** A heading's anchor as GitHub makes it. */
function slug(heading) {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

const text = generate(await loadSources());
const path = join(root, OUTPUT);
if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(path, "utf8");
  } catch {}
  if (current !== text) {
    const line = text.split("\n").findIndex((l, i) => l !== current.split("\n")[i]);
    console.error(`${OUTPUT} is stale (first difference at line ${line + 1}): run npm run docs and commit it`);
    process.exit(1);
  }
  console.log(`${OUTPUT} matches the schema`);
} else {
  writeFileSync(path, text);
  console.log(`wrote ${OUTPUT}`);
}
