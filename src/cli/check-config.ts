import { ConfigError, loadConfigFile } from "../config/config.js";
import { describeUnpriced, unpricedBudgets } from "../tenancy/unpriced-budgets.js";

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * `sluice check-config FILE` (or `--config FILE --check`): the whole
 * start-up check without starting anything, every problem in one report,
 * so a deploy pipeline can reject a bad file before it reaches a replica.
 * It runs exactly what start-up runs. Returns the exit status: 0 when the
 * file would start, 1 otherwise.
 */
export async function checkConfigCommand(path: string, env: NodeJS.ProcessEnv, out: NodeJS.WritableStream): Promise<number> {
  try {
    const config = await loadConfigFile(path, env);
    out.write(`${path}: OK (${count(config.providers.size, "provider")}, ${count(config.models.size, "model alias", "model aliases")})\n`);
    // Warnings: the file starts, but something in it will not do what it seems to.
    for (const u of unpricedBudgets(config)) out.write(`warning: ${describeUnpriced(u)}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    out.write(`${error.message}\n`);
    return 1;
  }
}
