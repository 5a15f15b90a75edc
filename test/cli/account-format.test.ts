import { describe, expect, it } from "vitest";
import {
	barColumns,
	closestMatches,
	collectSecrets,
	createStyle,
	drawBar,
	formatMegabytes,
	formatSeconds,
	formatTable,
	maskRecordSecrets,
	renderBarChart,
} from "../../src/cli/format/index.js";
import { editDistance } from "../../src/common/index.js";

const mb = (value: number) => `${value} MB`;

describe("renderBarChart", () => {
	it("scales the largest value to the full bar width and draws the rest in eighths", () => {
		const points = [
			{ label: "a", value: 100 },
			{ label: "b", value: 50 },
			{ label: "c", value: 0 },
			{ label: "d", value: 25 },
			{ label: "e", value: 0.01 },
		];
		// 40 columns: label 1 + " │" 2 + bar + " " 1 + value 7 ("100 MB" is 6, "0.01 MB" is 7), one spare column.
		const lines = renderBarChart(points, { widthColumns: 40, formatValue: mb });
		const width = barColumns(points, { widthColumns: 40, formatValue: mb });
		expect(width).toBe(40 - 1 - 1 - 2 - 1 - 7);
		const bars = lines.map((line) => line.slice(3, 3 + width));
		expect(bars[0]).toBe("█".repeat(width));
		expect(bars[1]).toBe(`${"█".repeat(14)}${" ".repeat(width - 14)}`); // 50% of 28 columns
		expect(bars[2]).toBe(" ".repeat(width));
		expect(bars[3]).toBe(`${"█".repeat(7)}${" ".repeat(width - 7)}`);
		// Above zero is never drawn as nothing.
		expect(bars[4]).toBe(`▏${" ".repeat(width - 1)}`);
		expect(lines.map((line) => line.slice(0, 3))).toEqual(["a │", "b │", "c │", "d │", "e │"]);
		expect(lines[0]?.endsWith(" 100 MB")).toBe(true);
		for (const line of lines) expect([...line].length).toBe(39);
	});

	it("uses partial blocks for fractions of a cell", () => {
		expect(drawBar(0)).toBe("");
		expect(drawBar(3)).toBe("▍");
		expect(drawBar(8)).toBe("█");
		expect(drawBar(12)).toBe("█▌");
		const lines = renderBarChart(
			[
				{ label: "x", value: 16 },
				{ label: "y", value: 1 },
			],
			{ widthColumns: 1 + 2 + 16 + 1 + 5 + 1, formatValue: mb },
		);
		// 16 columns of bar: 1/16 of the maximum is exactly one cell.
		expect(lines[1]).toBe(`y │█${" ".repeat(15)}  1 MB`);
	});

	it("keeps a minimum bar area on very narrow terminals and draws nothing for an all-zero series", () => {
		const lines = renderBarChart(
			[
				{ label: "2026-05-26", value: 0 },
				{ label: "2026-05-27", value: 0 },
			],
			{ widthColumns: 20, formatValue: mb },
		);
		expect(lines).toEqual([`2026-05-26 │${" ".repeat(10)} 0 MB`, `2026-05-27 │${" ".repeat(10)} 0 MB`]);
	});
});

describe("formatTable", () => {
	it("aligns columns, right-aligns numbers and leaves no trailing spaces", () => {
		const lines = formatTable(
			[{ header: "code" }, { header: "MB", align: "right" }, { header: "note" }],
			[
				["rp", "1,024.5", ""],
				["rpc", "3", "core"],
			],
		);
		expect(lines).toEqual(["code       MB  note", "rp    1,024.5", "rpc         3  core"]);
	});

	it("styles only the header, and measures width without escape codes", () => {
		const lines = formatTable([{ header: "a" }, { header: "b" }], [["xx", "y"]], { style: createStyle(true) });
		expect(lines[0]).toBe("\u001b[1ma \u001b[22m  \u001b[1mb\u001b[22m");
		expect(lines[1]).toBe("xx  y");
	});
});

describe("units", () => {
	it("shows GB beside MB once the amount is large", () => {
		expect(formatMegabytes(512.25)).toBe("512.25 MB");
		expect(formatMegabytes(133700.848432)).toBe("133,700.85 MB (133.7 GB)");
		expect(formatMegabytes(0)).toBe("0 MB");
	});

	it("writes seconds in the largest units", () => {
		expect(formatSeconds(60)).toBe("1 min");
		expect(formatSeconds(3690)).toBe("1 h 1 min 30 s");
		expect(formatSeconds(0)).toBe("0 s");
	});
});

describe("maskRecordSecrets", () => {
	it("masks passwords and keys at any depth and leaves the input untouched", () => {
		const record = {
			products: { rp: { username: "user1", password: "abcdefghij" } },
			static_residential: { packages: [{ ips: [{ ipInfo: { ip: "203.0.113.10" }, password: "0123456789" }] }] },
			api_key: "key-1234567890",
			other: null,
		};
		const masked = maskRecordSecrets(record);
		expect(masked).toEqual({
			products: { rp: { username: "user1", password: "ab…ij" } },
			static_residential: { packages: [{ ips: [{ ipInfo: { ip: "203.0.113.10" }, password: "01…89" }] }] },
			api_key: "ke…90",
			other: null,
		});
		expect(record.products.rp.password).toBe("abcdefghij");
		expect(collectSecrets(record).sort()).toEqual(["0123456789", "abcdefghij", "key-1234567890"]);
	});
});

describe("closestMatches", () => {
	it("ranks near misses and partial names first", () => {
		expect(editDistance("kitten", "sitting")).toBe(3);
		const candidates = ["new.york", "newark", "boston", "los.angeles"].map((id) => ({ item: id, keys: [id] }));
		expect(closestMatches("new york", candidates, 2)).toEqual(["new.york", "newark"]);
		expect(closestMatches("BOSTN", candidates, 1)).toEqual(["boston"]);
		expect(closestMatches("angeles", candidates, 1)).toEqual(["los.angeles"]);
	});
});
