import { describe, expect, it } from "vitest";
import { isoTime, parseIsoTime } from "../../src/common/index.js";

describe("isoTime writes what toISOString writes", () => {
	it("for times in order, in the same second and across seconds, and back in time", () => {
		const start = Date.parse("2026-11-24T20:35:12.000Z");
		const times = [start, start + 1, start + 9, start + 10, start + 99, start + 100, start + 999, start + 1000];
		times.push(start + 86_400_000 - 1, start - 1, start, start - 86_400_000 * 400);
		for (const ms of times) expect(isoTime(ms), String(ms)).toBe(new Date(ms).toISOString());
	});

	it("for 50,000 random times, fractional milliseconds, years before 1970 and after 9999", () => {
		let seed = 7;
		const random = () => {
			seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
			return seed / 2 ** 31;
		};
		const edges = [
			0, -1, -999.5, 0.999, 253_402_300_799_999, 253_402_300_800_000, -62_198_755_200_001, 8.64e15, -8.64e15,
		];
		for (const ms of edges) expect(isoTime(ms), String(ms)).toBe(new Date(ms).toISOString());
		let ms = Date.parse("2026-01-01T00:00:00Z");
		for (let i = 0; i < 50_000; i++) {
			// Mostly a few ms on, sometimes a jump either way (a resumed run, a clock step).
			ms += i % 97 === 0 ? (random() - 0.5) * 1e12 : random() * 40;
			expect(isoTime(ms)).toBe(new Date(ms).toISOString());
		}
	});

	it("throws for what is not a time, as toISOString does", () => {
		expect(() => isoTime(Number.NaN)).toThrow(RangeError);
		expect(() => isoTime(8.64e15 + 1000)).toThrow(RangeError);
		expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
		expect(() => isoTime(-8.64e15 - 1)).toThrow(RangeError);
	});
});

describe("parseIsoTime reads what Date.parse reads", () => {
	it("for what isoTime wrote, in the same second and across seconds, before 1970 and after 9999", () => {
		let seed = 11;
		const random = () => {
			seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
			return seed / 2 ** 31;
		};
		const edges = [0, -1, -999, 253_402_300_799_999, 253_402_300_800_000, -62_198_755_200_001, 8.64e15, -8.64e15];
		let ms = Date.parse("2026-01-01T00:00:00Z");
		const times = [...edges];
		for (let i = 0; i < 50_000; i++) {
			ms += i % 97 === 0 ? Math.round((random() - 0.5) * 1e12) : Math.round(random() * 40);
			times.push(ms);
		}
		for (const time of times) {
			const text = isoTime(time);
			expect(parseIsoTime(text), text).toBe(Date.parse(text));
		}
	});

	it("for any other text, the cached second's lookalikes included", () => {
		const text = isoTime(Date.parse("2026-11-24T20:35:12.345Z"));
		const prefix = text.slice(0, -4);
		const others = [
			`${prefix}999Z`,
			`${prefix}000Z`,
			`${prefix}12aZ`,
			`${prefix}1234Z`,
			`${prefix}12Z`,
			`${prefix}123z`,
			`${prefix}123+01:00`,
			`${prefix}-12Z`,
			"2026-11-24T20:35:13.345Z",
			"2026-11-24",
			"not a time",
			"",
		];
		for (const other of others) expect(parseIsoTime(other), other).toBe(Date.parse(other));
	});
});
