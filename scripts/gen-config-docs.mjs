// Generates docs/configuration.md: the prose of scripts/configuration.template.md,
// then every key of the configuration schema (src/config/schema.ts) with its
// type, bounds and default as the schema says, whether a reload applies it
// (src/config/restart-only.ts), and what it means (src/config/config-docs.ts).
// The reference cannot drift from the schema: `--check` (run by `npm run
// check`) fails when the file differs from what this script writes, and
// both modes fail when a key has no words or words name no key.
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
export { configSchema } from "./src/config/schema.ts";
export { CONFIG_DOCS, CONFIG_GROUPS, MAP_KEYS } from "./src/config/config-docs.ts";
export { LIVE_SETTINGS, RESTART_ONLY_SETTINGS } from "./src/config/restart-only.ts";
`;

const loadSources = () => loadTs(ENTRY, "config-docs");

const number = (n) => n.toLocaleString("en-US");

/** `60000` (1 min), `4194304` (4 MiB): a default as written, and as a reader thinks of it. */
function literal(key, value) {
  const text = `\`${typeof value === "string" ? value : JSON.stringify(value)}\``;
  if (typeof value !== "number") return text;
  const units = key.endsWith("Ms")
    ? [[3_600_000, "h"], [60_000, "min"], [1_000, "s"]]
    : key.endsWith("Bytes")
      ? [[1024 * 1024, "MiB"], [1024, "KiB"]]
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
function children(node, path, mapKeys) {
  if (node.type === "object" && node.properties) {
    const required = new Set(node.required ?? []);
    return Object.entries(node.properties).map(([key, child]) => ({ path: path ? `${path}.${key}` : key, key, node: child, required: required.has(key) }));
  }
  if (node.type === "object" && node.additionalProperties) {
    const placeholder = mapKeys[path];
    if (!placeholder) throw new Error(`${path}: a map without a placeholder for its keys in MAP_KEYS`);
    return children(node.additionalProperties, `${path}.${placeholder}`, mapKeys);
  }
  if (node.type === "array" && (node.items.type === "object" || node.items.additionalProperties)) return children(node.items, `${path}[]`, mapKeys);
  return [];
}

function escapeCell(text) {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

function generate({ z, configSchema, CONFIG_DOCS, CONFIG_GROUPS, MAP_KEYS, LIVE_SETTINGS, RESTART_ONLY_SETTINGS }) {
  const schema = z.toJSONSchema(configSchema, { io: "input" });
  const problems = [];
  const used = new Set();
  const groups = new Map();

  const doc = (path) => {
    used.add(path);
    const found = CONFIG_DOCS[path];
    if (!found) problems.push(`${path}: in the schema, not in src/config/config-docs.ts`);
    return found ?? { text: "" };
  };

  const reloadOf = (path, words) => {
    if (words?.reload) return words.reload;
    const matches = [...RESTART_ONLY_SETTINGS.map((s) => [s, "restart"]), ...LIVE_SETTINGS.map((s) => [s, "yes"])].filter(([s]) => path === s || path.startsWith(`${s}.`));
    matches.sort(([a], [b]) => b.length - a.length);
    if (matches.length === 0) problems.push(`${path}: neither restart-only nor live in src/config/restart-only.ts`);
    return matches[0]?.[1] ?? "";
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
    problems.push(`${path}: optional without a default; say what leaving it out means (unset) in src/config/config-docs.ts`);
    return "";
  };

  const rows = (node, path) => {
    const out = [];
    for (const child of children(node, path, MAP_KEYS)) {
      const words = doc(child.path);
      const reload = reloadOf(child.path, words);
      if (words.group) {
        const group = groups.get(words.group) ?? { node: child.node, places: [], reloads: new Set() };
        if (JSON.stringify(stripDefault(group.node)) !== JSON.stringify(stripDefault(child.node))) problems.push(`${child.path}: not the same keys as ${group.places[0]}, so not one group "${words.group}"`);
        group.places.push(child.path);
        group.reloads.add(reload);
        groups.set(words.group, group);
        const title = CONFIG_GROUPS[words.group]?.title ?? words.group;
        out.push([`\`${child.path}\``, `object: see [${title}](#${slug(title)})`, defaultOf(child, words), reload, words.text]);
        continue;
      }
      out.push([`\`${child.path}\``, typeOf(child.node, MAP_KEYS[child.path]), defaultOf(child, words), reload, words.text]);
      out.push(...rows(child.node, child.path));
    }
    return out;
  };

  const table = (body) => ["| key | type | default | reload | meaning |", "|---|---|---|---|---|", ...body.map((cells) => `| ${cells.map(escapeCell).join(" | ")} |`)].join("\n");

  const sections = [];
  for (const top of children(schema, "", MAP_KEYS)) {
    const words = doc(top.path);
    const absent = words.unset ? ` Absent: ${words.unset}.` : "";
    sections.push(`### \`${top.path}\`\n\n${words.text}${absent}\n\n${table(rows(top.node, top.path))}`);
  }

  for (const [name, group] of groups) {
    const words = CONFIG_GROUPS[name];
    if (!words) {
      problems.push(`group "${name}" (${group.places.join(", ")}): not in CONFIG_GROUPS`);
      continue;
    }
    if (group.reloads.size !== 1) problems.push(`group "${name}": its places differ in whether a reload applies them`);
    const [reload] = group.reloads;
    const body = children(group.node, "", MAP_KEYS).map((child) => {
      const keyWords = words.keys[child.key];
      if (!keyWords) problems.push(`${name}.${child.key}: in the schema, not in CONFIG_GROUPS.${name}.keys`);
      return [`\`${child.key}\``, typeOf(child.node), defaultOf(child, keyWords), reload, keyWords?.text ?? ""];
    });
    for (const key of Object.keys(words.keys)) if (!group.node.properties?.[key]) problems.push(`CONFIG_GROUPS.${name}.keys.${key}: no such key in the schema`);
    const places = group.places.map((p) => `\`${p}\``).join(", ");
    sections.push(`### ${words.title}\n\n${words.text} Used at ${places}.\n\n${table(body)}`);
  }
  for (const name of Object.keys(CONFIG_GROUPS)) if (!groups.has(name)) problems.push(`CONFIG_GROUPS.${name}: no key of the schema uses it`);
  for (const path of Object.keys(CONFIG_DOCS)) if (!used.has(path)) problems.push(`${path}: in src/config/config-docs.ts, not in the schema`);

  if (problems.length > 0) {
    console.error(`the configuration reference cannot be generated:\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }

  const reference = [
    "## Reference",
    "Every key of the file, generated from the schema (`src/config/schema.ts`) and the words in `src/config/config-docs.ts`. " +
      "**reload** says whether a reload (`kill -HUP`, or a change to a watched file) applies a changed value to the running gateway, " +
      "or whether it waits for a restart (see [Reloading the configuration](operations.md#reloading-the-configuration)).",
    ...sections,
  ].join("\n\n");

  const template = readFileSync(join(root, TEMPLATE), "utf8");
  if (template.split(MARKER).length !== 2) throw new Error(`${TEMPLATE} must hold ${MARKER} exactly once`);
  const notice = `<!-- Generated by scripts/gen-config-docs.mjs from ${TEMPLATE}, src/config/schema.ts and src/config/config-docs.ts: edit those, then run npm run docs. -->\n`;
  return notice + template.replace(MARKER, () => reference);
}

function stripDefault(node) {
  const { default: _default, ...rest } = node;
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
