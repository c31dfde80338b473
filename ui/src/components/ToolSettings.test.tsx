// Settings › Tools' form: what it sends for a program and for an address, and the problems it names.
import { describe, expect, it } from "vitest";
import { parseToolForm } from "../state/tools";

const base = { id: "", name: " Files ", kind: "stdio" as const, command: " npx ", args: "-y\n\n pkg \n/home/me", env: "PATH=/usr/bin\nTOKEN=a=b", url: "", key: "", enabled: true, timeout: "30" };

describe("parseToolForm", () => {
  it("sends a program with its arguments and only the environment listed", () => {
    expect(parseToolForm(base)).toEqual({
      id: "", name: "Files", enabled: true, timeoutSeconds: 30, key: null, clearKey: false,
      transport: {
        kind: "stdio", command: "npx", args: ["-y", "pkg", "/home/me"], workingDir: null,
        env: [{ name: "PATH", value: "/usr/bin" }, { name: "TOKEN", value: "a=b" }],
      },
    });
  });

  it("sends an address with its key", () => {
    const parsed = parseToolForm({ ...base, kind: "http", url: " http://127.0.0.1:3001/mcp ", key: " k " });
    expect(parsed).toMatchObject({ transport: { kind: "http", url: "http://127.0.0.1:3001/mcp" }, key: "k" });
  });

  it("names the first problem", () => {
    expect(parseToolForm({ ...base, name: " " })).toBe("Give the server a name.");
    expect(parseToolForm({ ...base, command: "" })).toContain("program");
    expect(parseToolForm({ ...base, env: "PATH" })).toBe("“PATH” is not NAME=value.");
    expect(parseToolForm({ ...base, timeout: "0" })).toContain("1 to 3600");
    expect(parseToolForm({ ...base, kind: "http", url: "ftp://x" })).toContain("http://");
  });
});
