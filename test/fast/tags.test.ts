import { describe, expect, it } from "vitest";
import { allocationTags, droppedTagsHeader, MAX_TAG_VALUE_CHARS, parseTagsHeader } from "../../src/tenancy/tags.js";

describe("the sluice-tags header", () => {
  it("reads key=value pairs, trimmed, with percent-encoded values", () => {
    expect(parseTagsHeader(" project=search , env=prod,note=a%2Cb%3Dc")).toEqual({ project: "search", env: "prod", note: "a,b=c" });
    expect(parseTagsHeader(undefined)).toEqual({});
    expect(parseTagsHeader("  ")).toEqual({});
  });

  it("refuses what it cannot read, naming the header, rather than keeping half of it", () => {
    for (const bad of ["project", "=x", "pro ject=x", "a=1,a=2", "a=%E0%A4%A", `${"k".repeat(65)}=v`, Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",")]) {
      expect(() => parseTagsHeader(bad), bad).toThrow(expect.objectContaining({ code: "invalid_request", field: "sluice-tags" }));
    }
  });
});

describe("allocation tags", () => {
  const allowed = new Set(["project", "env"]);

  it("keeps only allowed keys, the header over the body, and names every other tag", () => {
    const result = allocationTags({ project: "body", team: "x" }, { project: "header", debug: "1" }, allowed);
    expect(result.tags).toEqual({ project: "header" });
    expect(result.dropped).toEqual(["team", "debug"]);
  });

  it("drops a value longer than the bound instead of cutting it", () => {
    const result = allocationTags({ env: "v".repeat(MAX_TAG_VALUE_CHARS + 1), project: "v".repeat(MAX_TAG_VALUE_CHARS) }, {}, allowed);
    expect(Object.keys(result.tags)).toEqual(["project"]);
    expect(result.dropped).toEqual(["env"]);
  });

  it("writes the dropped keys as a header value that cannot break the header", () => {
    expect(droppedTagsHeader([])).toBeUndefined();
    expect(droppedTagsHeader(["a b", "c,d", "é"])).toBe("a?b,c?d,?");
    expect(droppedTagsHeader(Array.from({ length: 40 }, (_, i) => `k${i}`))?.split(",")).toHaveLength(32);
  });
});
