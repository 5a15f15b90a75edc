import { type Sleep, writeFileAtomic } from "../../common/index.js";
import { readRobotsBody, type SitemapFetch } from "../../crawl/index.js";
import { claimRobots, type Fleet, storeRobots } from "../../fleet/index.js";

/** How often a worker looks whether the robots.txt another worker is fetching is in. */
const ROBOTS_POLL_MS = 250;

export interface SharedRobotsDeps {
	readonly fleet: Fleet;
	readonly runId: number;
	readonly workerId: string;
	/** How long a worker's claim to fetch a robots.txt lasts: past it, another worker fetches it. */
	readonly leaseMs: number;
	readonly sleep: Sleep;
}

/**
 * robots.txt once per fleet run: the first worker to ask for an origin's fetches it (through `fetch`,
 * paid once) and stores it in the database; the others wait for it and read it from there.
 */
export function sharedRobots(deps: SharedRobotsDeps, fetch: SitemapFetch, isStopping: () => boolean): SitemapFetch {
	const { fleet, runId, workerId, leaseMs, sleep } = deps;
	return async (url, seed, path) => {
		const parsed = new URL(url);
		// Keyed without the seed's credentials: the table is read by every worker.
		const key = `${parsed.origin}${parsed.pathname}`;
		for (;;) {
			const claim = await claimRobots(fleet, runId, key, workerId, leaseMs);
			if (claim === "mine") {
				const fetched = await fetch(url, seed, path);
				// Not fetched (a stop): the claim lapses and another worker fetches it.
				if (fetched.kind === "stopped") return fetched;
				// A site's 4xx is kept as an empty robots.txt (it allows everything, as that does): later fleet runs read it too.
				const body = fetched.kind === "stored" ? readRobotsBody(path).body : fetched.unavailable ? "" : null;
				await storeRobots(fleet, runId, key, body);
				return fetched;
			}
			if (claim.state === "done") {
				if (claim.body === null) return { kind: "missing", credits: 0 };
				writeFileAtomic(path, claim.body);
				return { kind: "stored", credits: 0 };
			}
			if (isStopping()) return { kind: "stopped" };
			await sleep(ROBOTS_POLL_MS);
		}
	};
}
