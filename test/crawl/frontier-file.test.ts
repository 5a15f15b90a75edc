import { appendFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { type FrontierEntry, openFrontierFile } from "../../src/crawl/frontier-file.js";
import { tempDir } from "../helpers/job-files.js";

/**
 * The crawl reads the frontier a depth at a time over byte ranges (crawler.ts): each call returns one
 * chunk's worth (256 KiB) of whole lines and where the next starts, so a million-link frontier is
 * never held in memory. Every entry of the depth comes back once, in order, whatever the range's size.
 */
it("reads a depth's entries over a byte range a chunk at a time: each once, in order, a long line whole", () => {
	const path = join(tempDir(), "frontier.jsonl");
	const frontier = openFrontierFile(path);
	const written: FrontierEntry[] = [];
	// ~700 KiB of entries over three depths, and one line longer than a chunk.
	for (let index = 0; index < 6000; index += 1) {
		const entry: FrontierEntry = {
			u: `https://shop.test/p/${index}?${"q".repeat(index === 3000 ? 300_000 : 100)}`,
			d: index % 3,
			p: index === 0 ? null : `page-${index - 1}`,
			k: "seed",
		};
		written.push(entry);
		frontier.append([entry]);
	}
	const start = 0;
	const end = frontier.size;
	// Appends past the range (the crawl goes on) are not read in it.
	frontier.append([{ u: "https://shop.test/later", d: 1, p: null, k: "seed" }]);
	for (const depth of [0, 1, 2]) {
		const read: FrontierEntry[] = [];
		let calls = 0;
		for (let from = start; from < end; calls += 1) {
			const { entries, next } = frontier.readDepth(from, end, depth);
			expect(next).toBeGreaterThan(from);
			read.push(...entries);
			from = next;
		}
		expect(calls).toBeGreaterThan(2);
		expect(read).toEqual(written.filter((entry) => entry.d === depth));
	}
	// A line that is not an entry is passed over, not trusted.
	const before = statSync(path).size;
	appendFileSync(
		path,
		'{"u":"https://shop.test/x","d":1,"p":null}\nnot json\n{"u":"https://shop.test/y","d":1,"p":null,"k":"seed"}\n',
	);
	const tail = frontier.readDepth(before, statSync(path).size, 1).entries;
	expect(tail.map((entry) => entry.u)).toEqual(["https://shop.test/y"]);
	frontier.close();
});
