import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { hasUnreadLinks } from "../../crawl/index.js";
import { SHARD_SUFFIX_PATTERN, type ShardSpec, shardSuffix } from "../../job/index.js";
import { RUN_FILES, type RunSummary } from "../../output/index.js";

/** One run folder of a job, as `listRuns` finds it. */
export interface RunInfo {
	readonly runId: string;
	readonly dir: string;
	/** False when the summary says so, when there is none (the process died before writing it), or when a crawl shard was handed links after it ended. */
	readonly complete: boolean;
	readonly summary: RunSummary | null;
}

/** Runs of one job in `<outRoot>/<job>/`, newest first (run ids sort by time). */
export function listRuns(jobDir: string): RunInfo[] {
	if (!existsSync(jobDir)) return [];
	return readdirSync(jobDir, { withFileTypes: true })
		.filter((entry) => entry.isDirectory() && existsSync(join(jobDir, entry.name, RUN_FILES.meta)))
		.map((entry) => {
			const dir = join(jobDir, entry.name);
			let summary: RunSummary | null = null;
			try {
				summary = JSON.parse(readFileSync(join(dir, RUN_FILES.summary), "utf8")) as RunSummary;
			} catch {
				summary = null;
			}
			return { runId: entry.name, dir, complete: isRunComplete(dir, summary), summary };
		})
		.sort((a, b) => (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0));
}

/**
 * The runs of one layout of a job, newest first: a shard's own (`-shard-I-of-N`), or without `shard` the
 * unsharded ones. What `--resume` of that shard (or unsharded run) picks from: the other shards' folders
 * are not its own, however new.
 */
export function listLayoutRuns(jobDir: string, shard: ShardSpec | undefined): RunInfo[] {
	const suffix = shard ? shardSuffix(shard) : null;
	return listRuns(jobDir).filter((info) =>
		suffix ? info.runId.endsWith(suffix) : !SHARD_SUFFIX_PATTERN.test(info.runId),
	);
}

/**
 * Whether the run of a folder is complete: its summary says so and, for a crawl shard, no links were
 * handed to it after it ended (by a shard that started late, or was resumed): its `--resume` reads them.
 */
export function isRunComplete(dir: string, summary: RunSummary | null): boolean {
	if (summary?.complete !== true) return false;
	const shard = SHARD_SUFFIX_PATTERN.exec(basename(dir));
	if (!summary.crawl || !shard) return true;
	return !hasUnreadLinks(dirname(dir), { index: Number(shard[1]), count: Number(shard[2]) }, basename(dir));
}
