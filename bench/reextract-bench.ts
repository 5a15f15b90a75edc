/**
 * The re-extraction row of `npm run bench` (`--only=reextract`; issue #34): pages a second read from
 * stored pages (`scrapejob extract --run latest`) against fetching the same pages through the emulator
 * at the account's limit (concurrency 10, 100 ms a fetch, as a realistic service answers). Both write a
 * whole run folder (records, CSV, history, report) with the same four fields; only the page source
 * differs. Re-extraction sends nothing, so it should be bound by the parser alone (the page workers).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDemoSite, startEmulator } from "../src/emulator/index.js";
import { extractJobFile, runJobFile } from "../src/library/index.js";

const PAGES = 2_000;
const CONCURRENCY = 10;
const LATENCY_MS = 100;

export interface ReextractBench {
	readonly pages: number;
	readonly fetchPagesPerS: number;
	readonly reextractPagesPerS: number;
	readonly reextractCpuMsPerPage: number;
	readonly fetchRequests: number;
	readonly reextractRequests: number;
}

export async function benchReextract(quick: boolean, log: (line: string) => void): Promise<ReextractBench> {
	const pages = quick ? PAGES / 10 : PAGES;
	const site = await startDemoSite({ pages });
	const emulator = await startEmulator({ scenario: { concurrency: CONCURRENCY, latency_ms: LATENCY_MS } });
	const dir = mkdtempSync(join(tmpdir(), "scrapejob-bench-reextract-"));
	try {
		const targets = Array.from({ length: pages }, (_, index) => `  - ${site.url}/product/${index + 1}`);
		const job = join(dir, "shop.yaml");
		writeFileSync(
			job,
			[
				"name: shop",
				"defaults:",
				"  mode: request",
				"output:",
				"  content: files",
				"extract:",
				"  name: h1",
				"  price: {css: .price, type: number}",
				"  image: {css: img.main, attr: src, type: url}",
				"  description: {meta: description}",
				"targets:",
				...targets,
				"",
			].join("\n"),
		);
		const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
		log(`reextract: fetching ${pages} pages at the account's limit (${CONCURRENCY} in flight, ${LATENCY_MS} ms each)`);
		let started = performance.now();
		const fetched = await runJobFile(job, { env, cwd: dir, out: "out" });
		const fetchMs = performance.now() - started;
		const fetchRequests = emulator.ledger.entries.length;
		log(`reextract: reading the ${fetched.targets.by_status.ok} stored pages again with extract --run latest`);
		started = performance.now();
		const cpuBefore = process.cpuUsage();
		const reextracted = await extractJobFile(job, { run: "latest", env, cwd: dir, out: "out" });
		const cpu = process.cpuUsage(cpuBefore);
		const reextractMs = performance.now() - started;
		return {
			pages: reextracted.targets.by_status.ok,
			fetchPagesPerS: (fetched.targets.by_status.ok * 1000) / fetchMs,
			reextractPagesPerS: (reextracted.targets.by_status.ok * 1000) / reextractMs,
			reextractCpuMsPerPage: (cpu.user + cpu.system) / 1000 / Math.max(1, reextracted.targets.by_status.ok),
			fetchRequests,
			reextractRequests: emulator.ledger.entries.length - fetchRequests,
		};
	} finally {
		await emulator.close();
		await site.close();
		rmSync(dir, { recursive: true, force: true });
	}
}

export function formatReextractRow(row: ReextractBench): string {
	return [
		"| row | pages | fetch at the limit (pages/s) | re-extraction (pages/s) | × | main-thread CPU per re-extracted page | requests sent by re-extraction |",
		"|---|---|---|---|---|---|---|",
		`| reextract | ${row.pages} | ${row.fetchPagesPerS.toFixed(0)} | ${row.reextractPagesPerS.toFixed(0)} | ${(row.reextractPagesPerS / row.fetchPagesPerS).toFixed(1)}× | ${row.reextractCpuMsPerPage.toFixed(2)} ms | ${row.reextractRequests} |`,
	].join("\n");
}
