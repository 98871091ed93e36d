import { describe, expect, it } from "vitest";
import { redisRejection } from "../../src/store/redis-rejection.js";

/** Replies as Redis 7.0 words them: which say "the store cannot work as configured" and which pass with time. */
const REPLIES: ReadonlyArray<readonly [string, string, string | undefined]> = [
  ["a script's keys in several slots", "CROSSSLOT Keys in request don't hash to the same slot", "CROSSSLOT"],
  ["a standalone client on a cluster node", "MOVED 12182 127.0.0.1:7002", "MOVED"],
  ["an ACL user without the command", "NOPERM this user has no permissions to run the 'evalsha' command", "NOPERM"],
  ["an ACL user without a key", "NOPERM this user has no permissions to access one of the keys used as arguments", "NOPERM"],
  ["a wrong password", "WRONGPASS invalid username-password pair or user is disabled.", "WRONGPASS"],
  ["an ACL refusal inside a script", "ERR The user executing the script can't run this command or subcommand script: 3d45, on @user_script:4.", "ERR"],
  ["an undeclared key on another node", "ERR Script attempted to access a non local key in a cluster node script: 3d45", "ERR"],
  ["a proxy that filters scripts", "ERR unknown command 'evalsha', with args beginning with: ", "ERR"],
  ["a cluster mid-failover", "CLUSTERDOWN The cluster is down", undefined],
  ["a demoted primary", "READONLY You can't write against a read only replica.", undefined],
  ["a Redis loading its data", "LOADING Redis is loading the dataset in memory", undefined],
  ["a busy script", "BUSY Redis is busy running a script.", undefined],
  ["a full Redis", "OOM command not allowed when used memory > 'maxmemory'.", undefined],
  ["a lost connection", "Connection is closed.", undefined],
  ["another ERR", "ERR value is not an integer or out of range", undefined],
];

describe("which Redis replies are rejections", () => {
  for (const [name, message, code] of REPLIES) {
    it(`${name}: ${code ?? "transient"}`, () => {
      expect(redisRejection(new Error(message))).toBe(code);
    });
  }
  it("a non-error is not one", () => {
    expect(redisRejection("CROSSSLOT")).toBeUndefined();
  });
});
