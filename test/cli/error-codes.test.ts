import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BROWSER_FAILURE_KINDS } from "../../src/browser/session-errors.js";
import { exitCodeForError } from "../../src/cli/error-exit.js";
import { EXIT } from "../../src/cli/exit-codes.js";
import { ERROR_CODES, ScrapejobError } from "../../src/common/index.js";

function sourceText(dir: string): string {
	return readdirSync(dir, { withFileTypes: true, recursive: true })
		.filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
		.map((entry) => readFileSync(join(entry.parentPath, entry.name), "utf8"))
		.join("\n");
}

describe("error codes are one closed union", () => {
	const src = sourceText("src");

	it("every listed code is thrown somewhere (no code, and no exit mapping, waits for an error nothing throws)", () => {
		const browserCodes = new Set(BROWSER_FAILURE_KINDS.map((kind) => `SCRAPEJOB_BROWSER_${kind.toUpperCase()}`));
		for (const code of ERROR_CODES) {
			if (browserCodes.has(code)) continue;
			expect(src, code).toMatch(new RegExp(`super\\(\\s*"${code}"`));
		}
		expect([...browserCodes].every((code) => (ERROR_CODES as readonly string[]).includes(code))).toBe(true);
	});

	it("each code maps to its documented exit code", () => {
		const exitOf = (code: (typeof ERROR_CODES)[number]) => exitCodeForError(new ScrapejobError(code, "x"));
		expect(exitOf("SCRAPEJOB_USAGE")).toBe(EXIT.invalidInput);
		expect(exitOf("SCRAPEJOB_JOB_INVALID")).toBe(EXIT.invalidInput);
		expect(exitOf("SCRAPEJOB_LOCK_HELD")).toBe(EXIT.lockHeld);
		expect(exitOf("SCRAPEJOB_OUTPUT")).toBe(EXIT.outputFailed);
		expect(exitOf("SCRAPEJOB_ABORTED")).toBe(EXIT.interrupted);
		expect(exitOf("SCRAPEJOB_NO_ACCESS")).toBe(EXIT.authOrCredits);
		expect(exitOf("SCRAPEJOB_NETWORK")).toBe(EXIT.authOrCredits);
		expect(exitOf("SCRAPEJOB_BODY_TOO_LARGE")).toBe(EXIT.someTargetsFailed);
		expect(exitOf("SCRAPEJOB_FLEET_SCHEMA")).toBe(EXIT.invalidInput);
		expect(exitOf("SCRAPEJOB_FLEET_DATABASE")).toBe(EXIT.authOrCredits);
	});
});
