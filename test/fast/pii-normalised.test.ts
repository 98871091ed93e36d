import { describe, expect, it } from "vitest";
import { detectionText } from "../../src/compliance/detection-text.js";
import { detectPii } from "../../src/compliance/pii-detectors.js";
import { createPiiVault, createRestorer } from "../../src/compliance/pii-vault.js";

/**
 * Issue #43 item 9: personal data written in forms the ASCII detectors do
 * not read (full-width and other scripts' digits, full-width `＠`,
 * invisible characters inside the value) is found on a normalised copy,
 * and the span found is the caller's own text, which a placeholder
 * replaces and restoring puts back unchanged.
 */
const found = (text: string) => detectPii(text).map((s) => [s.kind, text.slice(s.start, s.end)]);

describe("detection reads normalised text and answers in the caller's", () => {
  const cases: ReadonlyArray<readonly [string, string, string]> = [
    ["full-width digits", "SSN １２３-４５-６７８９ on file", "１２３-４５-６７８９"],
    ["Arabic-Indic digits", "الرقم ١٢٣-٤٥-٦٧٨٩ هنا", "١٢٣-٤٥-٦٧٨٩"],
    ["Extended Arabic-Indic digits", "شماره ۱۲۳-۴۵-۶۷۸۹", "۱۲۳-۴۵-۶۷۸۹"],
    ["Devanagari digits", "नंबर १२३-४५-६७८९ है", "१२३-४५-६७८९"],
    ["mathematical digits", "id 𝟏𝟐𝟑-𝟒𝟓-𝟔𝟕𝟖𝟗 ok", "𝟏𝟐𝟑-𝟒𝟓-𝟔𝟕𝟖𝟗"],
    ["a non-ASCII dash", "SSN 123‐45‐6789", "123‐45‐6789"],
  ];
  for (const [name, text, value] of cases) {
    it(`a US SSN in ${name}`, () => {
      expect(found(text)).toEqual([["us_ssn", value]]);
    });
  }

  it("an email with a full-width @ and full-width letters", () => {
    expect(found("write to ａｌｉｃｅ＠example．com today")).toEqual([["email", "ａｌｉｃｅ＠example．com"]]);
  });

  it("an email and a card with invisible characters inside, the invisible ones kept in the span, none before or after", () => {
    const text = "mail \u200bali\u200bce@exam\u200dple.com\u2060 or pay 4111\u200b1111\u00ad1111\ufeff1111 now";
    expect(found(text)).toEqual([
      ["email", "ali\u200bce@exam\u200dple.com"],
      ["card", "4111\u200b1111\u00ad1111\ufeff1111"],
    ]);
  });

  it("a full-width phone number and a Chinese ID among Chinese text", () => {
    expect(found("请拨打１３８００１３８０００，身份证５１０１０７１９６２０９０８８９８８。")).toEqual([
      ["phone", "１３８００１３８０００"],
      ["cn_id", "５１０１０７１９６２０９０８８９８８"],
    ]);
  });

  it("the placeholder replaces the caller's text, and restoring gives it back exactly", () => {
    const vault = createPiiVault();
    const text = "SSN １２３-４５-６７８９, mail bob＠example.com";
    const redacted = vault.redact(text);
    expect(redacted).toBe("SSN <US_SSN_1>, mail <EMAIL_1>");
    const restorer = createRestorer(vault);
    expect(restorer.push(redacted) + restorer.flush()).toBe(text);
  });

  it("text with nothing to map is read as it is, ASCII or not, and costs no copy", () => {
    for (const text of ["plain ascii 123-45-6789", "你好，世界。これはテストです。", "emoji 😀👍🏽 and é"]) expect(detectionText(text).text).toBe(text);
  });

  it("is linear: a long run of characters to map is read in one pass", () => {
    const text = "１".repeat(200_000) + "\u200b".repeat(200_000) + "ａ".repeat(200_000);
    const read = detectionText(text);
    expect(read.text).toBe("1".repeat(200_000) + "a".repeat(200_000));
    expect(read.original(199_999, 200_001)).toEqual({ start: 199_999, end: 400_001 });
  });
});
