/**
 * Browser fingerprint profiles (docs/service.md, "Account endpoints"; from the service's own client): `GET /public/profiles`
 * lists them, `POST /public/order-profile?os=…&browserVersion=…` orders one. The first
 * `FREE_PROFILES` on an account are free; each one after them deducts `PROFILE_COST_MB` of proxy data
 * balance, from the first of rp, rpc, mp, dcp that holds that much (400 when none does).
 */
import type { AccountData, ProxyProductCode } from "./account-data.js";
import type { Params, SavedItems } from "./saved-items.js";
import { newId } from "./saved-items.js";

export const FREE_PROFILES = 3;
/** 1.5 GB, in the MB the balances are kept in (1 GB = 1,000 MB). */
export const PROFILE_COST_MB = 1500;
/** The fingerprint operating systems, spelled as the browser service's `os` parameter spells them (docs/service.md, "The remote browser"). */
export const PROFILE_OSES = ["windows", "apple", "unix"] as const;
const PAYING_PRODUCTS: readonly ProxyProductCode[] = ["rp", "rpc", "mp", "dcp"];

export interface ProfileAnswer {
	readonly status: number;
	readonly body: Params;
}

function fail(error: string): ProfileAnswer {
	return { status: 400, body: { error, success: false } };
}

export function listProfiles(saved: SavedItems): ProfileAnswer {
	return { status: 200, body: { success: true, profiles: saved.profiles.values() } };
}

export function orderProfile(
	query: URLSearchParams,
	saved: SavedItems,
	account: AccountData,
	nowMs: number,
): ProfileAnswer {
	const os = query.get("os");
	const version = query.get("browserVersion");
	if (!os) return fail(`Missing os: one of ${PROFILE_OSES.join(", ")}`);
	if (!PROFILE_OSES.includes(os as (typeof PROFILE_OSES)[number])) {
		return fail(`Invalid os ${JSON.stringify(os)}: use one of ${PROFILE_OSES.join(", ")}`);
	}
	if (!version) return fail("Missing browserVersion: a Chrome major version such as 120");
	if (!/^\d{2,3}$/.test(version))
		return fail(`Invalid browserVersion ${JSON.stringify(version)}: a Chrome major version such as 120`);
	let charged: { product: ProxyProductCode; mb: number } | null = null;
	if (saved.profiles.size >= FREE_PROFILES) {
		const product = PAYING_PRODUCTS.find((code) => account.products[code].balance_mb >= PROFILE_COST_MB);
		if (!product) {
			return fail(
				`Insufficient balance: a profile past the first ${FREE_PROFILES} costs ${PROFILE_COST_MB} MB of proxy data`,
			);
		}
		const current = account.products[product];
		account.products[product] = {
			...current,
			balance_mb: Math.round((current.balance_mb - PROFILE_COST_MB) * 1e6) / 1e6,
		};
		charged = { product, mb: PROFILE_COST_MB };
	}
	const profile = saved.profiles.add({
		id: newId("prof_"),
		os,
		browser: "chrome",
		browser_version: version,
		created_at: new Date(nowMs).toISOString(),
	});
	return {
		status: 200,
		body: {
			success: true,
			profile,
			charged_mb: charged?.mb ?? 0,
			charged_product: charged?.product ?? null,
			message: charged
				? `Profile ordered; ${charged.mb} MB were deducted from the ${charged.product} balance`
				: `Profile ordered; free (${saved.profiles.size} of ${FREE_PROFILES} free profiles used)`,
		},
	};
}
