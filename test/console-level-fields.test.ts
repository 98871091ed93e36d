import { describe, expect, it } from "vitest";
import { budgetText, EMPTY_FIELDS, fieldsOf, limitsText, nameProblem, parseLevel, parseModels } from "../console/src/tenancy/level-fields.js";
import { Period } from "../gen/sluice/admin/v1/admin_service_pb.js";

/**
 * What the Keys, Teams and Business lines forms send for what was typed:
 * exact dollars (no float on the way to millionths), the admin API's own
 * bounds, and a form that starts from a level's settings says them back
 * unchanged.
 */
const fields = (over: Partial<typeof EMPTY_FIELDS>) => ({ ...EMPTY_FIELDS, ...over });

describe("the tenancy forms' fields", () => {
  it("turn typed dollars into exact millionths, and reject what the admin API would", () => {
    const cases: Array<[string, bigint | "problem" | undefined]> = [
      ["", undefined],
      ["25", 25_000_000n],
      ["7.5", 7_500_000n],
      ["$0.000001", 1n],
      ["0.29", 290_000n], // 0.29 * 1e6 is 289999.99999999997 in floating point
      ["1000000000", 1_000_000_000_000_000n],
      ["1000000000.01", "problem"],
      ["0", "problem"],
      ["7.1234567", "problem"],
      ["-1", "problem"],
      ["1e3", "problem"],
      ["ten", "problem"],
    ];
    for (const [typed, expected] of cases) {
      const parsed = parseLevel(fields({ usd: typed, period: "week" }));
      if (expected === "problem") expect(parsed.ok, typed).toBe(false);
      else expect(parsed, typed).toEqual({ ok: true, value: { limits: {}, budget: expected === undefined ? undefined : { usdMicros: expected, period: Period.WEEK } } });
    }
  });

  it("take whole limits within the proto's ranges, and name every field at fault at once", () => {
    expect(parseLevel(fields({ rpm: " 60 ", tpm: "100000", streams: "4" }))).toEqual({ ok: true, value: { limits: { requestsPerMinute: 60, tokensPerMinute: 100_000n, concurrentStreams: 4 }, budget: undefined } });
    const parsed = parseLevel(fields({ rpm: "0", tpm: "1000000001", streams: "2.5", usd: "x" }));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(Object.keys(parsed.problems).sort()).toEqual(["rpm", "streams", "tpm", "usd"]);
  });

  it("say a level's settings back as the edit form starts from them, and as the table shows them", () => {
    const limits = { requestsPerMinute: 30, tokensPerMinute: 5000n } as never;
    const budget = { usdMicros: 7_250_000n, period: Period.DAY } as never;
    expect(fieldsOf(limits, budget)).toEqual({ rpm: "30", tpm: "5000", streams: "", usd: "7.25", period: "day" });
    expect(parseLevel(fieldsOf(limits, budget))).toEqual({ ok: true, value: { limits: { requestsPerMinute: 30, tokensPerMinute: 5000n }, budget: { usdMicros: 7_250_000n, period: Period.DAY } } });
    expect(fieldsOf(undefined, undefined)).toEqual(EMPTY_FIELDS);
    expect(limitsText(limits)).toBe("30 req/min · 5,000 tok/min");
    expect(limitsText(undefined)).toBe("none");
    expect(budgetText(budget)).toBe("$7.2500 / day");
    expect(budgetText({ usdMicros: 1_000_000n, period: Period.UNSPECIFIED } as never)).toBe("$1.0000 / month");
  });

  it("check names by the admin API's rule, and split aliases on commas and spaces", () => {
    expect(nameProblem("search-bot.v2_1")).toBeUndefined();
    for (const bad of ["", "-lead", "has space", "x".repeat(65), "é"]) expect(nameProblem(bad), bad).toBeDefined();
    expect(parseModels(" demo, fast  smart,,")).toEqual(["demo", "fast", "smart"]);
    expect(parseModels("")).toEqual([]);
  });
});
