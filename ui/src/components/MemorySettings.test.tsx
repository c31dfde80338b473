import { describe, expect, it } from "vitest";
import { parseSize } from "./MemorySettings";

describe("parseSize", () => {
  it("reads decimal units as the engine prints them, GB when none is given", () => {
    expect(parseSize("3 GB")).toBe(3e9);
    expect(parseSize("300kb")).toBe(3e5);
    expect(parseSize(" 2.5 ")).toBe(2.5e9);
    expect(parseSize("1.5 TB")).toBe(1.5e12);
    expect(parseSize("12 B")).toBe(12);
  });

  it("refuses what is not a positive size", () => {
    for (const bad of ["", "GB", "-3 GB", "0", "3 GiB", "3e9", "1,5 GB"]) expect(parseSize(bad), bad).toBeNull();
  });
});
