import { afterEach, describe, expect, it } from "vitest";
import { parseDefaults } from "../state/chatSettings";
import { FONT_SIZES, applyFontSize, loadFontSize } from "../theme";

const form = { temperature: "0.6", topP: "0.95", maxTokens: "512", thinking: false, systemPrompt: "Be brief.", backend: "" };

describe("parseDefaults", () => {
  it("keeps the system prompt and checks values with the conversation form's rules", () => {
    expect(parseDefaults(form)).toEqual({ temperature: 0.6, topP: 0.95, maxTokens: 512, thinking: false, systemPrompt: "Be brief.", backend: null });
    expect(parseDefaults({ ...form, backend: "gpu-box" })).toMatchObject({ backend: "gpu-box" });
    expect(parseDefaults({ ...form, topP: "1.5" })).toBe("Top-p must be above 0 and at most 1.");
    expect(parseDefaults({ ...form, maxTokens: "0" })).toBe("Max tokens must be a whole number, 1 or more.");
    expect(parseDefaults({ ...form, temperature: "" })).toMatch(/^Temperature/);
  });
});

describe("text size", () => {
  afterEach(() => applyFontSize(100));
  it("sizes the root font, is kept, and tells the other controls", () => {
    let told = 0;
    window.addEventListener("k3-appearance", () => (told += 1));
    applyFontSize(125);
    expect(document.documentElement.style.fontSize).toBe("125%");
    expect(loadFontSize()).toBe(125);
    applyFontSize(100);
    expect(document.documentElement.style.fontSize).toBe("");
    expect(told).toBe(2);
    expect(FONT_SIZES).toContain(loadFontSize());
  });
});
