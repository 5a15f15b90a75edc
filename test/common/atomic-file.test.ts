import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAtomicTemporaryName, openAtomicFile, writeFileAtomic } from "../../src/common/index.js";

const folder = () => mkdtempSync(join(tmpdir(), "atomic-"));

describe("writeFileAtomic", () => {
	it("replaces the file by a rename: a hard link to the old file keeps the old content", () => {
		const dir = folder();
		const path = join(dir, "summary.json");
		writeFileAtomic(path, "old\n");
		linkSync(path, join(dir, "link"));
		writeFileAtomic(path, "new\n", { fsync: true });
		expect(readFileSync(path, "utf8")).toBe("new\n");
		// Written in place, the link would read the new content too.
		expect(readFileSync(join(dir, "link"), "utf8")).toBe("old\n");
		expect(readdirSync(dir).sort()).toEqual(["link", "summary.json"]);
	});

	it("writes bytes as given, and a large body whole", () => {
		const dir = folder();
		const body = Buffer.alloc(3 * 1024 * 1024, 7);
		writeFileAtomic(join(dir, "page.bin"), body);
		expect(readFileSync(join(dir, "page.bin")).equals(body)).toBe(true);
	});

	it("replaces a symbolic link with a file, never writing through it", () => {
		const dir = folder();
		writeFileSync(join(dir, "elsewhere"), "keep");
		symlinkSync(join(dir, "elsewhere"), join(dir, "run.json"));
		writeFileAtomic(join(dir, "run.json"), "{}\n");
		expect(readFileSync(join(dir, "elsewhere"), "utf8")).toBe("keep");
		expect(readFileSync(join(dir, "run.json"), "utf8")).toBe("{}\n");
	});

	it("throws the file system's error and leaves no temporary file when the rename fails", () => {
		const dir = folder();
		// A non-empty folder where the file should be: the rename fails after the temp file was written.
		mkdirSync(join(dir, "report.html"));
		writeFileSync(join(dir, "report.html", "inside"), "x");
		expect(() => writeFileAtomic(join(dir, "report.html"), "<html>")).toThrow(
			expect.objectContaining({ code: expect.stringMatching(/EISDIR|ENOTEMPTY|EEXIST/) }),
		);
		expect(readdirSync(dir)).toEqual(["report.html"]);
	});

	it("throws when the folder is a file (ENOTDIR), creating nothing", () => {
		const dir = folder();
		writeFileSync(join(dir, "pages"), "a file");
		expect(() => writeFileAtomic(join(dir, "pages", "a.html"), "x")).toThrow(
			expect.objectContaining({ code: "ENOTDIR" }),
		);
		expect(readdirSync(dir)).toEqual(["pages"]);
	});

	it("names every temporary file one way, unique per write", () => {
		const dir = folder();
		const a = openAtomicFile(join(dir, "state.json"));
		const b = openAtomicFile(join(dir, "state.json"));
		expect(a.path).not.toBe(b.path);
		for (const file of [a, b]) expect(isAtomicTemporaryName(file.path.slice(dir.length + 1))).toBe(true);
		a.discard();
		b.discard();
		expect(readdirSync(dir)).toEqual([]);
		expect(isAtomicTemporaryName("state.json")).toBe(false);
		expect(isAtomicTemporaryName(".tmp-4242-0")).toBe(false);
	});
});
