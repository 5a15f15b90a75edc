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
	/**
	 * Where the run's metrics are pushed over OTLP/HTTP: `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` as given,
	 * else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/metrics` (the OpenTelemetry rule). Null: no push.
	 */
	readonly otlpMetricsUrl: string | null;
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
		otlpMetricsUrl: otlpMetricsUrl(env),
	};
}

function otlpMetricsUrl(env: NodeJS.ProcessEnv): string | null {
	const metrics = env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?.trim();
	if (metrics) return metrics;
	const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
	if (!base) return null;
	return `${base.replace(/\/+$/, "")}/v1/metrics`;
}

/**
 * The fleet's database and schema from `--fleet` and the environment alone, for a command whose service
 * is not configured (the sandbox's is its own; the fleet's database is the user's all the same).
 */
export function resolveFleetConfig(
	flag: string | undefined,
	env: NodeJS.ProcessEnv,
): { readonly fleetUrl: string | undefined; readonly fleetSchema: string | undefined } {
	return {
		fleetUrl: flag?.trim() || env.SCRAPEJOB_FLEET_URL?.trim() || undefined,
		fleetSchema: env.SCRAPEJOB_FLEET_SCHEMA?.trim() || undefined,
	};
}

/** The keys set in the environment (`SCRAPEJOB_ACCOUNT_KEY`, `SCRAPEJOB_SCRAPER_KEY`), to scrub them where no service is used. */
export function environmentKeys(env: NodeJS.ProcessEnv): string[] {
	// Trimmed as the service's keys are (resolve-config.ts): the key itself is what a log could hold.
	return [env.SCRAPEJOB_ACCOUNT_KEY?.trim(), env.SCRAPEJOB_SCRAPER_KEY?.trim()].filter((key): key is string =>
		Boolean(key),
	);
}

/** `SCRAPEJOB_DEBUG` set: an internal error's stack is printed too. */
export function debugStacks(env: NodeJS.ProcessEnv): boolean {
	return Boolean(env.SCRAPEJOB_DEBUG);
}

/** Whether `SCRAPEJOB_DEMO_SITE` is set (by `--sandbox`, or by hand): a job's `${SCRAPEJOB_DEMO_SITE}` then reads it. */
export function demoSiteIsSet(env: NodeJS.ProcessEnv): boolean {
	return env.SCRAPEJOB_DEMO_SITE !== undefined;
}
