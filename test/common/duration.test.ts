import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration } from "../../src/common/index.js";

describe("durations", () => {
	it("reads every documented unit", () => {
		expect(parseDuration("500ms")).toBe(500);
		expect(parseDuration("3s")).toBe(3000);
		expect(parseDuration("10m")).toBe(600_000);
		expect(parseDuration("24h")).toBe(86_400_000);
		expect(parseDuration("7d")).toBe(604_800_000);
		expect(parseDuration("1.5h")).toBe(5_400_000);
		expect(parseDuration("0")).toBe(0);
		expect(parseDuration(0)).toBe(0);
	});

	it("refuses what is not a duration", () => {
		for (const bad of ["", "10", "10 minutes", "-5s", "5x", "s", "1e3s", 10, `${"9".repeat(400)}d`]) {
			expect(parseDuration(bad as string), String(bad)).toBeNull();
		}
	});

	it("formats for people", () => {
		expect(formatDuration(250)).toBe("250ms");
		expect(formatDuration(90_000)).toBe("1m 30s");
		expect(formatDuration(86_400_000 + 3_600_000)).toBe("1d 1h");
		expect(formatDuration(0)).toBe("0ms");
	});
});
