import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;

describe("Sluice is MIT-licensed, and says so everywhere a tool looks", () => {
  it("LICENSE holds the MIT text with the authors' copyright", () => {
    const text = readFileSync("LICENSE", "utf8");
    expect(text.split("\n").slice(0, 3)).toEqual(["MIT License", "", "Copyright (c) 2026 The Sluice authors"]);
    const flat = text.replace(/\s+/g, " ");
    expect(flat).toContain("Permission is hereby granted, free of charge, to any person obtaining a copy of this software");
    expect(flat).toContain("The above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.");
    expect(flat).toContain('THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND');
  });

  it("package.json and the lockfile's root package name MIT", () => {
    expect(json("package.json").license).toBe("MIT");
    const root = (json("package-lock.json").packages as Record<string, { license?: string }>)[""];
    expect(root?.license).toBe("MIT");
  });

  it("the packed package carries LICENSE", async () => {
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { timeout: 60_000 });
    const [pack] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>;
    expect(pack!.files.map((f) => f.path)).toContain("LICENSE");
  });
});
