import { writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_JOB_FILE_BYTES, readAtMost, readJobText } from "../../src/job/parse-yaml.js";
import { tempDir } from "../helpers/job-files.js";

describe("reading a job file", () => {
	it("takes memory for the file's size, not for the 10 MiB limit", async () => {
		const path = join(tempDir(), "job.yaml");
		writeFileSync(path, "name: small\nsources:\n  - urls: [https://example.com/]\n");
		const before = process.memoryUsage().arrayBuffers;
		const read = await readJobText(path);
		// No collection in between: a buffer of the whole limit would still be counted here.
		const grown = process.memoryUsage().arrayBuffers - before;
		expect(read.ok).toBe(true);
		expect(grown).toBeLessThan(MAX_JOB_FILE_BYTES / 4);
	});

	it("reads past the size it was told when the file grew since, up to the limit", async () => {
		const path = join(tempDir(), "grown.yaml");
		const text = "x".repeat(100);
		writeFileSync(path, text);
		const handle = await open(path, "r");
		try {
			expect((await readAtMost(handle, 1000, 10)).toString()).toBe(text);
			expect((await readAtMost(handle, 50, 10)).toString()).toBe(text.slice(0, 50));
			expect((await readAtMost(handle, 1000, 100)).toString()).toBe(text);
		} finally {
			await handle.close();
		}
	});
});
