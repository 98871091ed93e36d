import type { SluiceRedisClient } from "../store/redis-connection.js";
import { within } from "../store/within.js";

/** Rollup keys examined per SCAN step: each step is one short Redis call. */
const SCAN_COUNT = 1_000;

/**
 * KEYS: the rollup under the name, the rollup under the id. Adds every
 * field of the first into the second (what was counted under the id
 * already stays counted), keeps the longer time to live, and removes the
 * first, in one step: carried once however many replicas try.
 */
const MERGE_SCRIPT = `
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return 0 end
-- Rollups hold integers only; anything else is left where it is rather than half carried.
for i = 2, #fields, 2 do if not string.match(fields[i], '^-?%d+$') then return 0 end end
for i = 1, #fields, 2 do redis.call('HINCRBY', KEYS[2], fields[i], fields[i + 1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 and redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call('DEL', KEYS[1])
return 1
`;

/**
 * Versions before ids kept a key's and a level's rollups (requests, tokens,
 * spend and reservations per day, week and month) under its name: `{name}`,
 * `~team:{name}`, `~bl:{name}`. At the first start on a Redis that has them,
 * each is added to the rollup of the id of the key or level that bears the
 * name then (MERGE_SCRIPT: what was counted under the id already stays), so
 * the budgets of the running periods go on from what was spent. Runs once per
 * Redis (a marker key says it ran); replicas starting together may run it
 * at once, and a rollup is carried once whoever renames it. Rate windows
 * and leases are not carried: they live a minute, and a lease no longer
 * than its stream. Resolves with the rollups carried, or -1 when it had run.
 */
export async function carryNamedRollups(options: {
  readonly client: SluiceRedisClient;
  readonly prefix: string;
  readonly timeoutMs: number;
  /** Subject before ids → subject now (subjectOf), for every key and level that exists. */
  readonly subjects: ReadonlyMap<string, string>;
}): Promise<number> {
  const { client, prefix, timeoutMs, subjects } = options;
  const marker = `${prefix}ids:carried`;
  const bound = <T>(work: Promise<T>) => within(work, Math.max(1_000, timeoutMs * 4), "carry named rollups");
  if ((await bound(client.exists(marker))) === 1) return -1;
  const head = `${prefix}use:{`;
  let carried = 0;
  let cursor = "0";
  do {
    const [next, keys] = await bound(client.scan(cursor, "MATCH", `${head}*`, "COUNT", SCAN_COUNT));
    cursor = next;
    for (const key of keys) {
      const end = key.lastIndexOf("}:");
      const target = end > head.length ? subjects.get(key.slice(head.length, end)) : undefined;
      if (target === undefined) continue;
      if (Number(await bound(client.eval(MERGE_SCRIPT, 2, key, `${head}${target}${key.slice(end)}`))) === 1) carried++;
    }
  } while (cursor !== "0");
  await bound(client.set(marker, String(Date.now())));
  return carried;
}
