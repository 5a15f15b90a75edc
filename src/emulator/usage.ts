/**
 * `GET /public/usage` (docs/service.md, "Account endpoints"). Figures are made up but reproducible:
 * the same seed, product and period always give the same numbers; bucket labels follow the clock.
 */
import type { AccountData, ProxyProductCode } from "./account-data.js";
import { createRandom, deriveSeed, type Random } from "./random.js";

export const USAGE_PRODUCTS = ["rp", "rpc", "dcp", "mp", "sdc"] as const;
export type UsageProduct = (typeof USAGE_PRODUCTS)[number];
export const USAGE_PERIODS = ["24h", "3d", "7d"] as const;
export type UsagePeriod = (typeof USAGE_PERIODS)[number];

const PRODUCT_NAMES: Readonly<Record<UsageProduct, string>> = {
	rp: "Premium Residential",
	rpc: "Core Residential",
	dcp: "Datacenter Proxies",
	mp: "Mobile Proxies",
	sdc: "Shared Datacenter",
};

const PERIODS: Readonly<Record<UsagePeriod, { buckets: number; hourly: boolean; duration: string }>> = {
	"24h": { buckets: 24, hourly: true, duration: "24 hours" },
	"3d": { buckets: 3, hourly: false, duration: "3 days" },
	"7d": { buckets: 7, hourly: false, duration: "7 days" },
};

/** Hours covered by `data.requests` (docs/service.md, "Account endpoints": the last 12 hours, hourly). */
const REQUEST_STATS_HOURS = 12;

export type KeyKind = "personal" | "team";

export interface UsageAnswer {
	readonly status: number;
	readonly body: Record<string, unknown>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** "YYYY-MM-DD HH:MM" in UTC. */
export function bucketLabel(ms: number): string {
	const iso = new Date(ms).toISOString();
	return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}

function round3(value: number): number {
	return Math.round(value * 1000) / 1000;
}

export function buildUsage(
	query: URLSearchParams,
	options: { seed: number; account: AccountData; keyKind: KeyKind; nowMs: number },
): UsageAnswer {
	const period = (query.get("period") || "3d") as UsagePeriod;
	if (!USAGE_PERIODS.includes(period)) {
		return { status: 400, body: { error: `Invalid period: use one of ${USAGE_PERIODS.join(", ")}`, success: false } };
	}
	const product = (query.get("product") ?? "") as UsageProduct;
	if (!USAGE_PRODUCTS.includes(product)) {
		return {
			status: 400,
			body: { error: `Invalid or missing product: use one of ${USAGE_PRODUCTS.join(", ")}`, success: false },
		};
	}
	const shape = PERIODS[period];
	const random = createRandom(deriveSeed(options.seed, `usage:${product}:${period}`));
	const stepMs = shape.hourly ? HOUR_MS : DAY_MS;
	const lastBucketMs = Math.floor(options.nowMs / stepMs) * stepMs;
	// Hourly buckets of up to ~40 MB, daily of up to ~900 MB; Core Residential also bills "extra" traffic.
	const scale = shape.hourly ? 40 : 900;
	const stats: Record<string, { default: number; extra: number; total: number }> = {};
	let totalMb = 0;
	for (let i = shape.buckets - 1; i >= 0; i--) {
		const base = round3(random() * scale);
		const extra = product === "rpc" ? round3(random() * scale * 0.2) : 0;
		const total = round3(base + extra);
		stats[bucketLabel(lastBucketMs - i * stepMs)] = { default: base, extra, total };
		totalMb += total;
	}
	totalMb = round3(totalMb);
	const backing: ProxyProductCode = product === "sdc" ? "dcp" : product;
	return {
		status: 200,
		body: {
			success: true,
			data: {
				bandwidth: {
					products: [{ name: PRODUCT_NAMES[product], code: product, totalBandwidth: totalMb, stats }],
				},
				requests: requestStats(random, options.nowMs),
			},
			meta: {
				period,
				product,
				duration: shape.duration,
				granularity: shape.hourly ? "hour" : "day",
				ownership_scope: options.keyKind,
				auth_type: options.keyKind === "team" ? "team_key" : "personal_key",
				proxy_username:
					options.keyKind === "team" ? options.account.teamUsername : options.account.products[backing].username,
				bandwidth_unit: "MB",
				total_bandwidth_mb: totalMb,
				total_bandwidth_gb: totalMb / 1000,
				total_bandwidth_tb: totalMb / 1_000_000,
			},
		},
	};
}

/** `data.requests`: the spec leaves its layout open; the emulator answers hourly `{total, successful, failed}`. */
function requestStats(random: Random, nowMs: number) {
	const lastHourMs = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
	const stats: Record<string, { total: number; successful: number; failed: number }> = {};
	for (let i = REQUEST_STATS_HOURS - 1; i >= 0; i--) {
		const total = Math.floor(random() * 5000);
		const failed = Math.floor(total * random() * 0.05);
		stats[bucketLabel(lastHourMs - i * HOUR_MS)] = { total, successful: total - failed, failed };
	}
	return { period: "12h", granularity: "hour", stats };
}
