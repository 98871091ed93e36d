// Writes the gateway's configuration with the store URLs in it: reads the
// ConfigMap's file, replaces each ${NAME} placeholder of the variables named
// on the command line with that variable's value (as a JSON string, which
// YAML reads as a double-quoted string, so any character of a URL is kept),
// and writes the result, readable by its owner only, to a memory-backed
// volume. The ConfigMap itself never holds a password. Never prints a value.
import { readFileSync, writeFileSync } from "node:fs";

const [from, to, ...names] = process.argv.slice(2);
let text = readFileSync(from, "utf8");
for (const name of names) {
  const value = process.env[name];
  if (value === undefined || value === "") {
    process.stderr.write(`render-config: environment variable ${name} is not set (give it in the chart's secrets or existingSecret)\n`);
    process.exit(1);
  }
  const placeholder = new RegExp(`(['"]?)\\$\\{${name}\\}\\1`, "g");
  if (text.search(placeholder) < 0) {
    process.stderr.write(`render-config: ${from} has no placeholder \${${name}}\n`);
    process.exit(1);
  }
  text = text.replace(placeholder, () => JSON.stringify(value));
}
writeFileSync(to, text, { mode: 0o600 });
process.stdout.write(`render-config: wrote ${to} (${names.join(", ")})\n`);
