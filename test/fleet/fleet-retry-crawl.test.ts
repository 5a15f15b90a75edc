import { mkdirSync, readdirSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectFleetRunDone } from "../helpers/fleet.js";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

const cluster = useCluster();

/**
 * /home → /a, /b; /a → /a1; /b → /b1 and back to /a; /a1 → /a2. While `state.broken`, /b and /a1 answer
 * 404 (failed records), so the pages only they link are not found until a retry.
 */
function flakySite(state: { broken: boolean }) {
	const links: Record<string, string[]> = {
		"/home": ["/a", "/b"],
		"/a": ["/a1"],
		"/b": ["/b1", "/a"],
		"/a1": ["/a2"],
	};
	return (req: IncomingMessage, res: ServerResponse) => {
		const path = req.url ?? "/";
		if (path === "/robots.txt") return void res.writeHead(404).end();
		if (state.broken && (path === "/b" || path === "/a1")) return html(res, "gone", 404);
		html(res, (links[path] ?? []).map((href) => `<a href="${href}">${href}</a>`).join(" "));
	};
}

function jobYaml(seed: string): string {
	return [
		"name: retrycrawl",
		"defaults: {mode: request}",
		"output: {content: none}",
		"crawl: {max_depth: 3}",
		`targets: [${seed}]`,
		"",
	].join("\n");
}

type Placed = { id: string; url: string; depth: number | null; parent: string | null };

/** Each record as path → depth and its parent's path (ids of pages outside `records` resolved by `known`). */
function placesOf(records: readonly Placed[], known: readonly Placed[]) {
	const pathOf = new Map([...known, ...records].map((record) => [record.id, new URL(record.url).pathname]));
	return Object.fromEntries(
		records
			.map((record) => [
				new URL(record.url).pathname,
				{ depth: record.depth, parent: record.parent === null ? null : (pathOf.get(record.parent) ?? "?") },
			])
			.sort(([a], [b]) => String(a).localeCompare(String(b))),
	);
}

function fleetRecords(url: string, runName: string): Promise<Placed[]> {
	return query<Placed>(
		url,
		`SELECT rec.record->>'id' AS id, rec.record->>'url' AS url, (rec.record->>'depth')::int AS depth, rec.record->>'parent' AS parent
		FROM scrapejob.records rec JOIN scrapejob.runs r ON r.id = rec.run_id WHERE r.run_name = '${runName}'`,
	);
}

function requestsOf(site: TargetSite): Record<string, number> {
	const counts: Record<string, number> = {};
	for (const { path } of site.requests) if (path !== "/robots.txt") counts[path] = (counts[path] ?? 0) + 1;
	return counts;
}

describe("run --fleet --retry-failed of a crawl", () => {
	it("a new fleet run of only the pages whose newest fleet record failed, at their recorded depth and parent, their new links followed but none to a page fetched ok: as a local --retry-failed", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const dir = tempDir("scrapejob-fleet-retry-crawl-");
		for (const folder of ["local", "fleet"]) mkdirSync(join(dir, folder));

		// The local crawl and its --retry-failed, on a copy of the site: what the fleet's retry must match.
		const localState = { broken: true };
		const localSite = await startTargetSite(flakySite(localState));
		const localJob = writeJob(join(dir, "local"), "retrycrawl", jobYaml(`${localSite.origin}/home`));
		const out = join(dir, "local-out");
		expect((await runCli(["run", localJob, "--out", out, "--quiet"], { env: service.env })).code).toBe(1);
		localState.broken = false;
		const retried = await runCli(["run", localJob, "--out", out, "--quiet", "--retry-failed"], { env: service.env });
		expect(retried.code, retried.stderr).toBe(0);
		const runs = readdirSync(join(out, "retrycrawl")).filter(isRunFolderName).sort();
		expect(runs).toHaveLength(2);
		const [localFirst, localRetry] = runs.map((run) => readRecords(join(out, "retrycrawl", run)) as Placed[]);
		const expected = placesOf(localRetry!, localFirst!);
		expect(Object.keys(expected)).toEqual(["/a1", "/a2", "/b", "/b1"]);

		const state = { broken: true };
		const site = await startTargetSite(flakySite(state));
		const job = writeJob(join(dir, "fleet"), "retrycrawl", jobYaml(`${site.origin}/home`));
		const workers = (runName: string, extra: string[]) =>
			Array.from({ length: 2 }, () =>
				spawnCli(
					["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", runName, ...extra],
					service.env,
					join(dir, "fleet"),
				),
			);
		const first = await Promise.all(workers("crawl-1", []).map((worker) => worker.done));
		// A worker that wrote a failed record exits 1.
		expect(first.some((outcome) => outcome.code === 1)).toBe(true);
		for (const outcome of first) expect([0, 1], outcome.stderr).toContain(outcome.code);
		state.broken = false;
		for (const outcome of await Promise.all(workers("retry-1", ["--retry-failed"]).map((worker) => worker.done))) {
			expect(outcome.code, outcome.stderr).toBe(0);
			expectFleetRunDone(outcome.stdout);
		}
		const retry = await fleetRecords(url, "retry-1");
		expect(placesOf(retry, await fleetRecords(url, "crawl-1"))).toEqual(expected);
		// The failed pages once more; the pages fetched ok (the seed, and /a that /b links) not again.
		expect(requestsOf(site)).toEqual({ "/home": 1, "/a": 1, "/b": 2, "/a1": 2, "/b1": 1, "/a2": 1 });
	}, 120_000);
});
