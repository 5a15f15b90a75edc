import { linkSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { openMetricsFile, previousLastSuccess } from "../../src/library/metrics-file.js";
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

it("a fleet worker starts from the job's newest last success and drops the series of the job's workers that ended; a running one stays", async () => {
	const path = join(mkdtempSync(join(tmpdir(), "scrapejob-metrics-")), "scrapejob.prom");
	const written = async (metrics: ReturnType<typeof initialMetrics>) => {
		const file = openMetricsFile({ path, metrics, warn: () => undefined, intervalMs: 60_000 });
		await file.write();
		file.close();
	};
	// Last night's worker, ended after a success; the job's run without a fleet.
	await written(initialMetrics("shop", "", 4, 1_000, "worker-ended"));
	await written(initialMetrics("shop", "", 4, 500));
	// Tonight's worker: a new id, which would start its series at 0 (an alert on its age fires at once).
	const lastSuccess = previousLastSuccess(path, "shop", "");
	expect(lastSuccess).toBe(1_000);
	const tonight = initialMetrics("shop", "", 4, lastSuccess, "worker-new");
	tonight.inflight = 2;
	await written(tonight);
	expect(readFileSync(path, "utf8")).not.toContain('worker="worker-ended"');
	// Another of tonight's workers starts beside it: the busy one's series stays.
	const beside = initialMetrics("shop", "", 4, lastSuccess, "worker-beside");
	beside.inflight = 3;
	await written(beside);
	const text = readFileSync(path, "utf8");
	expect(text).toContain('scrapejob_inflight{job="shop",shard="",worker="worker-new"} 2');
	expect(text).toContain('scrapejob_inflight{job="shop",shard="",worker="worker-beside"} 3');
	expect(text).toContain('scrapejob_run_last_success_timestamp_seconds{job="shop",shard="",worker="worker-new"} 1000');
	expect(text).toContain('scrapejob_run_last_success_timestamp_seconds{job="shop",shard=""} 500');
});
