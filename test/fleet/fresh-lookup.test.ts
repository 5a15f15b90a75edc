import { describe, expect, it } from "vitest";
import {
	claimTargets,
	completeTarget,
	type FleetTargetInput,
	finishFleetRun,
	openFleetRun,
} from "../../src/fleet/index.js";
import { freshCandidates } from "../../src/run/fleet/fleet-feed.js";
import { pagesRoom } from "../../src/run/fleet/fleet-frontier.js";
import { runWithWorkers, streamOf } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();
// Keyed by their URL, as a crawl's pages are.
const page = (name: string): FleetTargetInput => ({ url: `https://site.test/${name}` });

describe("freshness lookups in a fleet crawl", () => {
	it("a page is looked up in the job's fleet records once: found stale as it entered the frontier, its claim does not ask again", async () => {
		// The first run: /kept fetched ok with its links kept, /failed fetched and failed.
		const { workers, runId } = await runWithWorkers(await cluster(), [page("kept"), page("failed")], 1);
		const { fleet, worker } = workers[0]!;
		for (const lease of await claimTargets(fleet, worker, 2, 60_000)) {
			const ok = lease.url.endsWith("/kept");
			const kept = { links: ok ? ["https://site.test/new"] : null, landing: null };
			expect(await completeTarget(fleet, lease, { status: ok ? "ok" : "failed" }, 1, kept)).toBe(true);
		}
		expect(await finishFleetRun(fleet, runId)).toBe(true);

		// The next run, with freshness: each page asked about as it is loaded.
		const seeds = [page("kept"), page("failed"), page("new")];
		const room = pagesRoom(10, "job", { freshnessMs: 3_600_000, maxDepth: 2 });
		const opened = await openFleetRun(fleet, {
			jobName: "job",
			runName: "next",
			concurrencyLimit: 10,
			source: () => ({ room, [Symbol.asyncIterator]: () => streamOf(seeds)[Symbol.asyncIterator]() }),
		});
		if (opened.outcome !== "opened") throw new Error(`the next run is ${opened.outcome}`);
		const claimed = await claimTargets(fleet, opened.worker, 3, 60_000);
		const found = Object.fromEntries(claimed.map((lease) => [new URL(lease.url).pathname, lease.freshFound]));
		expect(found).toEqual({ "/kept": true, "/failed": false, "/new": false });
		// Only the fresh one is asked about again, for the links it kept; the stale ones are fetched.
		expect(freshCandidates(claimed)).toEqual(
			claimed.filter((lease) => lease.url.endsWith("/kept")).map((l) => l.targetId),
		);
		// Fresh with its links kept, it took no room from the pages that will be fetched.
		const [row] = await fleet.query<{ pages: number }>("SELECT pages::int AS pages FROM runs WHERE id = $1", [
			opened.run.id,
		]);
		expect(row).toEqual({ pages: 2 });
	}, 30_000);
});
