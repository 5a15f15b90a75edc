import type { ShardBy, ShardSpec } from "./shard.js";

/**
 * How a sharded job's targets spread over hosts, counted while its targets are surveyed (every
 * shard's, before the split): enough to warn that splitting by host cannot balance the shards.
 */
export interface HostTally {
	add(url: string): void;
	/** Targets seen, distinct hosts (at most `maxHosts` tracked) and the host with the most targets. */
	readonly targets: number;
	readonly hosts: number;
	readonly top: { readonly host: string; readonly targets: number } | null;
}

/** Hosts counted one by one at most: past it, new hosts only raise the count of hosts (memory stays bounded). */
const MAX_TRACKED_HOSTS = 100_000;

export function createHostTally(maxHosts = MAX_TRACKED_HOSTS): HostTally {
	const perHost = new Map<string, number>();
	let targets = 0;
	let untracked = 0;
	let top: { host: string; targets: number } | null = null;
	return {
		add(url) {
			targets += 1;
			let host: string;
			try {
				host = new URL(url).host;
			} catch {
				return;
			}
			const known = perHost.get(host);
			if (known === undefined && perHost.size >= maxHosts) {
				untracked += 1;
				return;
			}
			const count = (known ?? 0) + 1;
			perHost.set(host, count);
			if (!top || count > top.targets) top = { host, targets: count };
		},
		get targets() {
			return targets;
		},
		get hosts() {
			return perHost.size + untracked;
		},
		get top() {
			return top;
		},
	};
}

/**
 * Why `--shard I/N` split by host cannot balance this job, or null: one host holds more than 1/N of
 * the targets (its shard does more than its part, and alone), or there are fewer hosts than shards
 * (some shards get nothing). `shard_by: url` spreads them.
 */
/**
 * More shards than the key has slots, or null: at most `concurrency` shards fetch at once, the others
 * wait their turn (shared-key-concurrency.ts), so the shards past it only wait.
 */
export function shardTurnsWarning(shard: ShardSpec | undefined, concurrency: number | null): string | null {
	if (!shard || shard.count <= 1 || concurrency === null || concurrency >= shard.count) return null;
	return `--shard ${shard.index}/${shard.count}: the run's concurrency is ${concurrency} (the key's, or --concurrency when lower), below the ${shard.count} shards: at most ${concurrency} of them fetch at once and the others wait their turn (share_wait in their run.log): shards beyond ${concurrency} do not make the job faster`;
}

export function shardBalanceWarning(
	tally: Pick<HostTally, "targets" | "hosts" | "top"> | undefined,
	shard: ShardSpec | undefined,
	by: ShardBy | undefined,
): string | null {
	if (!tally || !shard || shard.count <= 1 || by === "url" || tally.targets === 0) return null;
	const hint = "split by URL instead with `shard_by: url` in the job file";
	if (tally.hosts < shard.count) {
		return `--shard ${shard.index}/${shard.count}: the targets are on ${tally.hosts === 1 ? "1 host" : `${tally.hosts} hosts`}, fewer than the ${shard.count} shards, and shards split by host: ${shard.count - tally.hosts} or more shards get nothing; ${hint}`;
	}
	const top = tally.top;
	if (top && top.targets * shard.count > tally.targets) {
		const percent = Math.round((top.targets / tally.targets) * 100);
		return `--shard ${shard.index}/${shard.count}: host ${top.host} holds ${top.targets} of ${tally.targets} targets (${percent}%, more than 1/${shard.count}), and shards split by host: its shard does more than its part; ${hint}`;
	}
	return null;
}
