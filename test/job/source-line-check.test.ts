import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSourceRows } from "../../src/job/sources.js";
import { checkTargetUrl } from "../../src/job/url-check.js";
import { tempDir } from "../helpers/job-files.js";

/**
 * A text source's lines of printable ASCII take a shorter path than the rest (no whitespace, NUL or
 * U+FFFD can be in them). Whatever the path, a line's verdict is `checkTargetUrl`'s, at its first column.
 */
describe("text source lines of printable ASCII", () => {
	const printable = [
		"https://example.com/p/1",
		"http://127.0.0.1:8080/page/7?q=1&r=%20#top",
		"HTTPS://EXAMPLE.COM/UPPER",
		"example.com/no-scheme",
		"ftp://example.com/file",
		"http//example.com/missing-colon",
		"https://",
		"https:///path-only",
		"http://[::1]:80/ipv6",
		"http://exa_mple.com/underscore",
		"host:8080/path",
		'https://example.com/a"quote',
		"mailto:someone@example.com",
		"https://user:pass@example.com/",
		"http://999.999.999.999/",
		"~",
	];

	it("each gets the verdict checkTargetUrl gives it, with its hint, at column 1", async () => {
		const path = join(tempDir(), "urls.txt");
		writeFileSync(path, `${printable.join("\n")}\n`);
		const origin = { file: "job.yaml", line: 1, col: 1 };
		const rows = [];
		for await (const batch of readSourceRows({ kind: "text", path, displayPath: "urls.txt", options: {}, origin }))
			rows.push(...batch);
		expect(rows).toHaveLength(printable.length);
		rows.forEach((row, index) => {
			const line = printable[index]!;
			const problem = checkTargetUrl(line);
			if (problem === undefined) expect(row).toEqual({ kind: "row", url: line, line: index + 1, col: 1 });
			else expect(row).toEqual({ kind: "bad", line: index + 1, col: 1, message: problem });
		});
		// The set holds both kinds, so both branches were compared.
		expect(rows.filter((row) => row.kind === "bad").length).toBeGreaterThan(3);
		expect(rows.filter((row) => row.kind === "row").length).toBeGreaterThan(3);
	});

	it("a comment, a line with a trailing CR, and lines with whitespace still take the general path", async () => {
		const path = join(tempDir(), "urls.txt");
		writeFileSync(
			path,
			"#https://example.com/commented\nhttps://example.com/crlf\r\n  https://example.com/indented\nhttps://example.com/a b\n",
		);
		const origin = { file: "job.yaml", line: 1, col: 1 };
		const rows = [];
		for await (const batch of readSourceRows({ kind: "text", path, displayPath: "urls.txt", options: {}, origin }))
			rows.push(...batch);
		expect(rows).toEqual([
			{ kind: "row", url: "https://example.com/crlf", line: 2, col: 1 },
			{ kind: "row", url: "https://example.com/indented", line: 3, col: 3 },
			{ kind: "bad", line: 4, col: 1, message: checkTargetUrl("https://example.com/a b") },
		]);
	});
});
