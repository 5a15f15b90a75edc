import { describe, expect, it } from "vitest";
import { newRunId } from "../../src/output/index.js";

describe("run ids", () => {
	it("sort by start time within a second too, in the documented form", () => {
		const second = Date.UTC(2026, 10, 26, 3, 18, 54);
		// Random parts drawn many times: the order must not depend on them.
		for (let draw = 0; draw < 200; draw += 1) {
			const early = newRunId(new Date(second + 5));
			const late = newRunId(new Date(second + 900));
			expect(early < late, `${early} before ${late}`).toBe(true);
			expect(early).toMatch(/^20261126T031854Z-[0-9a-f]{6}$/);
		}
		expect(newRunId(new Date(second + 999)) < newRunId(new Date(second + 1000))).toBe(true);
	});
});
