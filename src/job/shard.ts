import { hash } from "node:crypto";
import { normalizeUrl } from "../common/index.js";

/** What `run --shard` splits on (job key `shard_by`): a URL's host, or the URL itself. */
export const SHARD_BY = ["host", "url"] as const;
export type ShardBy = (typeof SHARD_BY)[number];

/** This process's part of a sharded job: shard `index` (1-based) of `count`. */
export interface ShardSpec {
	readonly index: number;
	readonly count: number;
}

/**
 * The shard (1-based) a URL belongs to among `count`, read from its identity (`urlIdentity`), so every
 * spelling of a page lands in one shard. By `host` (the default): a stable hash of its host (port
 * included, a default port left out), so every URL of one host lands in one shard — one host's
 * politeness stays with one worker. By `url`: a hash of the whole identity (fragment left out, query
 * sorted), so one big host is spread over every shard. Stable across processes, machines and
 * versions: the first 32 bits of SHA-256, modulo `count`.
 */
export function shardOf(url: string, count: number, by: ShardBy = "host"): number {
	if (count <= 1) return 1;
	const identity = normalizeUrl(url);
	let key = identity ?? url;
	if (identity !== null && by === "host") key = new URL(identity).host;
	return (Number.parseInt(hash("sha256", key, "hex").slice(0, 8), 16) % count) + 1;
}

/** Whether `url` is this job's shard's to fetch (always, unsharded). */
export function isOwnShard(job: { readonly shard?: ShardSpec; readonly shardBy?: ShardBy }, url: string): boolean {
	return !job.shard || shardOf(url, job.shard.count, job.shardBy) === job.shard.index;
}

/**
 * `I/N` (1-based) or `auto/N` (the index from the scheduler's environment, 0-based there), or an error
 * text naming the option as the caller spells it (`option`).
 */
export function parseShard(text: string, env: NodeJS.ProcessEnv, option = "--shard"): ShardSpec | string {
	const match = /^(auto|\d+)\/(\d+)$/.exec(text.trim());
	if (!match) return `${option} must be I/N (1-based, e.g. 2/8) or auto/N, got ${JSON.stringify(text)}`;
	const count = Number(match[2]);
	if (!Number.isSafeInteger(count) || count < 1 || count > 10_000)
		return `${option}: N must be 1 to 10000, got ${match[2]}`;
	if (match[1] !== "auto") {
		const index = Number(match[1]);
		if (index < 1 || index > count) return `${option}: I must be 1 to ${count}, got ${match[1]}`;
		return { index, count };
	}
	// Kubernetes Indexed Jobs set JOB_COMPLETION_INDEX, AWS Batch array jobs AWS_BATCH_JOB_ARRAY_INDEX: both 0-based.
	for (const name of ["JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"]) {
		const value = env[name];
		if (value === undefined || value === "") continue;
		const zeroBased = Number(value);
		if (!Number.isInteger(zeroBased) || zeroBased < 0 || zeroBased >= count) {
			return `${option} auto/${count}: ${name}=${JSON.stringify(value)} is not an index from 0 to ${count - 1}`;
		}
		return { index: zeroBased + 1, count };
	}
	return `${option} auto/${count}: neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor AWS_BATCH_JOB_ARRAY_INDEX is set`;
}

/** The run folder suffix of a shard: `-shard-I-of-N`. */
export function shardSuffix(shard: ShardSpec): string {
	return `-shard-${shard.index}-of-${shard.count}`;
}

export const SHARD_SUFFIX_PATTERN = /-shard-(\d+)-of-(\d+)$/;
