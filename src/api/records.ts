import { z } from "zod";
import { readPlaces } from "./targeting-places.js";

export type { TargetingPlace } from "./targeting-places.js";

/*
 * Zod schemas of every response record of the service (docs/service.md). Objects are loose: the service may add
 * fields, and a tolerant reader keeps working; what the spec promises is required.
 */

const ports = z.looseObject({ http: z.number().int(), socks5: z.number().int() });

/** A proxy product with credentials (rp, rpc, mp, dcp). */
export const proxyProductSchema = z.looseObject({
	username: z.string(),
	password: z.string(),
	balance_mb: z.number(),
	endpoint: z.string(),
	ports,
});
export type ProxyProduct = z.infer<typeof proxyProductSchema>;

/** Static residential: packages of IPs, no shared username or endpoint (docs/service.md, "Account endpoints"). */
export const staticResidentialSchema = z.looseObject({
	packages: z.array(z.unknown()),
	ports: ports.optional(),
});
export type StaticResidential = z.infer<typeof staticResidentialSchema>;

/** GET /public (docs/service.md, "Account endpoints"). */
export const proxyDataSchema = z.looseObject({
	success: z.boolean(),
	products: z.looseObject({ static_residential: staticResidentialSchema.optional() }).catchall(z.unknown()),
});
export type ProxyData = z.infer<typeof proxyDataSchema>;

/** GET /public/scraper (docs/service.md, "Account endpoints"). */
export const scraperAccessSchema = z.looseObject({
	success: z.boolean(),
	has_access: z.boolean(),
	credits: z.number(),
	concurrency: z.number().int().nonnegative(),
	api_key: z.string().nullable(),
	endpoint_url: z.string(),
});
export type ScraperAccess = z.infer<typeof scraperAccessSchema>;

/** GET /public/browser (docs/service.md, "Account endpoints"). */
export const browserAccessSchema = z.looseObject({
	success: z.boolean(),
	has_access: z.boolean(),
	credits: z.number(),
	concurrency: z.number().int().nonnegative(),
	api_key: z.string().nullable(),
	max_session_length_seconds: z.number().int().nonnegative(),
	endpoint_url: z.string(),
});
export type BrowserAccess = z.infer<typeof browserAccessSchema>;

/** City and region lists: layout not fixed by the spec; both known layouts are read as flat places. */
const placeList = z.looseObject({ data: z.unknown() }).transform((list) => ({ ...list, data: readPlaces(list.data) }));

/** One product's targeting catalogue (docs/service.md, "Targeting catalogue"). */
export const targetingCatalogueSchema = z.looseObject({
	countries: z.record(z.string(), z.string()),
	cities: placeList.optional(),
	regions: placeList.optional(),
	// The docs and the service's own MCP fixture disagree on ISP items (docs/service.md, "Targeting catalogue"); accept both.
	isp: z
		.record(
			z.string(),
			z.looseObject({
				value: z.string().optional(),
				countryCode: z.string().optional(),
				label: z.string().optional(),
				countries: z.array(z.string()).optional(),
			}),
		)
		.optional(),
	continents: z
		.record(z.string(), z.looseObject({ name: z.string(), countries: z.record(z.string(), z.string()) }))
		.optional(),
});
export type TargetingCatalogue = z.infer<typeof targetingCatalogueSchema>;

/** GET /public/settings (docs/service.md, "Account endpoints"). */
export const targetingSettingsSchema = z.looseObject({
	success: z.boolean(),
	data: z.record(z.string(), targetingCatalogueSchema),
});
export type TargetingSettings = z.infer<typeof targetingSettingsSchema>;

const usageBucket = z.looseObject({ default: z.number().optional(), extra: z.number().optional(), total: z.number() });

/** GET /public/usage (docs/service.md, "Account endpoints"). */
export const usageSchema = z.looseObject({
	success: z.boolean(),
	data: z.looseObject({
		bandwidth: z.looseObject({
			products: z.array(
				z.looseObject({
					name: z.string(),
					code: z.string(),
					totalBandwidth: z.number(),
					stats: z.record(z.string(), usageBucket),
				}),
			),
		}),
		requests: z.unknown().optional(),
	}),
	meta: z.looseObject({
		period: z.string(),
		product: z.string().optional(),
		duration: z.string().optional(),
		granularity: z.string().optional(),
		ownership_scope: z.string().optional(),
		auth_type: z.string().optional(),
		proxy_username: z.string().optional(),
		bandwidth_unit: z.string().optional(),
		total_bandwidth_mb: z.number().optional(),
		total_bandwidth_gb: z.number().optional(),
		total_bandwidth_tb: z.number().optional(),
	}),
});
export type Usage = z.infer<typeof usageSchema>;

/** A task record: an async submission or a fetch that outlived the timeout (docs/service.md, "Tasks"). */
export const taskRecordSchema = z.looseObject({
	success: z.boolean().optional(),
	task_id: z.string().min(1),
	status: z.string().optional(),
	message: z.string().optional(),
	check_url: z.string().optional(),
	timestamp: z.string().optional(),
});
export type TaskRecord = z.infer<typeof taskRecordSchema>;

/** `{success, message}` of rotate_session (docs/service.md, "Account endpoints"). */
export const rotateSessionSchema = z.looseObject({ success: z.boolean(), message: z.string().optional() });
export type RotateSessionResult = z.infer<typeof rotateSessionSchema>;

/** Describe the first few zod issues as "field `a.b`: problem", for an error message that names the field. */
export function describeIssues(error: z.ZodError): string {
	return error.issues
		.slice(0, 3)
		.map((issue) => {
			const path = issue.path.length ? issue.path.join(".") : "(body)";
			return `field \`${path}\`: ${issue.message}`;
		})
		.join("; ");
}
