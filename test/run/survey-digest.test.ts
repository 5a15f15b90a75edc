import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadJob } from "../../src/job/index.js";
import { surveyTargets } from "../../src/run/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";

describe("the survey's digest of the targets", () => {
	it("is SHA-256 of the job's fingerprint and each source's path and bytes, read past one buffer; a byte changed changes it", async () => {
		const dir = tempDir();
		// ~3.4 MB: more than three reads of the hashing buffer, the last one short.
		const lines = Array.from({ length: 100_000 }, (_, index) => `https://example.com/catalogue/item/${index + 1}`);
		const source = join(dir, "urls.txt");
		writeFileSync(source, `${lines.join("\n")}\n`);
		const path = writeJob(dir, "digest", "name: digest\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
		const { job, counts } = await loadJob(path, { env: {}, cwd: dir });
		const survey = await surveyTargets(job, counts);
		// What --resume compares with the digest a run folder was made with (older versions included).
		const expected = createHash("sha256")
			.update(job.fingerprint)
			.update(`\n${source}\n`)
			.update(`${lines.join("\n")}\n`)
			.digest("hex");
		expect(survey.digest).toBe(expected);
		expect(survey.total).toBe(100_000);

		lines[77_777] = "https://example.com/catalogue/item/77777x";
		writeFileSync(source, `${lines.join("\n")}\n`);
		expect((await surveyTargets(job, counts)).digest).not.toBe(expected);
	});
});
