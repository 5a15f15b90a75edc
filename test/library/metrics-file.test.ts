import { linkSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { openMetricsFile } from "../../src/library/metrics-file.js";
import { initialMetrics } from "../../src/library/run-metrics.js";

it("replaces the metrics file by rename, never writes it in place: a hard link keeps the old figures", async () => {
	const path = join(mkdtempSync(join(tmpdir(), "scrapejob-metrics-")), "scrapejob.prom");
	const metrics = initialMetrics("shop", "", 4, 0);
	const warnings: string[] = [];
	const file = openMetricsFile({ path, metrics, warn: (message) => warnings.push(message), intervalMs: 60_000 });
	try {
		await file.write();
		const before = readFileSync(path, "utf8");
		const link = `${path}.link`;
		linkSync(path, link);
		metrics.creditsUsed = 123;
		await file.write();
		// The collector reads whole files: what it opened before the write is the file it was.
		expect(readFileSync(link, "utf8")).toBe(before);
		expect(readFileSync(path, "utf8")).not.toBe(before);
		expect(readFileSync(path, "utf8")).toMatch(/ 123$/m);
		expect(warnings).toEqual([]);
	} finally {
		file.close();
	}
});
