// parseCount: what a count field accepts and the words it refuses with.
import { describe, expect, it } from "vitest";
import { parseCount } from "./counts";

describe("parseCount", () => {
  it("reads a whole number within 0..max, and empty as the given default", () => {
    expect(parseCount(" 7 ", 10, 0, "Draft tokens")).toBe(7);
    expect(parseCount("0", 10, 3, "Draft tokens")).toBe(0);
    expect(parseCount("", 10, 3, "Draft tokens")).toBe(3);
    expect(parseCount("10", 10, 0, "Draft tokens")).toBe(10);
  });
  it("refuses fractions, negatives, words and counts past max, naming the field", () => {
    for (const bad of ["1.5", "-1", "many", "11"]) {
      expect(parseCount(bad, 10, 0, "Conversations kept")).toBe("Conversations kept: a whole number from 0 to 10.");
    }
  });
});
