import type { ExtractPlan } from "../../extract/index.js";
import type { FleetLease, FleetTargetInput } from "../../fleet/index.js";
import type { Job, Target } from "../../job/index.js";

/** What the frontier keeps of a target beside its URL: enough for any worker to rebuild it. */
interface StoredTarget {
	readonly params: Target["params"];
	readonly origin: Target["origin"];
	/** Index of its extract plan among the job's (`plansOf`); absent without one. */
	readonly plan?: number;
	readonly carried?: Target["carried"];
	readonly crawl?: { readonly profile: string };
	/** `browser_session:`: settings and steps (plain data), run in the remote browser instead of the scraper. */
	readonly browserSession?: Target["browserSession"];
	/** A crawl's task of reading this seed origin's sitemaps (fleet-sitemaps.ts), not a page. */
	readonly sitemaps?: string;
}

/**
 * The job's extract plans in one order every worker agrees on (they load the same job file): a target
 * names its plan by index, since a plan holds compiled rules that do not travel as JSON.
 */
export function plansOf(job: Job): ExtractPlan[] {
	const plans: ExtractPlan[] = [];
	const add = (plan: ExtractPlan | null | undefined) => {
		if (plan && !plans.includes(plan)) plans.push(plan);
	};
	for (const target of job.targets) add(target.extract);
	for (const source of job.sources) add(source.extract);
	return plans;
}

/** A target as the fleet's frontier stores it: its id and URL key, its host, and its own fields. */
export function toFleetInput(target: Target, plans: readonly ExtractPlan[], urlKey: string): FleetTargetInput {
	const plan = target.extract ? plans.indexOf(target.extract) : -1;
	const stored: StoredTarget = {
		params: target.params,
		origin: target.origin,
		...(plan >= 0 ? { plan } : {}),
		...(target.carried ? { carried: target.carried } : {}),
		...(target.crawl ? { crawl: { profile: target.crawl.profile } } : {}),
		...(target.browserSession ? { browserSession: target.browserSession } : {}),
	};
	return {
		url: target.url,
		urlKey,
		targetId: target.id,
		...(target.crawl ? { depth: target.crawl.depth, parent: target.crawl.parent } : {}),
		input: stored,
	};
}

/** The target a claim stands for, rebuilt from what the frontier stored. */
export function fromFleetLease(lease: FleetLease, plans: readonly ExtractPlan[]): Target {
	const stored = (lease.input ?? {}) as Partial<StoredTarget>;
	const target: Target = {
		id: lease.targetId,
		url: lease.url,
		params: stored.params ?? { url: lease.url },
		origin: stored.origin ?? { file: "fleet", line: 0, col: 0 },
	};
	const plan = stored.plan === undefined ? undefined : plans[stored.plan];
	if (plan) target.extract = plan;
	if (stored.carried) target.carried = stored.carried;
	if (stored.browserSession) target.browserSession = stored.browserSession;
	if (stored.crawl) target.crawl = { depth: lease.depth, parent: lease.parent, profile: stored.crawl.profile };
	return target;
}

/**
 * `sitemaps: true`: reading a seed origin's sitemaps as a task of the frontier, at depth -1 — claimed,
 * leased and taken over as a page is, and, while unsettled, holding back every page below the seeds (a
 * page a sitemap lists is a seed's depth whatever the timing). Its key is no URL's: it never meets a page.
 */
export function toSitemapTask(seed: Target, plans: readonly ExtractPlan[], origin: string): FleetTargetInput {
	const page = toFleetInput(seed, plans, origin);
	const key = `sitemaps ${origin}`;
	return {
		...page,
		urlKey: key,
		targetId: key,
		depth: -1,
		input: { ...(page.input as StoredTarget), sitemaps: origin },
	};
}

/** The seed origin whose sitemaps a claim is the task of reading; null for a page. */
export function sitemapOriginOf(lease: FleetLease): string | null {
	const stored = (lease.input ?? {}) as Partial<StoredTarget>;
	return typeof stored.sitemaps === "string" ? stored.sitemaps : null;
}
