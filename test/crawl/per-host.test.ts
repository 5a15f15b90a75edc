import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../src/emulator/index.js";
import { type DemoSite, startDemoSite } from "../../src/emulator/index.js";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
let slowSite: DemoSite | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
	await slowSite?.close();
	slowSite = undefined;
});

/** Most realtime fetches the emulator had in progress at once. */
function peakInFlight(entries: readonly LedgerEntry[]): number {
	const events: Array<[number, number]> = [];
	for (const entry of entries) {
		if (entry.endpoint !== "realtime") continue;
		events.push([entry.at, 1], [entry.finishedAt ?? entry.at, -1]);
	}
	// Ends before starts at the same millisecond: touching is not overlapping.
	events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
	let now = 0;
	let peak = 0;
	for (const [, delta] of events) {
		now += delta;
		peak = Math.max(peak, now);
	}
	return peak;
}

function job(site: string, perHost: string[]): string {
	const targets = Array.from({ length: 16 }, (_, index) => `  - ${site}/product/${index + 1}`);
	return [
		"name: polite",
		"concurrency: 8",
		"defaults: {mode: request}",
		"output: {content: none}",
		...perHost,
		"targets:",
		...targets,
		"",
	].join("\n");
}

describe("per_host_concurrency", () => {
	it("keeps at most N fetches in flight per host, under the account's concurrency", async () => {
		service = await startTestService({ concurrency: 8 }, 40);
		const dir = tempDir();
		const path = writeJob(dir, "polite", job(service.site.url, ["per_host_concurrency: 2"]));
		const result = await runCli(["run", path, "--out", join(dir, "out"), "--quiet"], { env: service.env });
		expect(result.code).toBe(0);
		expect(peakInFlight(service.emulator.ledger.entries)).toBe(2);
	});

	it("without it, the same job uses the account's concurrency on one host (the limit above is what held it)", async () => {
		service = await startTestService({ concurrency: 8 }, 40);
		const dir = tempDir();
		const path = writeJob(dir, "polite", job(service.site.url, []));
		await runCli(["run", path, "--out", join(dir, "out"), "--quiet"], { env: service.env });
		expect(peakInFlight(service.emulator.ledger.entries)).toBeGreaterThan(2);
	});

	it("a busy host's pages wait outside the queue: another host's pages run meanwhile", async () => {
		service = await startTestService({ concurrency: 4 });
		slowSite = await startDemoSite({ latencyMs: 300 });
		const slow = Array.from({ length: 4 }, (_, index) => `  - ${slowSite!.url}/product/${index + 1}`);
		const fast = Array.from({ length: 8 }, (_, index) => `  - ${service!.site.url}/product/${index + 1}`);
		const yaml = [
			"name: hosts",
			"defaults: {mode: request}",
			"output: {content: none}",
			"per_host_concurrency: 1",
			"targets:",
			...slow,
			...fast,
			"",
		].join("\n");
		const dir = tempDir();
		const out = join(dir, "out");
		const result = await runCli(["run", writeJob(dir, "hosts", yaml), "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(0);
		const runs = readdirSync(join(out, "hosts")).filter(isRunFolderName);
		const records = readRecords(join(out, "hosts", runs[0]!));
		const times = (origin: string, key: "started_at" | "finished_at") =>
			records.filter((record) => record.url.startsWith(origin)).map((record) => Date.parse(record[key]));
		// The fast host's pages start while the slow host's first page is still on its way, and all are done
		// before its last one starts. Waiting inside queue slots, the slow host's parked pages would hold
		// every slot until its first page came back.
		expect(Math.min(...times(service.site.url, "started_at"))).toBeLessThan(
			Math.min(...times(slowSite.url, "finished_at")),
		);
		expect(Math.max(...times(service.site.url, "finished_at"))).toBeLessThan(
			Math.max(...times(slowSite.url, "started_at")),
		);
		expect(peakInFlight(service.emulator.ledger.entries)).toBeLessThanOrEqual(2);
	});
});
