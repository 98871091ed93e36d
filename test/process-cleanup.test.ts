import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A replica suite whose third gateway failed to start left the two already
 * started running after the suite (~110 MB each). Every child a test file
 * starts through test/helpers/ is registered and stopped when the file
 * ends, however it ends: shown on a test file of its own that fails in
 * beforeAll with two processes started and no afterAll.
 */
describe("processes a test file started", () => {
  it("are stopped when the file ends, even when its start-up failed half-way", { timeout: 180_000 }, async () => {
    const pidFile = join(await mkdtemp(join(tmpdir(), "sluice-left-")), "pids");
    await writeFile(pidFile, "");
    const result = await run(process.execPath, ["node_modules/vitest/vitest.mjs", "run", "--config", "test/fixtures/left-running/vitest.config.ts"], {
      env: { ...process.env, LEFT_RUNNING_PIDS: pidFile },
      timeout: 170_000,
    }).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    );
    const pids = (await readFile(pidFile, "utf8")).split("\n").filter(Boolean).map(Number);
    expect(pids, result.output).toHaveLength(2);
    expect(result.code, result.output).toBe(1);
    expect(result.output).toContain("process exited with 3 before it was ready");
    expect(pids.filter(isRunning)).toEqual([]);
    expect(result.output).toContain("stopped 2 child process(es) the test file left running");
  });
});
