// Fails when gen/ is not exactly what `buf generate` makes from proto/:
// gen/ is committed so consumers need no toolchain, and must never drift.
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = process.cwd();
const bin = join(root, "node_modules", ".bin");
const work = mkdtempSync(join(tmpdir(), "sluice-gen-"));
try {
  for (const entry of ["proto", "buf.yaml", "buf.gen.yaml"]) cpSync(join(root, entry), join(work, entry), { recursive: true });
  execFileSync(join(bin, "buf"), ["generate"], {
    cwd: work,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    stdio: "inherit",
  });
  const files = (dir) =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : [path];
    });
  const expected = new Map(files(join(work, "gen")).map((f) => [relative(join(work, "gen"), f), readFileSync(f, "utf8")]));
  const actual = new Map(files(join(root, "gen")).map((f) => [relative(join(root, "gen"), f), readFileSync(f, "utf8")]));
  const problems = [];
  for (const [name, text] of expected) {
    if (!actual.has(name)) problems.push(`missing: gen/${name}`);
    else if (actual.get(name) !== text) problems.push(`differs: gen/${name}`);
  }
  for (const name of actual.keys()) if (!expected.has(name)) problems.push(`not generated from proto/: gen/${name}`);
  if (problems.length > 0) {
    console.error(`gen/ has drifted from proto/ (run npm run generate and commit):\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`gen/ matches proto/ (${expected.size} files)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
