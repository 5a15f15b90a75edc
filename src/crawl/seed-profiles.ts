import { hash } from "node:crypto";
import { createTargetKey, identityOptionsJson, type Target } from "../job/index.js";
import type { FrontierEntry } from "./frontier-file.js";
import { withSeedCredentials } from "./normalize-url.js";

/** Seed options every page found from that seed inherits: one per distinct option set, held in memory. */
interface Profile {
	readonly optionsJson: string;
	readonly seed: Target;
}

/**
 * The crawl's seeds by their options: a frontier entry names its seed's profile (a short hash of the
 * options), and a discovered page is fetched with them (its id is derived from its URL and them).
 */
export class SeedProfiles {
	private readonly profiles = new Map<string, Profile>();

	/** The profile of `seed`'s options (registered the first time they are seen). */
	keyOf(seed: Target): string {
		const identity = seed.browserSession ? { ...seed.params, browser_session: seed.browserSession } : seed.params;
		const optionsJson = identityOptionsJson(identity);
		const key = hash("sha256", optionsJson, "hex").slice(0, 12);
		if (!this.profiles.has(key)) this.profiles.set(key, { optionsJson, seed });
		return key;
	}

	has(key: string): boolean {
		return this.profiles.has(key);
	}

	/** The first seed with the options of `key`, or undefined when no seed of the job has them now. */
	seedOf(key: string): Target | undefined {
		return this.profiles.get(key)?.seed;
	}

	/** The profile whose options give `url` the target id `id`, if any (a failed page's seed). */
	keyFor(url: string, id: string): string | undefined {
		for (const [key, profile] of this.profiles) if (createTargetKey(url, profile.optionsJson).id === id) return key;
		return undefined;
	}

	/** A frontier entry as a target, with its seed's options; null when its seed is no longer in the job. */
	targetOf(entry: FrontierEntry): Target | null {
		const profile = this.profiles.get(entry.k);
		if (!profile) return null;
		const { seed } = profile;
		const target: Target = {
			id: createTargetKey(entry.u, profile.optionsJson).id,
			url: entry.u,
			// The journal never holds credentials: the fetch gets the seed's back on the seed's own origin.
			params: { ...seed.params, url: withSeedCredentials(entry.u, seed.url) },
			origin: seed.origin,
			crawl: { depth: entry.d, parent: entry.p, profile: entry.k },
		};
		if (seed.browserSession) target.browserSession = seed.browserSession;
		if (seed.extract !== undefined) target.extract = seed.extract;
		return target;
	}
}
