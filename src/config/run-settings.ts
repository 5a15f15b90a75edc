/**
 * Settings of a run that are neither keys nor addresses, read from the environment once (here, and
 * only here): the code below takes them as options (docs/reference/environment.md).
 */
export interface RunSettings {
	/**
	 * How the job lock is taken and other runs' locks are judged. `leaseMs`: `SCRAPEJOB_LOCK_LEASE_MS`, how
	 * old a holder's heartbeat on another host must be before the lock is taken over (a number above 0);
	 * `host`: `SCRAPEJOB_HOSTNAME`, the host name written into the lock. Undefined: the lock's defaults
	 * (30 s, the machine's name).
	 */
	readonly lockLease: { readonly leaseMs: number | undefined; readonly host: string | undefined };
	/**
	 * `SCRAPEJOB_LOCK_LEASE_MS` as the lease of a fleet worker's claims: a whole number of ms, at least
	 * 1000. Undefined: the fleet's default.
	 */
	readonly fleetLeaseMs: number | undefined;
	/** `SCRAPEJOB_CRAWL_KEYS_IN_MEMORY`: a crawl's URL keys held in memory before older ones spill (a whole number above 0). */
	readonly crawlKeysInMemory: number | undefined;
}

/** Read the run's settings from `env`; a value not of its shape is ignored (the default applies). */
export function resolveRunSettings(env: NodeJS.ProcessEnv): RunSettings {
	const lease = Number(env.SCRAPEJOB_LOCK_LEASE_MS);
	const crawlKeys = Number(env.SCRAPEJOB_CRAWL_KEYS_IN_MEMORY);
	return {
		lockLease: {
			leaseMs: Number.isFinite(lease) && lease > 0 ? lease : undefined,
			host: env.SCRAPEJOB_HOSTNAME || undefined,
		},
		fleetLeaseMs: Number.isInteger(lease) && lease >= 1000 ? lease : undefined,
		crawlKeysInMemory: Number.isInteger(crawlKeys) && crawlKeys > 0 ? crawlKeys : undefined,
	};
}
