import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ScraperClient } from "../../api/index.js";
import { errorMessage, jsonlLines, parseJsonLine, type ScrapeParams, stripUrlCredentials } from "../../common/index.js";
import {
	checkTargetUrl,
	createListedTargetKey,
	createTargetKey,
	createTargetKeySet,
	type DiscoverySpec,
	identityOptionsJson,
	type Job,
	type Target,
} from "../../job/index.js";
import { openAppendFile, type RunSummary } from "../../output/index.js";

/** `discovery.jsonl` in the run folder: each map/search source's answer, so a resume never pays for it again. */
export const DISCOVERY_FILE = "discovery.jsonl";

interface SavedAnswer {
	/** Index among the job's map/search sources. */
	i: number;
	kind: DiscoverySpec["kind"];
	urls: string[];
	credits_used: number;
	error?: string;
}

export interface DiscoveredTargets {
	/** The URLs found, as targets (the source's options over `defaults`), first occurrence only. */
	readonly targets: Target[];
	/** Credits the discovery calls cost (every session of the run). */
	readonly credits: number;
	/** Of those, the credits of the calls this session made (the others' answers were read back). */
	readonly sessionCredits: number;
	/** For summary.json: per source, what it found and cost (or why it failed). */
	readonly report: NonNullable<RunSummary["discovery"]>;
}

function readSaved(path: string): Map<number, SavedAnswer> {
	const saved = new Map<number, SavedAnswer>();
	// A torn last line is not read: that source is asked again.
	for (const { text } of jsonlLines(path)) {
		const answer = parseJsonLine(text) as SavedAnswer | null | undefined;
		if (typeof answer === "object" && answer !== null && !answer.error) saved.set(answer.i, answer);
	}
	return saved;
}

/** What a run folder's `map:` and `search:` calls cost, every session included (`merge` counts them: no record holds them). */
export function journalledDiscoveryCredits(runDir: string): number {
	const path = join(runDir, DISCOVERY_FILE);
	if (!existsSync(path)) return 0;
	let credits = 0;
	// Read as hostile: a figure that is not a count adds nothing.
	for (const { credits_used: used } of readSaved(path).values())
		credits += Number.isFinite(used) && used > 0 ? used : 0;
	return credits;
}

/**
 * Ask the service's map and search endpoints for the job's `map:` / `search:` sources (once per run:
 * answers are kept in `discovery.jsonl`). A failed call is reported and its source left out; the run goes on.
 */
export async function discoverTargets(
	job: Job,
	client: ScraperClient,
	runDir: string,
	signal: AbortSignal,
): Promise<DiscoveredTargets | null> {
	const specs = job.discovery ?? [];
	if (specs.length === 0) return null;
	const path = join(runDir, DISCOVERY_FILE);
	const saved = readSaved(path);
	const file = openAppendFile(path);
	const targets: Target[] = [];
	const seen = new Set<string>();
	const report: DiscoveredTargets["report"] = [];
	let credits = 0;
	let sessionCredits = 0;
	try {
		for (const [index, spec] of specs.entries()) {
			let answer = saved.get(index);
			if (!answer) {
				try {
					const found = await client.discover(spec.kind, spec.request, signal);
					// Credentials in an answer's URLs are never journalled (docs/behaviour.md, "Keys never written").
					// Held to a listed URL's rules: an answer's URL with whitespace or of 2 MB is no page to pay for.
					const urls = found.urls.filter((url) => checkTargetUrl(url) === undefined).map(stripUrlCredentials);
					answer = { i: index, kind: spec.kind, urls, credits_used: found.creditsUsed ?? 0 };
					sessionCredits += answer.credits_used;
				} catch (error) {
					answer = { i: index, kind: spec.kind, urls: [], credits_used: 0, error: errorMessage(error) };
				}
				file.appendLine(JSON.stringify(answer));
			}
			credits += answer.credits_used;
			report.push({
				kind: spec.kind,
				urls: answer.urls.length,
				credits_used: answer.credits_used,
				...(answer.error ? { error: answer.error } : {}),
			});
			const base: Omit<ScrapeParams, "url"> = { ...job.defaults, ...spec.options };
			const optionsJson = identityOptionsJson(base);
			for (const url of answer.urls) {
				// The page's identity, as a listed URL's (a run of an older version keeps the ids it gave them).
				const id = (job.literalTargetIds ? createTargetKey : createListedTargetKey)(url, optionsJson).id;
				if (seen.has(id)) continue;
				seen.add(id);
				targets.push({ id, url, params: { ...base, url }, origin: spec.origin });
			}
		}
	} finally {
		file.close();
	}
	return { targets, credits, sessionCredits, report };
}

/**
 * The job's own targets, then the discovered ones that are not among them (same URL and options:
 * one fetch, one record) and that are `own` (a shard's: every shard asks the same calls, each fetches
 * its part of what they found).
 */
export async function* withDiscovered(
	batches: AsyncIterable<Target[]>,
	discovered: DiscoveredTargets | null,
	own: (url: string) => boolean = () => true,
): AsyncIterable<Target[]> {
	if (!discovered) {
		yield* batches;
		return;
	}
	const listed = createTargetKeySet();
	for await (const batch of batches) {
		for (const target of batch) {
			const key = createTargetKey(target.id, "");
			listed.add(key.high, key.low);
		}
		yield batch;
	}
	const rest: Target[] = [];
	for (const target of discovered.targets) {
		const key = createTargetKey(target.id, "");
		if (listed.has(key.high, key.low) || !own(target.url)) continue;
		rest.push(target);
		if (rest.length >= 256) yield rest.splice(0);
	}
	if (rest.length > 0) yield rest;
}

/** Discovery's part of summary.json: per source what it found, and its credits in the run's total. */
export function addDiscoverySummary(summary: RunSummary, discovered: DiscoveredTargets | null): void {
	if (!discovered) return;
	summary.discovery = discovered.report;
	summary.credits.used += discovered.credits;
}
