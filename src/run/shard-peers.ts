import { join } from "node:path";
import type { ShardSpec } from "../job/index.js";
import { liveLockHolder } from "./run-lock.js";

/** The other shards of this run's layout, as their locks in the job folder say (`.lock-shard-J-of-N`). */
export interface ShardPeers {
	/** Shards (1-based) of the layout whose lock is held now, this one included; refreshed every `intervalMs`. */
	live(): readonly number[];
	/** Read the locks again now. */
	refresh(): readonly number[];
	close(): void;
}

export interface ShardPeersOptions {
	/** How often the locks are read again, ms. @default 250 */
	readonly intervalMs?: number;
}

/**
 * Watch which shards of a layout are running: a shard runs while its lock is held by a live process
 * (or, on another host, while its lease is renewed). Reads a few small files every `intervalMs`.
 */
export function watchShardPeers(jobDir: string, shard: ShardSpec, options: ShardPeersOptions = {}): ShardPeers {
	let live: readonly number[] = [shard.index];
	const refresh = () => {
		const found: number[] = [];
		for (let index = 1; index <= shard.count; index += 1) {
			if (index === shard.index || liveLockHolder(join(jobDir, `.lock-shard-${index}-of-${shard.count}`)))
				found.push(index);
		}
		live = found;
		return live;
	};
	refresh();
	const timer = setInterval(refresh, options.intervalMs ?? 250);
	timer.unref();
	return { live: () => live, refresh, close: () => clearInterval(timer) };
}
