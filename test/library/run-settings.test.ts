import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveRunSettings } from "../../src/config/index.js";
import { runJobFile } from "../../src/index.js";
import type { LockInfo } from "../../src/run/locks/run-lock.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

describe("resolveRunSettings: the run's settings read from the environment, once, in src/config", () => {
	it("reads the lock's lease and host name, the fleet's lease and a crawl's keys in memory; a value not of its shape is the default", () => {
		expect(
			resolveRunSettings({
				SCRAPEJOB_LOCK_LEASE_MS: "1500",
				SCRAPEJOB_HOSTNAME: "node-a",
				SCRAPEJOB_CRAWL_KEYS_IN_MEMORY: "1000",
			}),
		).toEqual({
			lockLease: { leaseMs: 1500, host: "node-a" },
			fleetLeaseMs: 1500,
			crawlKeysInMemory: 1000,
			otlpMetricsUrl: null,
		});
		// OTLP: the metrics endpoint as given, else the base endpoint's /v1/metrics.
		expect(resolveRunSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }).otlpMetricsUrl).toBe(
			"http://collector:4318/v1/metrics",
		);
		expect(
			resolveRunSettings({
				OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
				OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://metrics:9000/in",
			}).otlpMetricsUrl,
		).toBe("http://metrics:9000/in");
		// A lease under a second (tests use them) is the lock's, not the fleet's: claims need at least 1000 ms.
		expect(resolveRunSettings({ SCRAPEJOB_LOCK_LEASE_MS: "600" })).toMatchObject({
			lockLease: { leaseMs: 600 },
			fleetLeaseMs: undefined,
		});
		for (const bad of ["", "0", "-5", "soon"]) {
			expect(
				resolveRunSettings({
					SCRAPEJOB_LOCK_LEASE_MS: bad,
					SCRAPEJOB_CRAWL_KEYS_IN_MEMORY: bad,
					SCRAPEJOB_HOSTNAME: "",
				}),
			).toEqual({
				lockLease: { leaseMs: undefined, host: undefined },
				fleetLeaseMs: undefined,
				crawlKeysInMemory: undefined,
				otlpMetricsUrl: null,
			});
		}
	});
});

describe("the job lock takes its lease and host name from the caller's environment, not the process's", () => {
	const lockSeen = (dir: string) => JSON.parse(readFileSync(join(dir, "output", "shop", ".lock"), "utf8")) as LockInfo;

	for (const entry of ["library", "cli"] as const) {
		it(`${entry}: SCRAPEJOB_LOCK_LEASE_MS and SCRAPEJOB_HOSTNAME of the given env are in the lock it holds`, async () => {
			const service = await useTestService({}, 30);
			const dir = tempDir();
			const urls = [1, 2, 3].map((id) => `  - ${service.site.url}/product/${id}`);
			const file = writeJob(
				dir,
				"shop",
				["name: shop", "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"),
			);
			const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "4321", SCRAPEJOB_HOSTNAME: `host-of-${entry}` };
			expect(process.env.SCRAPEJOB_LOCK_LEASE_MS).toBeUndefined();
			const seen: LockInfo[] = [];
			if (entry === "library") {
				await runJobFile(file, { env, cwd: dir, onProgress: () => seen.push(lockSeen(dir)) });
			} else {
				// The CLI in this process: its context's env is the one given, the lock is read while it runs.
				const watch = setInterval(() => {
					try {
						seen.push(lockSeen(dir));
					} catch {
						// not taken yet, or released
					}
				}, 1);
				try {
					const result = await runCli(["run", file, "--quiet"], { env, cwd: dir });
					expect(result.code, result.stderr).toBe(0);
				} finally {
					clearInterval(watch);
				}
			}
			expect(seen.length).toBeGreaterThan(0);
			for (const lock of seen) expect(lock).toMatchObject({ lease_ms: 4321, host: `host-of-${entry}` });
		});
	}
});
