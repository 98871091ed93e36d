import { describe, expect, it } from "vitest";
import { allocationTags, checkTagValues, droppedTagsHeader, MAX_TAG_VALUE_CHARS, parseTagsHeader } from "../../src/tenancy/tags.js";

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

  it("refuses a value holding a control character or an unpaired surrogate, or longer than the bound, never echoing it", () => {
    for (const bad of ["project=%00", "project=a%0Ab", "project=%0D", "project=%C2%85", "project=%7F", `project=${"v".repeat(MAX_TAG_VALUE_CHARS + 1)}`]) {
      let refused: unknown;
      try {
        parseTagsHeader(bad);
      } catch (error) {
        refused = error;
      }
      expect(refused, bad).toMatchObject({ code: "invalid_request", field: "sluice-tags", message: expect.stringMatching(/tag "project" (holds a control character|is longer than 256)/) });
      expect((refused as Error).message).not.toContain("vvvv");
    }
    expect(parseTagsHeader(`project=${"v".repeat(MAX_TAG_VALUE_CHARS)},env=caf%C3%A9%20%F0%9F%98%80`)).toEqual({ project: "v".repeat(MAX_TAG_VALUE_CHARS), env: "café 😀" });
  });
});

describe("allocation tags", () => {
  const allowed = new Set(["project", "env"]);

  it("keeps only allowed keys, the header over the body, and names every other tag", () => {
    const result = allocationTags({ project: "body", team: "x" }, { project: "header", debug: "1" }, allowed);
    expect(result.tags).toEqual({ project: "header" });
    expect(result.dropped).toEqual(["team", "debug"]);
  });

  it("keeps a kept tag's value whole, for the pipeline to refuse past the bound, never to cut", () => {
    const result = allocationTags({ env: "v".repeat(MAX_TAG_VALUE_CHARS + 1), project: "v".repeat(MAX_TAG_VALUE_CHARS) }, {}, allowed);
    expect(Object.keys(result.tags)).toEqual(["env", "project"]);
    expect(() => checkTagValues({ project: "v".repeat(MAX_TAG_VALUE_CHARS) })).not.toThrow();
    expect(() => checkTagValues(result.tags)).toThrow(expect.objectContaining({ code: "invalid_request", message: expect.stringContaining('tag "env" is longer than 256') }));
  });

  it("writes the dropped keys as a header value that cannot break the header", () => {
    expect(droppedTagsHeader([])).toBeUndefined();
    expect(droppedTagsHeader(["a b", "c,d", "é"])).toBe("a?b,c?d,?");
    expect(droppedTagsHeader(Array.from({ length: 40 }, (_, i) => `k${i}`))?.split(",")).toHaveLength(32);
  });
});
