/**
 * `npm run bench:frontier [-- --frontier=N --pages=K]`: what a crawl page's links cost to add to a fleet
 * frontier already holding N pages under `max_pages` (the room check and the insert, in the transaction
 * that holds the run's frontier lock: every worker's pages wait on it in turn). A throwaway PostgreSQL on
 * this machine; the run's N pages are loaded as a run's seeds are, then one leased page adds 10 new links
 * K times through the fleet worker's own code. Prints the time a page (median, 10th–90th percentile).
 */
import { performance } from "node:perf_hooks";
import pino from "pino";
import { claimTargets, connectFleet, type FleetTargetInput, openFleetRun } from "../src/fleet/index.js";
import type { FleetCrawl } from "../src/run/fleet/fleet-crawl.js";
import { FleetFrontier } from "../src/run/fleet/fleet-frontier.js";
import { startCluster } from "../test/helpers/postgres-cluster.js";

const argument = (name: string, fallback: number) => {
	const given = process.argv.find((arg) => arg.startsWith(`--${name}=`));
	const value = given ? Number(given.slice(name.length + 3)) : fallback;
	if (!Number.isInteger(value) || value < 1) {
		process.stderr.write(`bench:frontier: --${name} must be a whole number of at least 1 (got ${given})\n`);
		process.exit(2);
	}
	return value;
};
const FRONTIER = argument("frontier", 200_000);
const PAGES = argument("pages", 300);
const LINKS = 10;

const cluster = await startCluster();
try {
	const fleet = await connectFleet({ url: await cluster.createDatabase() });
	try {
		const seeds = async function* (): AsyncIterable<FleetTargetInput> {
			for (let i = 0; i < FRONTIER; i++) yield { url: `https://host${i % 100}.test/p/${i}` };
		};
		const loadStart = performance.now();
		const opened = await openFleetRun(fleet, { jobName: "frontier", concurrencyLimit: 10, source: seeds });
		if (opened.outcome === "complete" || opened.outcome === "changed") throw new Error("the new run is not open");
		const loadMs = performance.now() - loadStart;
		const [lease] = await claimTargets(fleet, opened.worker, 1, 3_600_000);
		if (!lease) throw new Error("no page was claimed");
		let next = 0;
		// The crawl's side as the frontier reads it: each page settles with 10 links no page found before.
		const crawl = {
			take: async () => Array.from({ length: LINKS }, () => ({ url: `https://found.test/l/${next++}` })),
		} as unknown as FleetCrawl;
		const frontier = new FleetFrontier({
			fleet,
			run: opened.run,
			maxPages: FRONTIER * 10,
			plans: [],
			log: pino({ level: "silent" }),
		});
		frontier.use(crawl, null);
		const times: number[] = [];
		for (let i = 0; i < PAGES; i++) {
			const start = performance.now();
			await frontier.addLinks(lease);
			times.push(performance.now() - start);
		}
		// The first tenth warms the plans and the caches up.
		const measured = times.slice(Math.floor(PAGES / 10)).sort((a, b) => a - b);
		const at = (q: number) => measured[Math.min(measured.length - 1, Math.floor(q * measured.length))]!.toFixed(2);
		const [size] = await fleet.query<{ n: number }>("SELECT count(*)::int AS n FROM targets WHERE depth >= 0");
		process.stdout.write(
			`frontier ${FRONTIER.toLocaleString("en")} pages (loaded in ${(loadMs / 1000).toFixed(1)} s), ${LINKS} new links a page, ${measured.length} pages measured\n` +
				`a page's links added: median ${at(0.5)} ms, 10th–90th percentile ${at(0.1)}–${at(0.9)} ms (the frontier ends at ${size?.n.toLocaleString("en")})\n`,
		);
	} finally {
		await fleet.close();
	}
} finally {
	await cluster.stop();
}
